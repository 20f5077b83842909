package exporterset

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

// renewAll writes, for each instance the plan keeps as its set's last enabled Exporter at the
// ceiling (pool/leasewait.go), what its renewal in place needs on the Exporter, and returns
// the instances whose Pod restart must not be asked for in this pass: their write lost a race.
// Those in plan.Renew are relabelled to the current spec. An external target that exists is
// never among them (PlanInput.TargetKept, keptTargets): it is not rebuilt in place, and its
// instance serves on as it is until room allows a surge.
func (r *Reconciler) renewAll(ctx context.Context, p *pass, plan *pool.Plan) (held map[types.UID]bool, errs []error) {
	outdated := make(map[*pool.Instance]bool, len(plan.Renew))
	for _, in := range plan.Renew {
		outdated[in] = true
	}
	for _, in := range plan.Renewed {
		p.events.Add(eventlog.Renewed, in.Name(), in.Exporter)
		done, err := r.renew(ctx, p, in, outdated[in])
		if err != nil {
			errs = append(errs, err)
		}
		if !done {
			if held == nil {
				held = map[types.UID]bool{}
			}
			held[in.Exporter.UID] = true
		}
	}
	return held, errs
}

// keptTargets are the instances whose target is not rebuilt in place
// (pool.PlanInput.TargetKept): their provisioner builds external targets and their target
// exists, or is not known to be gone (one never built, or deleted behind the controller, is
// relabelled and built from the current spec). Nil for a provisioner without external targets.
func keptTargets(p *pass, instances []*pool.Instance, ext externalStates) map[*pool.Instance]bool {
	if externalOf(p.prov) == nil || objects.Hosted(p.prov) {
		return nil // a hosted unit is renewed in place as a Pod is: made again from the current spec
	}
	kept := make(map[*pool.Instance]bool, len(instances))
	for _, in := range instances {
		if st := ext.of(in); st == nil || st.Phase != provisioner.ExternalGone {
			kept[in] = true
		}
	}
	return kept
}

// renew writes one instance's renewal in place on its Exporter, in one patch carrying the
// resourceVersion the decision was made on (an instance leased meanwhile conflicts and is
// decided on again):
//   - its completed Pod is named (pool.AnnotationRenewedPod) before the instance reconciler
//     is asked to replace it: a later pass, whose cache may still show that Pod, reads the
//     instance as restarting rather than exited and does not remove it while its fresh Pod
//     starts (remove re-reads the Exporter, so a lagging cache cannot undo this);
//   - an outdated or used-up instance is brought to the current spec: the template's labels
//     and annotations and the spec hash, its use count and idle clock dropped, so it counts
//     as a new instance of the current spec. Labels the exporter writes (jumpstarter.dev/)
//     stay.
//
// Its Pod is replaced by the instance reconciler (plan.RestPods, plan.RestartPods), which
// also writes its config Secret from the current spec. done is false when the patch lost.
func (r *Reconciler) renew(ctx context.Context, p *pass, in *pool.Instance, outdated bool) (done bool, err error) {
	e := in.Exporter
	completed := in.CompletedPod()
	if !outdated && completed == nil {
		return true, nil
	}
	patched := e.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	if outdated {
		patched.Labels = objects.InstanceLabels(p.set, p.hash)
		for k, v := range e.Labels {
			if strings.HasPrefix(k, "jumpstarter.dev/") {
				patched.Labels[k] = v
			}
		}
		for _, k := range []string{pool.AnnotationUseCount, pool.AnnotationLastLease, pool.AnnotationIdleSince} {
			delete(patched.Annotations, k)
		}
		for k, v := range p.set.Spec.Template.Metadata.Annotations {
			patched.Annotations[k] = v
		}
	}
	if completed != nil {
		patched.Annotations[pool.AnnotationRenewedPod] = string(completed.UID)
	}
	if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(e, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			p.requeueIn(conflictRetry) // changed since we looked (maybe a lease): decide again soon
			return false, nil
		}
		return false, fmt.Errorf("renewing %s: %w", e.Name, err)
	}
	return true, nil
}
