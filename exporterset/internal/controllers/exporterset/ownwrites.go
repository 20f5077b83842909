package exporterset

import (
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/state"
)

// ownWrites remembers each set as this reconciler last wrote its status, with the
// resourceVersion that write replaced. A status write whose pass read the replaced version
// from a lagging cache builds on the written one instead: otherwise it was bound to
// conflict (two in five status updates of a 300-instance scale-up did, each costing a pass
// more), and it could write back an instance sequence older than the one it replaced.
type ownWrites struct{ m *state.Memo[ownWrite] }

type ownWrite struct {
	replaced string                  // the resourceVersion the write replaced
	set      *vtv1alpha1.ExporterSet // the set as written, never modified
}

// wrote records that set (as the API server answered the status write) replaced version
// replaced.
func (o ownWrites) wrote(replaced string, set *vtv1alpha1.ExporterSet) {
	o.m.PutSet(keyOf(set), ownWrite{replaced: replaced, set: set.DeepCopy()})
}

// latest returns the fresher of cached and the set as last written: the written one only
// when the cache still holds exactly the version it replaced. Any other version means the
// cache has moved on (it holds our write or a later change), and the memory goes.
func (o ownWrites) latest(cached *vtv1alpha1.ExporterSet) *vtv1alpha1.ExporterSet {
	key := keyOf(cached)
	w, ok := o.m.ForSet(key)
	if !ok {
		return cached
	}
	if w.set.UID == cached.UID && w.replaced == cached.ResourceVersion {
		return w.set.DeepCopy()
	}
	o.m.DropSet(key)
	return cached
}
