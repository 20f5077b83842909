package exporterset

import (
	"context"
	"sort"
	"sync"
)

// Finish before you start. A scale-up is a pipeline: an Exporter create, then the Jumpstarter
// core's credential, then ours again (label the credential, config Secret, Pod), then the
// kubelet's and the core's writes. Every request waits its turn at one API server, so an
// instance whose chain is under way was held behind whatever else the reconciler had in
// flight: with 64 Exporter creates in flight the first instance of 500 became available after
// 5-7 s, though its own chain takes 0.3 s. So the writes that finish an instance already
// begun go first, and new instances are begun only beside them, a few at a time:
//
//   - finishing (the fast path, or a pass configuring an instance that has work left) never
//     waits here;
//   - Exporter creates run at most createParallelism at once while nothing is being
//     finished, and at most createsWhileFinishing at once while something is.
//
// The pipeline then carries as many instances as the API server can serve, and the first
// one is never stuck behind the last one's create.

// createsWhileFinishing is how many Exporter creates may be in flight while an instance is
// being finished. Enough to keep the pipeline fed (an instance is nine writes, one of them
// its create, so creates are a ninth of the work), few enough that a finishing write waits
// behind at most this many of ours.
const createsWhileFinishing = 2

// finishFirst is the gate between finishing and beginning instances; the zero value is
// ready to use.
type finishFirst struct {
	mu        sync.Mutex
	finishing int           // instances whose own writes are under way
	creating  int           // Exporter creates in flight
	changed   chan struct{} // closed (and replaced) when either count falls
}

// finish marks one instance's finishing writes as under way; call the returned func when
// they are done.
func (g *finishFirst) finish() (done func()) {
	g.mu.Lock()
	g.finishing++
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.finishing--
		g.wake()
		g.mu.Unlock()
	}
}

// create waits for a slot for one Exporter create: limit of them at most while nothing is
// being finished, createsWhileFinishing while something is. It returns ctx's error when ctx
// ends first; otherwise call release when the create is done.
func (g *finishFirst) create(ctx context.Context, limit int) (release func(), err error) {
	for {
		g.mu.Lock()
		allowed := limit
		if g.finishing > 0 {
			allowed = min(limit, createsWhileFinishing)
		}
		if g.creating < max(1, allowed) {
			g.creating++
			g.mu.Unlock()
			return func() {
				g.mu.Lock()
				g.creating--
				g.wake()
				g.mu.Unlock()
			}, nil
		}
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// wake tells the waiting creates to look again; g.mu is held.
func (g *finishFirst) wake() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// counts reports the instances being finished and the creates in flight (for tests).
func (g *finishFirst) counts() (finishing, creating int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.finishing, g.creating
}

// hasWorkLeft reports an instance with its own writes still to do: its credential is
// issued, and its config Secret, or the Pod it should get, does not exist yet.
func hasWorkLeft(in *Instance, start bool) bool {
	return in.Credentialed() && (in.ConfigSecret == nil || start && !in.HasPod())
}

// finishOrder is the order in which a pass takes up its live instances: those that can
// serve a lease soonest first. An instance with its config Secret and no Pod is one write
// from starting, one with a credential three; the rest have nothing to write now. Within
// each, the pool's order (oldest first). It matters when a pass has more instances with work
// than it configures at once, and when leases wait: they are served in this order.
func finishOrder(live []*Instance, start map[string]bool) []int {
	stage := func(in *Instance) int {
		switch {
		case !hasWorkLeft(in, start[in.Name()]):
			return 0
		case in.ConfigSecret != nil:
			return 2
		default:
			return 1
		}
	}
	order := make([]int, len(live))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return stage(live[order[a]]) > stage(live[order[b]]) })
	return order
}
