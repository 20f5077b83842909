package exporterset_test

import (
	"sync"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
)

// jumpsim500msStart gives new Pods half a second before they run: a roll then has a window
// in which the new instances are not yet available.
func jumpsim500msStart() []jumpsim.Option {
	return []jumpsim.Option{jumpsim.WithPodStartDelay(500 * time.Millisecond)}
}

// healthyPool starts a world, the fake class, the controller and a set "pool" (floor 0), and
// waits until buffer instances are available.
func healthyPool(t *testing.T, maxR, buffer int32, simOpts ...jumpsim.Option) (*world, *vtv1alpha1.ExporterSet) {
	t.Helper()
	w := newWorld(t, simOpts...)
	w.class("fake")
	w.controller(env.Config)
	set := w.set("pool", 0, maxR, buffer)
	w.waitHealthy("pool", buffer, 30*time.Second)
	return w, set
}

func reasonOf(st vtv1alpha1.ExporterSetStatus, typ string) vtv1alpha1.ConditionReason {
	if c := apimeta.FindStatusCondition(st.Conditions, typ); c != nil {
		return vtv1alpha1.ConditionReason(c.Reason)
	}
	return ""
}

// availabilitySampler reads a set's availableReplicas every 100 ms until stopped and keeps
// the lowest value seen.
type availabilitySampler struct {
	mu      sync.Mutex
	lowest  int32
	samples int
	stop    chan struct{}
	done    chan struct{}
}

func (w *world) sampleAvailability(set string) *availabilitySampler {
	s := &availabilitySampler{lowest: 1 << 30, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
			var got vtv1alpha1.ExporterSet
			if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: set}, &got); err != nil {
				continue
			}
			s.mu.Lock()
			s.lowest = min(s.lowest, got.Status.AvailableReplicas)
			s.samples++
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *availabilitySampler) finish() (lowest int32, samples int) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lowest, s.samples
}

// rolled reports whether every instance of the set carries the set's current spec hash.
func (w *world) rolled(set string, hashBefore string) bool {
	for _, e := range w.exporters(set) {
		if e.Labels[pool.LabelSpecHash] == hashBefore {
			return false
		}
	}
	return true
}

func (w *world) specHash(set string) string {
	w.t.Helper()
	ex := w.exporters(set)
	if len(ex) == 0 {
		w.t.Fatal("no instances")
	}
	return ex[0].Labels[pool.LabelSpecHash]
}

// A template change rolls the pool by surge: sampled every 100 ms, availableReplicas never
// drops below the warm buffer it had before the change.
func TestRollKeepsWarmPool(t *testing.T) {
	w, set := healthyPool(t, 6, 3, jumpsim500msStart()...)
	lowest, samples := w.rollSampled(set, 3)
	if lowest < 3 {
		t.Errorf("availableReplicas dropped to %d during the roll (buffer 3; %d samples)", lowest, samples)
	}
	t.Logf("lowest availableReplicas during the roll: %d (%d samples)", lowest, samples)
}

// rollSampled changes set's template, waits for the roll to finish with buffer instances
// available, and returns the lowest availableReplicas sampled every 100 ms meanwhile.
func (w *world) rollSampled(set *vtv1alpha1.ExporterSet, buffer int32) (lowest int32, samples int) {
	w.t.Helper()
	before := w.specHash(set.Name)
	sampler := w.sampleAvailability(set.Name)
	w.edit(set, func() { set.Spec.Template.Metadata.Annotations = map[string]string{"rev": "2"} })
	w.eventually(60*time.Second, "the roll to finish", func() string {
		st := w.getSet(set.Name).Status
		if w.rolled(set.Name, before) && st.AvailableReplicas >= buffer {
			return ""
		}
		return summary(st)
	})
	return sampler.finish()
}

// A lease that arrives mid-roll is served at once by the pool that is still warm.
func TestLeaseDuringRollServedAtOnce(t *testing.T) {
	w, set := healthyPool(t, 6, 2, jumpsim500msStart()...)
	w.edit(set, func() { set.Spec.Template.Metadata.Annotations = map[string]string{"rev": "2"} })
	w.waitStatus("pool", 10*time.Second, "the roll under way", func(s vtv1alpha1.ExporterSetStatus) bool {
		return reasonOf(s, vtv1alpha1.ConditionProgressing) == vtv1alpha1.ReasonRollingInstances
	})
	start := time.Now()
	l := w.lease("mid-roll", "pool")
	w.waitAssigned(l)
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("a lease mid-roll waited %s", waited)
	}
}

// A roll toward a spec that fails stops and says so; the old pool keeps serving.
func TestRollTowardFailingSpecKeepsOldPool(t *testing.T) {
	w, set := healthyPool(t, 4, 2, fastFailures()...)
	w.sim.SetImagePullError(badRuntime, "")
	w.edit(set, func() {
		set.Spec.Images = &vtv1alpha1.Images{Runtime: &vtv1alpha1.ImageSpec{Image: badRuntime}}
	})
	st := w.waitStatus("pool", 30*time.Second, "the failure reported", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return r == vtv1alpha1.ReasonImagePullFailed
	})
	sampler := w.sampleAvailability("pool")
	time.Sleep(3 * time.Second)
	if lowest, _ := sampler.finish(); lowest < 2 {
		t.Errorf("the old pool was eaten by a failing roll: availableReplicas fell to %d", lowest)
	}
	if a := availableCond(w.getSet("pool").Status); a == nil || a.Status != "True" {
		t.Errorf("the old pool serves, yet Available is %v (%s)", a, summary(st))
	}
	w.sim.ClearImagePullError(badRuntime)
	w.eventually(30*time.Second, "the roll to finish once the image exists", func() string {
		st := w.getSet("pool").Status
		if st.Replicas == 2 && st.AvailableReplicas == 2 && st.FailingReplicas == 0 && reasonOf(st, vtv1alpha1.ConditionProgressing) != vtv1alpha1.ReasonRollingInstances {
			return ""
		}
		return summary(st)
	})
}
