package state

import (
	"sync"
	"time"
)

// Soonest collects the soonest requeue the steps of one reconcile ask for; it is safe for
// concurrent use (a pass acts on instances concurrently).
type Soonest struct {
	mu sync.Mutex
	d  time.Duration
}

// In asks to be reconciled again within d (d <= 0 asks nothing).
func (s *Soonest) In(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d > 0 && (s.d == 0 || d < s.d) {
		s.d = d
	}
}

// Get is the soonest requeue asked for, 0 for none.
func (s *Soonest) Get() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d
}
