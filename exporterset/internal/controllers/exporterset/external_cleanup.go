package exporterset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

// finalizeExternal cleans up the remote resources of an Exporter on its way out (deleted by
// anyone, or released under Retain) and then drops FinalizerExternal. Cleanup honours the
// class's reclaimPolicy and is idempotent, so a repeat after a failed patch is harmless.
func (r *Reconciler) finalizeExternal(ctx context.Context, prov provisioner.Provisioner, req *provisioner.Request, e *jumpstarterv1alpha1.Exporter) error {
	if !slices.Contains(e.Finalizers, FinalizerExternal) {
		return nil
	}
	if err := prov.Cleanup(ctx, req.ForExporter(e.DeepCopy(), objects.ConfigSecretName(e.Name))); err != nil {
		return fmt.Errorf("cleaning up the external resources of %s: %w", e.Name, err)
	}
	patched := e.DeepCopy()
	patched.Finalizers = slices.DeleteFunc(patched.Finalizers, func(f string) bool { return f == FinalizerExternal })
	return client.IgnoreNotFound(r.client.Patch(ctx, patched, client.MergeFrom(e)))
}

// finalizeDeleting finalizes the set's instances that are being deleted.
func (r *Reconciler) finalizeDeleting(ctx context.Context, p *pass, req *provisioner.Request, obs *observation) error {
	var errs []error
	for _, in := range append(slices.Clone(obs.Instances), obs.Strays...) {
		if in.Deleting() {
			errs = append(errs, r.finalizeExternal(ctx, p.prov, req, in.Exporter))
		}
	}
	return errors.Join(errs...)
}

// sweepExternal deletes, with Cleanup, the external resources of the set whose instance no
// longer exists: created just before a crash and never recorded, or left by an Exporter
// removed without its finalizer. It runs at most once per inventory interval and set. An
// instance the pass does not see is looked up uncached before its resources are touched: a
// pass on a stale cache must not sweep what was just created.
func (r *Reconciler) sweepExternal(ctx context.Context, p *pass, req *provisioner.Request, obs *observation) error {
	key := keyOf(p.set)
	if last, ok := r.memory.inventory.ForSet(key); ok && p.now.Sub(last) < r.InventoryInterval {
		return nil
	}
	ext := externalOf(p.prov)
	setReq := *req
	setReq.Exporter, setReq.ConfigSecretName = nil, ""
	resources, err := ext.InventoryExternal(ctx, &setReq)
	if err != nil {
		return fmt.Errorf("listing the external resources of the set: %w", err)
	}
	known := obs.uids()
	names := map[string]bool{}
	for _, in := range append(slices.Clone(obs.Instances), obs.Strays...) {
		names[in.Name()] = true
	}
	var errs []error
	for _, res := range resources {
		if res.InstanceUID != "" && known[types.UID(res.InstanceUID)] || res.InstanceUID == "" && names[res.Instance] {
			continue
		}
		var live jumpstarterv1alpha1.Exporter
		err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: p.set.Namespace, Name: res.Instance}, &live)
		if err == nil && (res.InstanceUID == "" || string(live.UID) == res.InstanceUID) {
			continue // it exists: the cache is behind
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		stub := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{
			Namespace: p.set.Namespace, Name: res.Instance, UID: types.UID(res.InstanceUID), Annotations: res.Annotations}}
		if err := p.prov.Cleanup(ctx, req.ForExporter(stub, objects.ConfigSecretName(stub.Name))); err != nil {
			errs = append(errs, fmt.Errorf("cleaning up orphaned %s %s: %w", res.Kind, res.Name, err))
			continue
		}
		r.warning(p.set, nil, eventlog.OrphanCleaned, "Cleanup", "%s %s of instance %s, which no longer exists, was cleaned up (reclaimPolicy %s)",
			res.Kind, res.Name, res.Instance, orDefault(string(p.class.Spec.ReclaimPolicy), string(vtv1alpha1.ReclaimDelete)))
	}
	if len(errs) == 0 {
		r.memory.inventory.PutSet(key, p.now)
	}
	return errors.Join(errs...)
}

// finalizeOrphans cleans up after a deleted set: its Exporters, being deleted by the
// garbage collector, still hold FinalizerExternal. Each names its class (AnnotationClass),
// whose provisioner, parameters and credentials clean it up; the set's own parameters are
// gone with it, and the resource is found by what CreateExternal recorded on the Exporter.
// A class deleted before its instances holds them until it returns (or a person removes
// the finalizer).
func (r *Reconciler) finalizeOrphans(ctx context.Context, namespace, set string) (requeue bool, err error) {
	var list jumpstarterv1alpha1.ExporterList
	if err := r.client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{pool.LabelSet: set}); err != nil {
		return false, err
	}
	var errs []error
	for i := range list.Items {
		e := &list.Items[i]
		if !slices.Contains(e.Finalizers, FinalizerExternal) {
			continue
		}
		prov, req, err := r.orphanRequest(ctx, e, set)
		if errors.Is(err, errGated) {
			requeue = true // the Lease's holder cleans it up; this process may hold it later
			continue
		}
		if err != nil {
			logf.FromContext(ctx).Info("cannot clean up the external resources of an instance of a deleted set yet", "exporter", e.Name, "error", err.Error())
			requeue = true
			continue
		}
		errs = append(errs, r.finalizeExternal(ctx, prov, req, e))
	}
	return requeue, errors.Join(errs...)
}

// orphanRequest rebuilds, from its class, the request that cleans up e of the deleted set.
func (r *Reconciler) orphanRequest(ctx context.Context, e *jumpstarterv1alpha1.Exporter, setName string) (provisioner.Provisioner, *provisioner.Request, error) {
	var class vtv1alpha1.VirtualTargetClass
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: e.Annotations[AnnotationClass]}, &class); err != nil {
		return nil, nil, fmt.Errorf("class %q: %w", e.Annotations[AnnotationClass], err)
	}
	prov, ok := r.registry.Get(class.Spec.Provisioner)
	if !ok {
		return nil, nil, fmt.Errorf("provisioner %q is not served here", class.Spec.Provisioner)
	}
	if r.Gate != nil && !r.Gate(e.Namespace, class.Spec.Provisioner) {
		return nil, nil, errGated
	}
	set := &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: setName}}
	if ref := metav1.GetControllerOf(e); ref != nil {
		set.UID = ref.UID
	}
	req, err := provisioner.NewRequest(set, &class, provisioner.Images{})
	if err != nil {
		return nil, nil, err
	}
	// The provisioner sees the parameters without hooks, as everywhere; hooks it never
	// reads are not checked here, so that a bad one cannot hold up a cleanup.
	withoutHooks(req)
	creds, problem, err := r.credentials(ctx, e.Namespace, e.Namespace+"/"+setName, &class)
	if err != nil {
		return nil, nil, err
	}
	if problem != "" {
		return nil, nil, errors.New(problem)
	}
	req.Credentials = creds
	return prov, req, nil
}

// externalRetry is how soon a set whose remote end could not be reached is looked at again.
const externalRetry = 5 * time.Second
