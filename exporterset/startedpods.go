package exporterset

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// startedPodTimeout bounds how long a Pod this process created is believed to exist while
// the cache does not show it. Its name is the Exporter's, so a second create is harmless
// (AlreadyExists); the timeout only bounds how late a Pod deleted before the cache ever saw
// it is started again.
const startedPodTimeout = 30 * time.Second

// startedPods remembers the instance Pods this process created that the cache may not show
// yet. The next pass of a set often starts before a new Pod's watch event has arrived (Pods
// are large, and a scale-up writes hundreds): without this it created every such Pod again,
// only to be told AlreadyExists, up to a third more Pod creates in a scale-up. An entry ends
// when the cache shows a Pod of the instance, or after startedPodTimeout.
type startedPods struct {
	mu   sync.Mutex
	at   map[types.UID]time.Time // Exporter UID -> when its Pod was created
	adds int
}

func newStartedPods() *startedPods { return &startedPods{at: map[types.UID]time.Time{}} }

// add records that the Pod of the Exporter uid exists as of now.
func (s *startedPods) add(uid types.UID, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[uid] = now
	// Entries of instances removed before their Pod was seen are swept now and then.
	if s.adds++; s.adds%1024 == 0 {
		for k, t := range s.at {
			if now.Sub(t) > startedPodTimeout {
				delete(s.at, k)
			}
		}
	}
}

// pending reports a Pod created for uid that the cache does not show yet.
func (s *startedPods) pending(uid types.UID, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[uid]
	if ok && now.Sub(t) > startedPodTimeout {
		delete(s.at, uid)
		return false
	}
	return ok
}

// seen drops the entry of uid: the cache shows its Pod.
func (s *startedPods) seen(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, uid)
}
