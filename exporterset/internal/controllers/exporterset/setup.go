package exporterset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// classNameIndex indexes ExporterSets by spec.virtualTargetClassName.
const classNameIndex = "spec.virtualTargetClassName"

// setIndex indexes Exporters, Pods and Secrets by their LabelSet value, and Exporters also
// by the ExporterSet controlling them (upstream-made ones carry no label of ours, adopt.go):
// a cache List by label reads every object of the namespace, so with many sets in one
// namespace each pass cost the size of all the pools, not of its own.
const setIndex = "label:" + pool.LabelSet

// indexedKinds are the kinds observe lists by setIndex.
func indexedKinds() []client.Object {
	return []client.Object{&jumpstarterv1alpha1.Exporter{}, &corev1.Pod{}, &corev1.Secret{}}
}

func setOf(o client.Object) []string {
	var out []string
	label := o.GetLabels()[pool.LabelSet]
	if label != "" {
		out = append(out, label)
	}
	if owner := objects.SetOwnerOf(o); owner != "" && owner != label {
		out = append(out, owner)
	}
	return out
}

// SetupIndexes registers the cache indexes the set controller lists by; the front calls it
// before any controller is set up.
func (r *Reconciler) SetupIndexes(mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &vtv1alpha1.ExporterSet{}, classNameIndex, func(o client.Object) []string {
		return []string{o.(*vtv1alpha1.ExporterSet).Spec.VirtualTargetClassName}
	})
	if err != nil {
		return err
	}
	for _, obj := range indexedKinds() {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), obj, setIndex, setOf); err != nil {
			return err
		}
	}
	r.indexed = true
	return nil
}

// SetupWithManager registers the set controller. It watches ExporterSets (spec and
// annotation changes), their Exporters, the Pods and Secrets labelled with a set,
// VirtualTargetClasses (mapped to the sets naming them), Leases (mapped to the sets whose
// instances they would match), boards, CapacityBudgets when served, and the pokes on
// setPokes; it pokes instances on instancePokes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, setPokes, instancePokes chan event.GenericEvent) error {
	r.setPokes, r.instancePokes = setPokes, instancePokes
	// It writes as its own field manager, so the API server's managedFields show which
	// controller wrote an object (the one-writer test reads them).
	r.client = client.WithFieldOwner(r.client, r.Name)
	b := ctrl.NewControllerManagedBy(mgr)
	if r.Budgets {
		b = b.Watches(&vtv1alpha1.CapacityBudget{}, handler.EnqueueRequestsFromMapFunc(r.setsOfBudget)) // budgetview.go
	}
	return b.
		Named(r.Name).
		// Its annotations carry the reuse policy (reusepolicy.go): their change is a change of spec.
		For(&vtv1alpha1.ExporterSet{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&jumpstarterv1alpha1.Exporter{}, builder.WithPredicates(objects.ExporterChanged())).
		Watches(&jumpstarterv1alpha1.Exporter{}, r.hookSightings()). // quarantine_watch.go
		// Boards (hardware.go): taken, freed or gone, they change the buffer of the sets
		// naming them.
		Watches(&jumpstarterv1alpha1.Exporter{}, handler.EnqueueRequestsFromMapFunc(r.setsOfBoard), builder.WithPredicates(boardEvents, objects.ExporterChanged())).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(bySetLabel)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(bySetLabel)).
		Watches(&vtv1alpha1.VirtualTargetClass{}, handler.EnqueueRequestsFromMapFunc(r.setsOfClass)).
		Watches(&jumpstarterv1alpha1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.setsOfLease)).
		WatchesRawSource(source.Channel(setPokes, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrent}).
		Complete(r)
}

// bySetLabel maps an object labelled with LabelSet to its set.
func bySetLabel(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[pool.LabelSet]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// setsOfClass maps a VirtualTargetClass to the sets in its namespace that name it.
func (r *Reconciler) setsOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	var sets vtv1alpha1.ExporterSetList
	if err := r.client.List(ctx, &sets, client.InNamespace(o.GetNamespace()), client.MatchingFields{classNameIndex: o.GetName()}); err != nil {
		return nil
	}
	return requestsFor(sets.Items, func(*vtv1alpha1.ExporterSet) bool { return true })
}

// setsOfLease maps a Lease to the sets in its namespace whose instances its selector matches.
func (r *Reconciler) setsOfLease(ctx context.Context, o client.Object) []reconcile.Request {
	lease, ok := o.(*jumpstarterv1alpha1.Lease)
	if !ok {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&lease.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil
	}
	var sets vtv1alpha1.ExporterSetList
	if err := r.client.List(ctx, &sets, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	return requestsFor(sets.Items, func(s *vtv1alpha1.ExporterSet) bool {
		return sel.Matches(labels.Set(objects.InstanceLabels(s, "")))
	})
}

func requestsFor(sets []vtv1alpha1.ExporterSet, keep func(*vtv1alpha1.ExporterSet) bool) []reconcile.Request {
	var out []reconcile.Request
	for i := range sets {
		if keep(&sets[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sets[i])})
		}
	}
	return out
}

// Poke queues the set's reconcile (the instance controller's results changed); nothing
// before SetupWithManager.
func (r *Reconciler) Poke(ctx context.Context, set client.Object) { r.poke(ctx, r.setPokes, set) }
