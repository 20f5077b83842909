package exporterset

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// startedPodTimeout bounds how long a Pod this process created is believed to exist while
// the cache does not show it. Its name is the Exporter's, so a second create is harmless
// (AlreadyExists); the timeout only bounds how late a Pod deleted before the cache ever saw
// it is started again.
const startedPodTimeout = 30 * time.Second

// startedPod remembers an instance Pod this process created that the cache may not show
// yet. The next pass of a set often starts before a new Pod's watch event has arrived (Pods
// are large, and a scale-up writes hundreds): without this it created every such Pod again,
// only to be told AlreadyExists, up to a third more Pod creates in a scale-up. An entry ends
// when the cache shows a Pod of the instance, after startedPodTimeout, or with the instance.
type startedPod struct{ at time.Time }

// podStarted records that the Pod of the instance uid of set exists as of now.
func (m *memory) podStarted(set string, uid types.UID, now time.Time) {
	m.started.putInstance(set, uid, startedPod{at: now})
}

// podPending reports a Pod created for uid that the cache does not show yet. When it does,
// it also schedules p's instance to be looked at again when the belief lapses: a Pod of the
// same name still terminating answers the create with AlreadyExists, and once it is gone no
// event would start the instance again (a soak walk left an InPlaceReuse instance without a
// Pod that way).
func (m *memory) podPending(p *pass, uid types.UID) bool {
	set := keyOf(p.set)
	e, ok := m.started.forInstance(set, uid)
	if !ok {
		return false
	}
	left := startedPodTimeout - p.now.Sub(e.at)
	if left <= 0 {
		m.started.dropInstance(set, uid)
		return false
	}
	p.requeueIn(left + time.Millisecond)
	return true
}

// podSeen drops the entry of uid: the cache shows its Pod.
func (m *memory) podSeen(set string, uid types.UID) { m.started.dropInstance(set, uid) }
