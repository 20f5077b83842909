package pool

import "time"

// Creates are paced by one mechanism, a window on the instances begun and not yet finished,
// decided from what a pass observes (pure; no gate, no timers). A scale-up is a pipeline: an
// Exporter create, the Jumpstarter core's credential, then the instance reconciler's writes
// (credential label, config Secret, Pod). Every request waits its turn at one API server, so
// with hundreds of creates in flight the first instance waited seconds behind the last one's
// create. So a set begins at most initialWindow instances before any is finished, and the
// window grows by windowGrowth for each instance finished: it triples with each round trip,
// a slow start as TCP's, and the first instances are served before the bulk is begun.
//
// An instance is finished once its config Secret or a Pod exists (it needs nothing more
// from the pipeline to be started; WaitForFirstConsumer starts Pods on demand). One not
// finished within beginTimeout of its creation counts as finished: a Jumpstarter core that
// is slow or down slows creates, it does not stop them.

// initialWindow is how many instances a set begins before the first one is finished.
const initialWindow = 4

// windowGrowth is how much the window grows for each instance finished.
const windowGrowth = 2

// beginTimeout is how long a created instance holds a place in the window while it is not
// finished.
const beginTimeout = 2 * time.Second

// CreateRoom is how many more instances the window lets a set begin now, given its
// instances and the creates the cache does not show yet (expected, all in flight). limit
// (createParallelism) bounds the instances begun and not yet finished however large the
// window: past it, more creates only queue in front of the writes that finish the instances
// already begun (unbounded, at 0 -> 500 each instance took 3-5x longer from create to
// available, and the first instance was later; bench-scale 2026-12-04, docs/benchmarks.md). wake is
// when an unfinished instance's place lapses (0 for none): the room grows then even without
// an event.
func CreateRoom(instances []*Instance, expected int32, now time.Time, limit int32) (room int32, wake time.Duration) {
	var finished, begun int32
	for _, in := range instances {
		if in.Deleting() || in.Retiring() {
			continue
		}
		if in.ConfigSecret != nil || in.HasPod() {
			finished++
			continue
		}
		// creationTimestamp has whole seconds, rounded down: count from the next one.
		left := in.Exporter.CreationTimestamp.Add(time.Second + beginTimeout).Sub(now)
		if left <= 0 {
			finished++
			continue
		}
		begun++
		if wake == 0 || left < wake {
			wake = left
		}
	}
	window := min(initialWindow+windowGrowth*finished, max(1, limit))
	return max(0, window-begun-expected), wake
}
