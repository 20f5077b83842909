package exporterset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// bootedAt makes an instance whose Pod was created podAfter after the Exporter and which
// became Registered and Online onlineAfter after the Exporter.
func bootedAt(name string, podAfter, onlineAfter time.Duration) *pool.Instance {
	in := fixture.Instance(name)
	in.Pods = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("pod-" + name),
		CreationTimestamp: metav1.NewTime(fixture.Epoch.Add(podAfter))}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
	for _, typ := range []string{jumpstarterv1alpha1.ExporterConditionRegistered, jumpstarterv1alpha1.ExporterConditionOnline} {
		in.Exporter.Status.Conditions = append(in.Exporter.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue,
			Reason: "Sim", LastTransitionTime: metav1.NewTime(fixture.Epoch.Add(onlineAfter))})
	}
	return in
}

func TestBookingLeadOverride(t *testing.T) {
	rec := &countingRecorder{}
	r := &Reconciler{memory: newMemory(), recorder: rec}
	p := &pass{set: &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}, now: fixture.Epoch.Add(10 * time.Second),
		class: &vtv1alpha1.VirtualTargetClass{}}
	obs := &observation{}
	if got := r.bookingLead(p, obs); got != DefaultBookingLeadTime {
		t.Fatalf("lead before any start-up %s, want the default %s", got, DefaultBookingLeadTime)
	}
	obs.Instances = []*pool.Instance{bootedAt("a", 0, 3*time.Second)}
	if got := r.bookingLead(p, obs); got != 5*time.Second {
		t.Fatalf("learned lead %s, want 3 s + 2 s", got)
	}
	p.set.Annotations = map[string]string{AnnotationBookingLeadTime: "90s"}
	if got := r.bookingLead(p, obs); got != 90*time.Second {
		t.Fatalf("overridden lead %s", got)
	}
	p.set.Annotations[AnnotationBookingLeadTime] = "soon"
	if got := r.bookingLead(p, obs); got != 5*time.Second {
		t.Fatalf("an invalid override must fall back to the learned lead, got %s", got)
	}
	r.bookingLead(p, obs)
	if len(rec.notes) != 1 || !strings.Contains(rec.notes[0], `"soon"`) {
		t.Fatalf("warnings %q, want one quoting the bad value", rec.notes)
	}
}

type countingRecorder struct{ notes []string }

func (c *countingRecorder) Eventf(_, _ runtime.Object, _, _, _, note string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(note, args...))
}
