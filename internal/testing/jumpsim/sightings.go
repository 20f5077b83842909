package jumpsim

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// sightings remembers when the Simulator first saw an object, by UID. Delays are measured
// from then: creationTimestamp has second precision, too coarse for sub-second delays, and
// the clock of the apiserver need not be the Simulator's.
type sightings struct {
	mu sync.Mutex
	m  map[types.UID]time.Time
}

func newSightings() *sightings { return &sightings{m: map[types.UID]time.Time{}} }

// first returns when uid was first seen, recording now if it was not seen before.
func (s *sightings) first(uid types.UID) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.m[uid]
	if !ok {
		t = time.Now()
		s.m[uid] = t
	}
	return t
}

// forget drops uid once its delay no longer matters.
func (s *sightings) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, uid)
}
