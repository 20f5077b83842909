package exporterset

import "sort"

// retirePriority ranks an unleased instance for scale-down; lower goes first. A leased
// instance is never a candidate at all: the planner filters it out before ranking.
type retirePriority int

const (
	// failedFirst: a Pod failed or completed; the instance serves nobody and may never again.
	failedFirst retirePriority = iota
	// notReadySecond: pending, offline or unregistered; it would take time to serve anyway.
	notReadySecond
	// idleLast: ready and waiting for a lease; the newest goes first, keeping the instances
	// that have proven stable longest.
	idleLast
)

func priorityOf(in *Instance) retirePriority {
	switch {
	case in.Failed() || in.Terminal():
		return failedFirst
	case !in.Ready():
		return notReadySecond
	default:
		return idleLast
	}
}

// RetireOrder sorts candidates in the order they should be retired: failed or terminal
// first, then not ready, then idle with the newest first. It sorts in place and is stable
// for equal ranks (by name), so plans are deterministic.
func RetireOrder(candidates []*Instance) {
	sort.SliceStable(candidates, func(a, b int) bool {
		x, y := candidates[a], candidates[b]
		px, py := priorityOf(x), priorityOf(y)
		if px != py {
			return px < py
		}
		tx, ty := x.Exporter.CreationTimestamp, y.Exporter.CreationTimestamp
		if !tx.Equal(&ty) {
			return ty.Before(&tx) // newest first
		}
		return x.Name() > y.Name()
	})
}
