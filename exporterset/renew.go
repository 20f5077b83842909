package exporterset

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exporterset/exporterset/exporterset/pool"
)

// renew brings an instance that its set keeps as its last enabled Exporter at the ceiling
// (pool/leasewait.go) to the current spec in place, instead of retiring it: the template's
// labels and annotations and the spec hash are written on the Exporter, and its use count
// and idle clock are dropped, so it counts as a new instance of the current spec. Labels the
// exporter writes itself (jumpstarter.dev/) stay. The patch carries the resourceVersion the
// decision was made on: an instance leased meanwhile conflicts and is decided on again.
// Its Pod is replaced by the instance reconciler (plan.RestPods, plan.RestartPods), which
// also writes its config Secret from the current spec.
func (r *Reconciler) renew(ctx context.Context, p *pass, in *pool.Instance) error {
	e := in.Exporter
	patched := e.DeepCopy()
	patched.Labels = instanceLabels(p.set, p.hash)
	for k, v := range e.Labels {
		if strings.HasPrefix(k, "jumpstarter.dev/") {
			patched.Labels[k] = v
		}
	}
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	for _, k := range []string{pool.AnnotationUseCount, pool.AnnotationLastLease, pool.AnnotationIdleSince} {
		delete(patched.Annotations, k)
	}
	for k, v := range p.set.Spec.Template.Metadata.Annotations {
		patched.Annotations[k] = v
	}
	if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(e, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			p.requeueIn(conflictRetry) // changed since we looked (maybe a lease): decide again soon
			return nil
		}
		return fmt.Errorf("renewing %s: %w", e.Name, err)
	}
	return nil
}
