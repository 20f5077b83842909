package exporterset

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Finish before you start. A scale-up is a pipeline: an Exporter create, then the Jumpstarter
// core's credential, then ours again (label the credential, config Secret, Pod), then the
// kubelet's and the core's writes. Every request waits its turn at one API server, so an
// instance whose chain is under way was held behind whatever else was in flight: with 64
// Exporter creates in flight at a time the first instance of 500 became available after
// 5-7 s, though its own chain takes 0.3 s. So the reconciler serves the instances already
// begun before it begins new ones, with two bounds on Exporter creates:
//
//   - in flight: at most createParallelism creates at once while nothing is being finished,
//     and at most createsWhileFinishing while an instance's own writes are under way (the
//     fast path, or a pass configuring an instance that has writes left). Finishing itself
//     never waits here.
//   - begun: where the fast path takes instances up (windowed), at most window instances
//     created and not yet finished: back with their credential and taken up by the fast
//     path or a pass, which wrote what it could (label, config Secret, Pod). The window
//     opens at initialWindow and grows by windowGrowth for each instance finished (so it
//     triples with each round trip, a slow start as TCP's), up to windowLimit; it starts over
//     once the pipeline has been empty for beginTimeout. An instance not finished within
//     beginTimeout counts as finished: a Jumpstarter core that is slow or down slows
//     creates, it does not stop them.
//
// The pipeline then carries as many instances as the API server serves, and the first
// instance is never stuck behind the last one's create.

// createsWhileFinishing is how many Exporter creates may be in flight while an instance is
// being finished: an instance is nine writes, one of them its create, so a few keep the
// pipeline fed, and a finishing write waits behind at most this many of ours.
const createsWhileFinishing = 2

// initialWindow is how many instances a scale-up begins before the first one is finished.
const initialWindow = 4

// windowGrowth is how much the window grows for each instance finished: it triples with
// each round trip. (Growing by one, doubling, cost 0 -> 300 two to three seconds on a loaded
// machine, the window still small while credentials took a second to come.)
const windowGrowth = 2

// windowLimit bounds the window, in createParallelisms. It is no throttle: the window is
// there for the first instances of a scale-up, and when it stopped at createParallelism, a
// loaded API server (a second from create to credential) held a scale-up of 300 to 64
// instances a second in the pipeline.
const windowLimit = 8

// beginTimeout is how long a created instance holds a place in the window while it is not
// finished.
const beginTimeout = 2 * time.Second

// finishFirst is the gate between finishing and beginning instances; the zero value is
// ready to use.
type finishFirst struct {
	mu        sync.Mutex
	finishing int                  // instances whose own writes are under way
	creating  int                  // Exporter creates in flight
	begun     map[string]time.Time // namespace/name of instances created, not finished yet
	window    int                  // how many may be begun; 0 until the first create
	active    time.Time            // the last create, credential or finish
	changed   chan struct{}        // closed (and replaced) when a create may go ahead
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
		g.active = time.Now()
		g.wake()
		g.mu.Unlock()
	}
}

// finished records that the instance key (namespace/name) came back with its credential
// and was taken up (its own writes are done): its place in the window goes to a new one,
// and the window grows. (Counting it back at its credential instead let the window grow
// while the first instance still had its config Secret and Pod to write: 0 -> 300 first
// available 0.58 s against 0.56 s, with the bulk no faster.)
func (g *finishFirst) finished(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.begun[key]; ok {
		delete(g.begun, key)
		g.active = time.Now()
		g.grow(windowGrowth)
	}
}

// grow widens the window by n (g.mu held).
func (g *finishFirst) grow(n int) {
	g.window += n
	g.wake()
}

// create waits for a slot for one Exporter create (see above; windowed only where the fast
// path takes instances up). limit is createParallelism. It returns ctx's error when ctx ends
// first; otherwise call done with the instance's key once the create succeeded ("" when it
// did not).
func (g *finishFirst) create(ctx context.Context, limit int, windowed bool, now func() time.Time) (done func(key string), err error) {
	for {
		g.mu.Lock()
		wait := g.expire(now(), limit)
		allowed := limit
		if g.finishing > 0 {
			allowed = min(limit, createsWhileFinishing)
		}
		full := windowed && len(g.begun)+g.creating >= g.window // a create in flight is begun
		if g.creating < max(1, allowed) && !full {
			g.creating++
			g.mu.Unlock()
			return func(key string) {
				g.mu.Lock()
				defer g.mu.Unlock()
				g.creating--
				g.active = now()
				if windowed && key != "" {
					if g.begun == nil {
						g.begun = map[string]time.Time{}
					}
					g.begun[key] = g.active
				}
				g.wake()
			}, nil
		}
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		ch := g.changed
		g.mu.Unlock()
		var timer *time.Timer
		var timeout <-chan time.Time
		if full && wait > 0 {
			timer = time.NewTimer(wait)
			timeout = timer.C
		}
		select {
		case <-ch:
		case <-timeout:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// expire drops the begun instances older than beginTimeout (each counts as back), starts
// the window over when the pipeline has been empty for beginTimeout, and returns how long until the next one
// expires (0 for none). g.mu is held.
func (g *finishFirst) expire(now time.Time, limit int) (next time.Duration) {
	for key, at := range g.begun {
		left := at.Add(beginTimeout).Sub(now)
		if left <= 0 {
			delete(g.begun, key)
			g.grow(1)
			continue
		}
		if next == 0 || left < next {
			next = left
		}
	}
	if len(g.begun) == 0 && g.creating == 0 && g.finishing == 0 && now.Sub(g.active) > beginTimeout {
		g.window = initialWindow // quiet for a while: the next scale-up starts slow again
	}
	g.window = min(max(g.window, initialWindow), windowLimit*max(limit, 1))
	return next
}

// wake tells the waiting creates to look again; g.mu is held.
func (g *finishFirst) wake() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// counts reports the instances being finished, the creates in flight and the instances
// begun (for tests).
func (g *finishFirst) counts() (finishing, creating, begun int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.finishing, g.creating, len(g.begun)
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
