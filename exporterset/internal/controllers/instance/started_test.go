package instance

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/internal/state"
)

// A Pod believed created holds the instance's start only until the belief lapses, and the
// instance is looked at again then: no event may ever come (its create met a terminating Pod
// of the same name).
func TestPodPendingSchedulesTheLapse(t *testing.T) {
	m := New(Config{Memory: state.NewMemory()})
	set := &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
	passAt := func(d time.Duration) *build {
		return &build{set: set, key: "ns/s", now: fixture.Epoch.Add(d), requeue: &state.Soonest{}}
	}
	m.podStarted("ns/s", "u", fixture.Epoch)

	p := passAt(10 * time.Second)
	if !m.podPending(p, "u") {
		t.Fatal("not pending 10 s after the create")
	}
	if got := p.requeue.Get(); got < startedPodTimeout-10*time.Second || got > startedPodTimeout-9*time.Second {
		t.Fatalf("looked at again in %s, want when the belief lapses (%s)", got, startedPodTimeout-10*time.Second)
	}
	p = passAt(startedPodTimeout + time.Second)
	if m.podPending(p, "u") || p.requeue.Get() != 0 {
		t.Fatalf("still pending after %s (requeue %s)", startedPodTimeout, p.requeue.Get())
	}
	if p := passAt(0); m.podPending(p, "other") || p.requeue.Get() != 0 {
		t.Fatal("an instance without a create is pending")
	}
}
