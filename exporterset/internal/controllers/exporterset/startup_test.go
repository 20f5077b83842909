package exporterset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/internal/state"
	"github.com/exporterset/exporterset/exporterset/pool"
)

func TestBookingLeadOverride(t *testing.T) {
	rec := &countingRecorder{}
	r := &Reconciler{memory: newMemory(state.NewMemory()), Config: Config{Recorder: rec}}
	p := &pass{set: &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}, now: fixture.Epoch.Add(10 * time.Second),
		class: &vtv1alpha1.VirtualTargetClass{}}
	obs := &observation{}
	if got := r.bookingLead(p, obs); got != DefaultBookingLeadTime {
		t.Fatalf("lead before any start-up %s, want the default %s", got, DefaultBookingLeadTime)
	}
	obs.Instances = []*pool.Instance{fixture.BootedAt("a", 0, 3*time.Second)}
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
