package exporterset_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
)

// Hardware first (hardware.go), black box on a real API server with the simulated core: two
// physical boards, connected from outside the cluster, serve the same Leases as a set with a
// warm buffer of 2. The boards carry the set's own selector labels too: they must still never
// be adopted or written.
func TestFreeBoardsFillTheWarmBuffer(t *testing.T) {
	w := newWorld(t)
	boards := []string{"board-a", "board-b"}
	for _, b := range boards {
		w.create(&jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: b,
			Labels: map[string]string{"board": "hw", "kind": "physical"}}})
		if err := w.sim.ConnectFromOutside(w.ctx, w.ns, b); err != nil {
			t.Fatal(err)
		}
	}
	w.eventually(20*time.Second, "both boards online", func() string {
		for _, b := range boards {
			if e := getExporter(t, w, b); e == nil || !apimeta.IsStatusConditionTrue(e.Status.Conditions, jumpstarterv1alpha1.ExporterConditionOnline) {
				return b + " not online"
			}
		}
		return ""
	})
	w.class("fake")
	w.controller(env.Config)
	w.set("hw", 0, 5, 2, func(s *vtv1alpha1.ExporterSet) {
		s.Annotations = map[string]string{exporterset.AnnotationHardwareSelector: "kind=physical"}
	})

	// Both boards free: the set is Available with no virtual Pod, its message naming them.
	st := w.waitStatus("hw", 30*time.Second, "both boards counted, Available", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(s.Conditions, vtv1alpha1.ConditionAvailable)
		return s.HardwareAvailableReplicas == 2 && c != nil && c.Status == metav1.ConditionTrue
	})
	if c := apimeta.FindStatusCondition(st.Conditions, vtv1alpha1.ConditionAvailable); !strings.Contains(c.Message, "2 free boards count toward the buffer of 2 (board-a, board-b)") {
		t.Errorf("Available message %q does not name the boards", c.Message)
	}
	w.noPodsFor("hw", 3*time.Second)

	// Both boards leased: the set grows to its whole buffer.
	var leases []*jumpstarterv1alpha1.Lease
	for i := range boards {
		l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hw-user-%d", i), Namespace: w.ns},
			Spec: jumpstarterv1alpha1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "test-client"}, Selector: metav1.LabelSelector{MatchLabels: map[string]string{"kind": "physical"}},
				Duration: &metav1.Duration{Duration: time.Hour}}}
		w.create(l)
		leases = append(leases, l)
	}
	for _, l := range leases {
		w.waitServed(l)
	}
	taken := time.Now()
	w.waitStatus("hw", 30*time.Second, "2 virtual instances available with both boards leased", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.HardwareAvailableReplicas == 0 && s.AvailableReplicas == 2
	})
	t.Logf("last board taken -> buffer restored with virtual instances: %v", time.Since(taken).Round(10*time.Millisecond))

	// Released: the boards are free again, and the surplus goes after the cooldown (1 s).
	for _, l := range leases {
		w.release(l)
	}
	w.eventually(31*time.Second, "no virtual Pod once the boards are free again", func() string {
		st := w.getSet("hw").Status
		if n := len(w.podsOf("hw")); n != 0 || st.HardwareAvailableReplicas != 2 {
			return fmt.Sprintf("%d pods, %d boards counted, %s", n, st.HardwareAvailableReplicas, summary(st))
		}
		return ""
	})

	// One board offline: one virtual instance for the rest of the buffer.
	if err := w.sim.DisconnectFromOutside(w.ctx, w.ns, "board-b"); err != nil {
		t.Fatal(err)
	}
	st = w.waitStatus("hw", 30*time.Second, "1 virtual instance beside 1 free board", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.HardwareAvailableReplicas == 1 && s.AvailableReplicas == 1
	})
	if c := apimeta.FindStatusCondition(st.Conditions, vtv1alpha1.ConditionAvailable); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "1 free board counts toward the buffer of 2 (board-a)") {
		t.Errorf("Available with one board: %s %q", c.Status, c.Message)
	}

	// A selector that does not parse blocks the set, naming the annotation; nothing goes.
	set := w.getSet("hw")
	w.edit(set, func() { set.Annotations[exporterset.AnnotationHardwareSelector] = "kind in (physical" })
	w.waitStatus("hw", 20*time.Second, "Degraded InvalidSelector naming the annotation", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(s.Conditions, vtv1alpha1.ConditionDegraded)
		return c != nil && c.Reason == string(vtv1alpha1.ReasonInvalidSelector) && strings.Contains(c.Message, exporterset.AnnotationHardwareSelector)
	})
	w.eventually(10*time.Second, "an InvalidSpec event naming the annotation", func() string {
		for _, n := range w.eventNotes("hw", "InvalidSpec") {
			if strings.Contains(n, exporterset.AnnotationHardwareSelector) {
				return ""
			}
		}
		return "none yet"
	})
	if n := len(w.exporters("hw")); n == 0 {
		t.Errorf("the blocked set lost its instances")
	}

	// The boards were never written by the controller: no field manager of ours, no owner,
	// no label or annotation of ours.
	for _, b := range boards {
		e := getExporter(t, w, b)
		if e == nil {
			t.Fatalf("board %s is gone", b)
		}
		for _, mf := range e.ManagedFields {
			if mf.Manager == "exporterset" || mf.Manager == "exporterset"+exporterset.InstanceManagerSuffix {
				t.Errorf("board %s written by %s (%s %s)", b, mf.Manager, mf.Operation, mf.Subresource)
			}
		}
		if len(e.OwnerReferences) != 0 || len(e.Annotations) != 0 || len(e.Labels) != 2 || !e.IsEnabled() {
			t.Errorf("board %s touched: owners %v, annotations %v, labels %v, enabled %v", b, e.OwnerReferences, e.Annotations, e.Labels, e.IsEnabled())
		}
	}
}

// noPodsFor fails when the set has a Pod at any poll during d.
func (w *world) noPodsFor(set string, d time.Duration) {
	w.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if pods := w.podsOf(set); len(pods) != 0 {
			w.t.Fatalf("set %s runs %d Pods (%s) while free boards hold its buffer", set, len(pods), pods[0].Name)
		}
	}
}
