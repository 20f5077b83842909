package exporterset

import (
	"testing"
	"time"

	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/internal/state"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// The pass sees what it created and retired before the cache does, without changing what
// was observed.
func TestExpectationsLeaveTheObservationAlone(t *testing.T) {
	mem := newMemory(state.NewMemory())
	e := expectations{mem.expectations}
	now := fixture.Epoch
	e.expectCreated("ns/s", now, "new")
	e.expectRetiring("ns/s", now, "b")
	a, b := fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)
	obs := &observation{Instances: []*pool.Instance{a, b}}

	pending, seen := e.reconcile("ns/s", now.Add(time.Second), obs)
	if pending != 1 {
		t.Errorf("pending creates %d, want 1 (new is not in the cache yet)", pending)
	}
	if obs.Instances[1] != b || b.Retiring() || !b.Enabled() {
		t.Fatal("the observed instance was changed")
	}
	if got := seen.Instances[1]; got == b || !got.Retiring() || got.Enabled() || got.Name() != "b" {
		t.Errorf("b is not seen as retired: retiring %v, enabled %v", got.Retiring(), got.Enabled())
	}
	if seen.Instances[0] != a {
		t.Error("an instance with no expectation was replaced")
	}

	// Once the cache shows both, nothing is pending and the observation is passed through.
	shown := fixture.Instance("b", fixture.Ready, fixture.Retiring)
	obs = &observation{Instances: []*pool.Instance{a, shown, fixture.Instance("new")}}
	if pending, seen = e.reconcile("ns/s", now.Add(2*time.Second), obs); pending != 0 || seen != obs {
		t.Errorf("after the cache caught up: pending %d, observation replaced %v", pending, seen != obs)
	}
	if _, ok := mem.expectations.ForSet("ns/s"); ok {
		t.Error("fulfilled expectations are still held")
	}
}
