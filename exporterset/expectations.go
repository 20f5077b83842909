package exporterset

import (
	"sync"
	"time"

	"github.com/exporterset/exporterset/exporterset/pool"
)

// expectationTimeout bounds how long an unobserved create or retirement is trusted; after it
// the cache is believed again (as the ReplicaSet controller does), so a lost watch event
// cannot stall a set forever.
const expectationTimeout = 5 * time.Minute

// expectations remembers, per set, the changes this process made that the cache may not show
// yet: Exporters created and Exporters disabled for retirement. A reconcile running on a stale
// cache counts them as done, so it neither creates an instance twice nor retires a second one.
// It is a view of the set's record in memory (memory.go), which forgets it with the set.
type expectations struct{ sets *memo[*setExpectations] }

// setExpectations is one set's expectations. Its own lock is for the goroutines of one pass;
// passes of the set never overlap.
type setExpectations struct {
	mu       sync.Mutex
	created  map[string]time.Time // Exporter name -> when created
	retiring map[string]time.Time // Exporter name -> when disabled
}

func newSetExpectations() *setExpectations {
	return &setExpectations{created: map[string]time.Time{}, retiring: map[string]time.Time{}}
}

// expectCreated records Exporters this reconcile created.
func (e expectations) expectCreated(key string, now time.Time, names ...string) {
	s := e.sets.setOrPut(key, newSetExpectations)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		s.created[n] = now
	}
}

// expectRetiring records Exporters this reconcile disabled for retirement.
func (e expectations) expectRetiring(key string, now time.Time, names ...string) {
	s := e.sets.setOrPut(key, newSetExpectations)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		s.retiring[n] = now
	}
}

// reconcile drops what obs shows (or what timed out) and applies the rest to it: it returns
// how many created Exporters the cache does not show yet, and marks instances this process
// disabled as retiring when the cache still shows them enabled.
func (e expectations) reconcile(key string, now time.Time, obs *observation) int32 {
	s, _ := e.sets.forSet(key)
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]*pool.Instance{}
	for _, in := range obs.Instances {
		seen[in.Name()] = in
	}
	for _, in := range obs.Strays {
		seen[in.Name()] = in
	}
	var pending int32
	for name, at := range s.created {
		if _, ok := seen[name]; ok || now.Sub(at) > expectationTimeout {
			delete(s.created, name)
			continue
		}
		pending++
	}
	for name, at := range s.retiring {
		in, ok := seen[name]
		if !ok || in.Retiring() || now.Sub(at) > expectationTimeout {
			delete(s.retiring, name)
			continue
		}
		// The cache lags our own patch: see the instance as we left it, on a copy (the
		// observed object is the cache's own).
		e := in.Exporter.DeepCopy()
		if e.Annotations == nil {
			e.Annotations = map[string]string{}
		}
		e.Annotations[pool.AnnotationRetiring] = at.UTC().Format(time.RFC3339)
		disabled := false
		e.Spec.Enabled = &disabled
		in.Exporter = e
	}
	if len(s.created) == 0 && len(s.retiring) == 0 {
		e.sets.dropSet(key) // nothing pending: the set's record holds nothing of this
	}
	return pending
}
