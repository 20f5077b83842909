package exporterset

import (
	"sync"
	"time"

	"github.com/exporterset/exporterset/exporterset/internal/state"
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
type expectations struct{ sets *state.Memo[*setExpectations] }

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
	s := e.sets.SetOrPut(key, newSetExpectations)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		s.created[n] = now
	}
}

// expectRetiring records Exporters this reconcile disabled for retirement.
func (e expectations) expectRetiring(key string, now time.Time, names ...string) {
	s := e.sets.SetOrPut(key, newSetExpectations)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		s.retiring[n] = now
	}
}

// reconcile drops what obs shows (or what timed out). It returns how many created Exporters
// the cache does not show yet, and obs as this process left it: an instance it disabled that
// the cache still shows enabled is seen retiring. obs itself is not changed (the observed
// objects are the cache's own, and an Instance is read-only after observation).
func (e expectations) reconcile(key string, now time.Time, obs *observation) (int32, *observation) {
	s, _ := e.sets.ForSet(key)
	if s == nil {
		return 0, obs
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
	asLeft := map[string]*pool.Instance{}
	for name, at := range s.retiring {
		in, ok := seen[name]
		if !ok || in.Retiring() || now.Sub(at) > expectationTimeout {
			delete(s.retiring, name)
			continue
		}
		asLeft[name] = retiringCopy(in, at)
	}
	if len(s.created) == 0 && len(s.retiring) == 0 {
		e.sets.DropSet(key) // nothing pending: the set's record holds nothing of this
	}
	return pending, obs.replacing(asLeft)
}

// retiringCopy is in as this process left it when it disabled in at: a new Instance with a
// copy of its Exporter, annotated retiring and disabled.
func retiringCopy(in *pool.Instance, at time.Time) *pool.Instance {
	e := in.Exporter.DeepCopy()
	if e.Annotations == nil {
		e.Annotations = map[string]string{}
	}
	e.Annotations[pool.AnnotationRetiring] = at.UTC().Format(time.RFC3339)
	e.Spec.Enabled = new(bool)
	out := *in
	out.Exporter = e
	return &out
}
