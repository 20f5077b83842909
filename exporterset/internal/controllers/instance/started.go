package instance

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
func (r *Reconciler) podStarted(set string, uid types.UID, now time.Time) {
	r.started.PutInstance(set, uid, startedPod{at: now})
}

// podPending reports a Pod created for uid that the cache does not show yet. When it does,
// it also schedules b's instance to be looked at again when the belief lapses: a Pod of the
// same name still terminating answers the create with AlreadyExists, and once it is gone no
// event would start the instance again (a soak walk left an InPlaceReuse instance without a
// Pod that way).
func (r *Reconciler) podPending(b *build, uid types.UID) bool {
	set := b.key
	e, ok := r.started.ForInstance(set, uid)
	if !ok {
		return false
	}
	left := startedPodTimeout - b.now.Sub(e.at)
	if left <= 0 {
		r.started.DropInstance(set, uid)
		return false
	}
	b.requeue.In(left + time.Millisecond)
	return true
}

// podSeen drops the entry of uid: the cache shows its Pod.
func (r *Reconciler) podSeen(set string, uid types.UID) { r.started.DropInstance(set, uid) }
