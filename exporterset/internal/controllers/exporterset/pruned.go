package exporterset

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/state"
)

// prunedStatus keeps the status fields the API server dropped from our last write. Upstream
// Jumpstarter's operator installs its own ExporterSet CRD, whose status schema lacks
// surplusSince and instanceSequence (README, "Replacing upstream's exporter-set
// controller"): the API server prunes them, and without this the scale-down cooldown would
// start again on every pass (no scale-down ever) and instance names would be computed from
// sequence 0. With our CRD nothing is pruned and this stays empty. It is a view of the set's
// record in memory (memory.go), which forgets it with the set.
type prunedStatus struct{ sets *state.Memo[prunedFields] }

type prunedFields struct {
	uid          types.UID
	surplusSince *metav1.Time
	sequence     int64
	prunes       bool // the stored status lacks fields of ours: compare without them
}

// noteWrite compares what was written (want) with what the API server stored (got, the
// Update's answer) and remembers what it dropped.
func (p prunedStatus) noteWrite(got *vtv1alpha1.ExporterSet, want vtv1alpha1.ExporterSetStatus) {
	key := keyOf(got)
	f := prunedFields{uid: got.UID}
	if want.SurplusSince != nil && got.Status.SurplusSince == nil {
		f.surplusSince = want.SurplusSince.DeepCopy()
	}
	if want.InstanceSequence > got.Status.InstanceSequence {
		f.sequence = want.InstanceSequence
	}
	f.prunes = want.ObservedGeneration != 0 && got.Status.ObservedGeneration == 0 || f.surplusSince != nil || f.sequence != 0
	if !f.prunes {
		p.sets.DropSet(key)
		return
	}
	p.sets.PutSet(key, f)
}

// restore fills into set's status what the API server dropped from our last write of it.
func (p prunedStatus) restore(set *vtv1alpha1.ExporterSet) {
	f, ok := p.sets.ForSet(keyOf(set))
	if !ok || f.uid != set.UID {
		return
	}
	if set.Status.SurplusSince == nil && f.surplusSince != nil {
		set.Status.SurplusSince = f.surplusSince.DeepCopy()
	}
	set.Status.InstanceSequence = max(set.Status.InstanceSequence, f.sequence)
}

// unchangedAsStored reports whether writing b over a would store nothing new, as they differ
// only in fields the API server drops from this set's status. Then b is not written, and
// what it holds of those fields is remembered as if it had been.
func (p prunedStatus) unchangedAsStored(set *vtv1alpha1.ExporterSet, a, b vtv1alpha1.ExporterSetStatus) bool {
	f, ok := p.sets.ForSet(keyOf(set))
	if !ok || f.uid != set.UID || !f.prunes || !statusEqual(withoutNewFields(a), withoutNewFields(b)) {
		return false
	}
	f.surplusSince = b.SurplusSince.DeepCopy()
	f.sequence = max(f.sequence, b.InstanceSequence)
	p.sets.PutSet(keyOf(set), f)
	return true
}

// withoutNewFields is st without the fields upstream's status schema lacks.
func withoutNewFields(st vtv1alpha1.ExporterSetStatus) vtv1alpha1.ExporterSetStatus {
	st.SurplusSince, st.InstanceSequence, st.ObservedGeneration, st.FailingReplicas = nil, 0, 0, 0
	st.RestingReplicas, st.HardwareAvailableReplicas = 0, 0
	return st
}
