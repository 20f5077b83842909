package exporterset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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

func controllerUIDOf(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}

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

// CacheOptions returns the cache settings the reconciler needs, for the manager's
// Options.Cache: Pods and Secrets are cached only when they carry LabelSet, so memory grows
// with the pools, not with the cluster; Leases only while they have not ended (ended ones
// accumulate and add no demand). Exporters are cached whole: the ones upstream's controller
// made carry no label of ours, and a set must count them (adopt.go); a namespace holds far
// fewer Exporters than Pods or Secrets. Namespaces, if any, restrict every cache.
func CacheOptions(namespaces ...string) cache.Options {
	mine := labels.NewSelector().Add(mustRequirement(pool.LabelSet, selection.Exists, nil))
	notEnded := labels.NewSelector().Add(mustRequirement(jumpstarterv1alpha1.LeaseEndedLabel, selection.NotEquals, []string{"true"}))
	o := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:                {Label: mine},
		&corev1.Secret{}:             {Label: mine},
		&jumpstarterv1alpha1.Lease{}: {Label: notEnded},
		// Not label-restricted: a pool taken over from upstream carries none of our labels.
		&jumpstarterv1alpha1.Exporter{}: {Transform: trimUnrelatedExporter},
	}, DefaultTransform: stripManagedFields}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// Selectors of the label-restricted caches; notEndedLeases also scopes the uncached Lease
// read before a removal.
var (
	labelledForASet = labels.NewSelector().Add(mustRequirement(pool.LabelSet, selection.Exists, nil))
	notEndedLeases  = labels.NewSelector().Add(mustRequirement(jumpstarterv1alpha1.LeaseEndedLabel, selection.NotEquals, []string{"true"}))
)

func mustRequirement(key string, op selection.Operator, vals []string) labels.Requirement {
	r, err := labels.NewRequirement(key, op, vals)
	if err != nil {
		panic(err) // constant arguments: only a programming error gets here
	}
	return *r
}

// InstanceManagerSuffix ends the field manager name the instance reconciler writes with
// (the set reconciler writes with the reconciler's name alone).
const InstanceManagerSuffix = "-instance"

// pokeBuffer is how many pokes wait for their reconciler's queue before a sender waits: the
// sources drain them continuously, so it only smooths a pass that pokes a whole pool.
const pokeBuffer = 1024

// SetupWithManager registers the set reconciler and the instance controller
// (internal/controllers/instance).
// The set reconciler watches ExporterSets (spec and annotation changes),
// their Exporters, the Pods and Secrets labelled with a set, VirtualTargetClasses (mapped to
// the sets naming them) and Leases (mapped to the sets whose instances they would match).
// The manager's cache should be configured with CacheOptions, and the reconciler's client
// be the manager's: it lists by the cache indexes registered here.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
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
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, objects.PodControllerIndex, controllerUIDOf); err != nil {
		return err
	}
	r.indexed = true
	// The instance controller (internal/controllers/instance): one reconcile per Exporter,
	// the only writer of its config Secret and Pods.
	r.instancePokes, r.setPokes = make(chan event.GenericEvent, pokeBuffer), make(chan event.GenericEvent, pokeBuffer)
	// Each writes as its own field manager, so the API server's managedFields show which of
	// the two wrote an object (the one-writer test reads them).
	r.instances.Client = client.WithFieldOwner(r.client, r.name+InstanceManagerSuffix)
	r.instances.PokeSet = func(ctx context.Context, set client.Object) { r.poke(ctx, r.setPokes, set) }
	r.client = client.WithFieldOwner(r.client, r.name)
	if err := r.instances.SetupWithManager(mgr, r.name+"-instance", r.instancePokes, r.createParallelism); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if r.budgets {
		if err := r.setupBudgets(mgr); err != nil {
			return err
		}
		b = b.Watches(&vtv1alpha1.CapacityBudget{}, handler.EnqueueRequestsFromMapFunc(r.setsOfBudget)) // budgetview.go
	}
	return b.
		Named(r.name).
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
		WatchesRawSource(source.Channel(r.setPokes, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.maxConcurrent}).
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
