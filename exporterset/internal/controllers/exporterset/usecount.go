package exporterset

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// recordsUses reports whether the set keeps its instances' use counts and idle clocks on
// them (pool.UseRecord): under InPlaceReuse with max-use-count or max-idle-age. Under
// ExitAndReplace an instance serves one lease and is recycled: nothing to count.
func recordsUses(p *pass) bool {
	return p.set.Spec.RecycleStrategy == vtv1alpha1.RecycleInPlaceReuse && (p.policy.maxUseCount > 0 || p.policy.maxIdleAge > 0)
}

// recordUses writes on each live instance the lease it now serves (its use count) or the
// end of its last one (its idle clock), as pool.UseRecord says. The set reconciler writes
// them, being the Exporters' writer, and with the resourceVersion it decided on: a stale
// view conflicts and is decided again, so a lease is counted once and a count never drops.
// leases are the namespace's not-ended Leases: a lease whose exporter's leaseRef the cache
// does not show yet is counted from its status.exporterRef.
func (r *Reconciler) recordUses(ctx context.Context, p *pass, live []*pool.Instance, leases []*jumpstarterv1alpha1.Lease) error {
	if !recordsUses(p) {
		return nil
	}
	assigned := map[string]string{}
	for _, l := range leases {
		if !l.Status.Ended && l.Status.ExporterRef != nil && l.Status.ExporterRef.Name != "" {
			assigned[l.Status.ExporterRef.Name] = l.Name
		}
	}
	var errs []error
	for _, in := range live {
		lease := assigned[in.Name()]
		if ref := in.Exporter.Status.LeaseRef; ref != nil && ref.Name != "" {
			lease = ref.Name
		}
		change := pool.UseRecord(in, lease, p.now)
		if len(change) == 0 {
			continue
		}
		patched := in.Exporter.DeepCopy()
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		for k, v := range change {
			if v == nil {
				delete(patched.Annotations, k)
			} else {
				patched.Annotations[k] = *v
			}
		}
		err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(in.Exporter, client.MergeFromWithOptimisticLock{}))
		switch {
		case apierrors.IsConflict(err):
			p.requeueIn(conflictRetry) // changed since we looked (a heartbeat, a lease): count again soon
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("recording the use of %s: %w", in.Name(), err))
		}
	}
	return errors.Join(errs...)
}
