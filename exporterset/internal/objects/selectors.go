package objects

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// The selectors of the label-restricted caches, in one place: the front's cache options
// and the set controller's uncached Lease read before a removal must select the same.
var (
	labelledForASet = labels.NewSelector().Add(mustRequirement(pool.LabelSet, selection.Exists, nil))
	notEndedLeases  = labels.NewSelector().Add(mustRequirement(jumpstarterv1alpha1.LeaseEndedLabel, selection.NotEquals, []string{"true"}))
)

// LabelledForASet selects the objects labelled with a set (the Pod and Secret caches).
func LabelledForASet() labels.Selector { return labelledForASet }

// NotEndedLeases selects the Leases that have not ended (the Lease cache, and the uncached
// Lease read before a removal).
func NotEndedLeases() labels.Selector { return notEndedLeases }

func mustRequirement(key string, op selection.Operator, vals []string) labels.Requirement {
	r, err := labels.NewRequirement(key, op, vals)
	if err != nil {
		panic(err) // constant arguments: only a programming error gets here
	}
	return *r
}
