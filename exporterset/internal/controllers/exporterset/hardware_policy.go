package exporterset

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// A set with boards is told when upstream's core would not hand its boards out before its
// virtual instances (pool.BoardsNotPreferred): the LeasesWait message says so, and a
// Warning event (BoardsNotPreferred) is recorded when that note first appears.
//
// ExporterAccessPolicies are read uncached, only for sets whose hardware selector names a
// board, at most every policiesTTL per set: no informer is started for a kind that a
// cluster without Jumpstarter's CRD does not serve, or that a Role (upstream's operator's)
// does not let the controller watch. A read that fails says nothing: no note, no event.

// policiesTTL is how long a set reuses the policies it read: a policy edited takes up to this
// long to show in the set's status.
const policiesTTL = 30 * time.Second

// policiesEntry is what a set last read of its namespace's policies; ok is false when the
// read failed.
type policiesEntry struct {
	items []jumpstarterv1alpha1.ExporterAccessPolicy
	ok    bool
	at    time.Time
}

// boardPolicyNote is why the core may hand a Lease to one of the set's instances while a
// board is free ("" when it would not, or when that cannot be told). boards are the
// Exporters the hardware selector names.
func (r *Reconciler) boardPolicyNote(ctx context.Context, set *vtv1alpha1.ExporterSet, boards []jumpstarterv1alpha1.Exporter, instance labels.Set) string {
	if len(boards) == 0 {
		return ""
	}
	key := keyOf(set)
	e, ok := r.memory.policies.ForSet(key)
	if !ok || r.Clock.Since(e.at) >= policiesTTL {
		var list jumpstarterv1alpha1.ExporterAccessPolicyList
		err := r.apiReader.List(ctx, &list, client.InNamespace(set.Namespace))
		if err != nil {
			logf.FromContext(ctx).V(1).Info("ExporterAccessPolicies unreadable: the boards' priority is not judged", "error", err.Error())
		}
		e = policiesEntry{items: list.Items, ok: err == nil, at: r.Clock.Now()}
		r.memory.policies.PutSet(key, e)
	}
	if !e.ok {
		return ""
	}
	return pool.BoardsNotPreferred(e.items, boards, instance)
}
