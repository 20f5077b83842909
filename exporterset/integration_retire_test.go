package exporterset_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// retirements reads exporterset_retirements_total{namespace,exporterset,reason} from reg.
func retirements(t *testing.T, reg *prometheus.Registry, ns, set, reason string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "exporterset_retirements_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["exporterset"] == set && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func inPlaceReuse(annotations map[string]string) func(*vtv1alpha1.ExporterSet) {
	return func(s *vtv1alpha1.ExporterSet) {
		s.Spec.RecycleStrategy = vtv1alpha1.RecycleInPlaceReuse
		s.Annotations = annotations
	}
}

// max-use-count 2 under InPlaceReuse: each instance serves exactly 2 leases, is then retired
// (never while leased) and replaced. The count lives on the Exporter: a controller started
// afresh halfway goes on counting where the first one stopped.
func TestMaxUseCountRetiresAfterTheLastLease(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	reg := prometheus.NewRegistry()
	stop := w.controller(env.Config, exporterset.WithMetrics(reg))
	w.set("pool", 0, 4, 2, inPlaceReuse(map[string]string{exporterset.AnnotationMaxUseCount: "2"}))
	w.waitHealthy("pool", 2, 30*time.Second)

	served := map[string]int{}
	const leases = 8
	for k := range leases {
		if k == leases/2 {
			stop()
			reg = prometheus.NewRegistry()
			stop = w.controller(env.Config, exporterset.WithMetrics(reg))
		}
		l := w.lease(fmt.Sprintf("l%d", k), "pool")
		ex := w.waitAssigned(l)
		served[ex]++
		// The lease is counted on its Exporter while it is held.
		w.eventually(10*time.Second, "lease "+l.Name+" counted on "+ex, func() string {
			e := getExporter(t, w, ex)
			if e == nil {
				return "gone while leased"
			}
			if got := e.Annotations[pool.AnnotationUseCount]; got != strconv.Itoa(served[ex]) || e.Annotations[pool.AnnotationLastLease] != l.Name {
				return fmt.Sprintf("use-count %q last-lease %q, want %d and %s", got, e.Annotations[pool.AnnotationLastLease], served[ex], l.Name)
			}
			if !e.IsEnabled() {
				return "disabled while leased"
			}
			return ""
		})
		w.release(l)
		// Leases are taken one after another: once this one has ended, the pool settles
		// (an instance that served its last lease gone, the buffer whole) before the next.
		w.eventually(20*time.Second, "the pool to settle after "+l.Name, func() string {
			// An ended Lease is deleted soon after (jumpsim, as the Jumpstarter controller).
			if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(l), l); !apierrors.IsNotFound(err) && (err != nil || !l.Status.Ended) {
				return fmt.Sprintf("lease not ended (%v): %+v", err, l.Status)
			}
			for _, e := range w.exporters("pool") {
				if served[e.Name] >= 2 {
					return e.Name + " served its 2 leases and is still there"
				}
			}
			if st := w.getSet("pool").Status; st.AvailableReplicas < 2 {
				return summary(st)
			}
			return ""
		})
	}
	retired := 0
	for ex, n := range served {
		if n > 2 {
			t.Errorf("%s served %d leases, max-use-count 2", ex, n)
		}
		if getExporter(t, w, ex) == nil {
			retired++
			if n != 2 {
				t.Errorf("%s was retired after %d leases, want 2", ex, n)
			}
		}
	}
	if retired < 2 {
		t.Errorf("%d instances retired after 8 leases (%v): want at least 2", retired, served)
	}
	// The second controller's counter: the retirements it made, for max-use only.
	if got := retirements(t, reg, w.ns, "pool", "max-use"); got < 1 {
		t.Errorf("exporterset_retirements_total{reason=max-use} = %v after the restart, want ≥ 1", got)
	}
	if got := retirements(t, reg, w.ns, "pool", "scaled-down"); got != 0 {
		t.Errorf("exporterset_retirements_total{reason=scaled-down} = %v, want 0", got)
	}
}

// An unreadable policy annotation is reported on the set (a Warning event and Degraded's
// message) and its default applies: nothing is retired for it.
func TestUnreadableReusePolicyIsReported(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("pool", 0, 2, 1, inPlaceReuse(map[string]string{exporterset.AnnotationMaxIdleAge: "soon"}))
	w.waitStatus("pool", 30*time.Second, "the annotation reported", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(s.Conditions, vtv1alpha1.ConditionDegraded)
		return s.AvailableReplicas >= 1 && c != nil && strings.Contains(c.Message, exporterset.AnnotationMaxIdleAge) && strings.Contains(c.Message, `"soon"`)
	})
	w.eventually(10*time.Second, "an InvalidAnnotation event", func() string {
		if n := w.eventNotes("pool", "InvalidAnnotation"); len(n) == 0 {
			return "none"
		}
		return ""
	})
}
