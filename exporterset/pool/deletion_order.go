package pool

import "sort"

// retirePriority ranks an unleased instance for scale-down; lower goes first. A leased
// instance is never a candidate at all: the planner filters it out before ranking.
type retirePriority int

const (
	// failedFirst: a Pod failed or completed, or the instance has a known Problem; it
	// serves nobody and may never again.
	failedFirst retirePriority = iota
	// notReadySecond: pending, offline or unregistered; it would take time to serve anyway.
	notReadySecond
	// idleLast: ready and waiting for a lease; the newest goes first, keeping the instances
	// that have proven stable longest.
	idleLast
)

func priorityOf(in *Instance, problems Problems) retirePriority {
	switch {
	case in.Failed() || in.Terminal() || problems.Of(in) != nil:
		return failedFirst
	case !in.Ready():
		return notReadySecond
	default:
		return idleLast
	}
}

// retireOrder sorts candidates in the order they should be retired: failed or terminal
// first, then not ready, then idle with the newest first; equal ranks by name, descending,
// so plans are deterministic. It sorts in place.
func retireOrder(candidates []*Instance, problems Problems) {
	type key struct {
		prio    retirePriority
		created int64
		in      *Instance
	}
	keys := make([]key, len(candidates))
	for i, c := range candidates {
		keys[i] = key{priorityOf(c, problems), c.Exporter.CreationTimestamp.UnixNano(), c}
	}
	sort.Slice(keys, func(a, b int) bool {
		x, y := keys[a], keys[b]
		if x.prio != y.prio {
			return x.prio < y.prio
		}
		if x.created != y.created {
			return x.created > y.created // newest first
		}
		return x.in.Name() > y.in.Name()
	})
	for i := range keys {
		candidates[i] = keys[i].in
	}
}
