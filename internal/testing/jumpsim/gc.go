package jumpsim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// gcKinds returns one object per kind the garbage collector looks after, as dependents and
// as owners: Pod, Secret, ConfigMap, Lease, Exporter and ExporterSet. Objects of other kinds
// (PVCs, Services, ...) are never collected. ExporterSet is left out when its CRD is not
// installed (a cluster with only the Jumpstarter CRDs), since its informer would never sync.
func (s *Simulator) gcKinds() []client.Object {
	kinds := []client.Object{&corev1.Pod{}, &corev1.Secret{}, &corev1.ConfigMap{}, &jsv1.Lease{}, &jsv1.Exporter{}}
	gk := schema.GroupKind{Group: vtv1.GroupVersion.Group, Kind: "ExporterSet"}
	if _, err := s.mgr.GetRESTMapper().RESTMapping(gk, vtv1.GroupVersion.Version); err == nil {
		kinds = append(kinds, &vtv1.ExporterSet{})
	}
	return kinds
}

// garbageCollector is one controller per kind. It does, for the objects it caches, what
// kube-controller-manager's garbage collector does: delete objects whose owners are all gone
// (an owner reference whose UID no longer resolves counts as gone), drop dangling references
// when other owners remain, and complete foreground and orphan deletions.
type garbageCollector struct {
	s     *Simulator
	gvk   schema.GroupVersionKind
	kinds []schema.GroupVersionKind
}

func (s *Simulator) setupGarbageCollector(kinds []client.Object) error {
	var gvks []schema.GroupVersionKind
	for _, k := range kinds {
		gvk, err := apiutil.GVKForObject(k, s.scheme)
		if err != nil {
			return err
		}
		gvks = append(gvks, gvk)
	}
	mapper := s.mgr.GetRESTMapper()
	for i, k := range kinds {
		g := &garbageCollector{s: s, gvk: gvks[i], kinds: gvks}
		b := builder.ControllerManagedBy(s.mgr).
			Named("jumpsim-gc-" + strings.ToLower(gvks[i].Kind)).
			For(k)
		for _, other := range kinds {
			// Dependents changing (going away, above all) move an owner's foreground
			// deletion on.
			b = b.Watches(other, handler.EnqueueRequestForOwner(s.scheme, mapper, k))
			// An owner going away leaves its dependents unchanged, so nothing else would
			// make them be looked at.
			b = b.Watches(other, handler.Funcs{DeleteFunc: g.enqueueDependentsOf})
		}
		if err := b.Complete(reconcile.Func(g.reconcile)); err != nil {
			return fmt.Errorf("jumpsim: setting up garbage collector for %s: %w", gvks[i].Kind, err)
		}
	}
	return nil
}

// enqueueDependentsOf queues the objects of this controller's kind owned by a deleted object.
func (g *garbageCollector) enqueueDependentsOf(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	lo, err := g.s.scheme.New(g.gvk.GroupVersion().WithKind(g.gvk.Kind + "List"))
	if err != nil {
		return
	}
	list := lo.(client.ObjectList)
	opts := []client.ListOption{client.MatchingFields{indexOwnerUID: string(e.Object.GetUID())}, client.UnsafeDisableDeepCopy}
	if ns := e.Object.GetNamespace(); ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := g.s.client.List(ctx, list, opts...); err != nil {
		return
	}
	items, _ := meta.ExtractList(list)
	for _, it := range items {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(it.(client.Object))})
	}
}

func (g *garbageCollector) newObject(gvk schema.GroupVersionKind) (client.Object, error) {
	o, err := g.s.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	return o.(client.Object), nil
}

func (g *garbageCollector) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj, err := g.newObject(g.gvk)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := g.s.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var res reconcile.Result
	if obj.GetDeletionTimestamp() != nil {
		res, err = g.processDeletion(ctx, obj)
	} else {
		err = g.checkOwners(ctx, obj)
	}
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, g.s.reconcileError("gc", g.gvk.Kind, req.NamespacedName, err)
	}
	return res, nil
}

type ownerState int

const (
	ownerPresent ownerState = iota
	ownerAbsent
	ownerUnknown // its kind is not served: never act on a guess
)

// ownerStateOf resolves an owner reference of a dependent in namespace ns. The cache answers
// "present"; "absent" is always confirmed with the apiserver, because the cache may simply
// not have seen a freshly created owner yet.
func (g *garbageCollector) ownerStateOf(ctx context.Context, ns string, ref metav1.OwnerReference) (ownerState, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ownerUnknown, nil
	}
	gvk := gv.WithKind(ref.Kind)
	mapping, err := g.s.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return ownerUnknown, nil
	}
	if err != nil {
		return ownerUnknown, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		ns = ""
	}
	key := types.NamespacedName{Namespace: ns, Name: ref.Name}
	if slices.Contains(g.kinds, gvk) {
		if o, err := g.newObject(gvk); err == nil {
			if err := g.s.client.Get(ctx, key, o); err == nil && o.GetUID() == ref.UID {
				return ownerPresent, nil
			}
		}
	}
	pom := &metav1.PartialObjectMetadata{}
	pom.SetGroupVersionKind(gvk)
	err = g.s.reader.Get(ctx, key, pom)
	switch {
	case apierrors.IsNotFound(err):
		return ownerAbsent, nil
	case err != nil:
		return ownerUnknown, err
	case pom.UID != ref.UID:
		return ownerAbsent, nil // a namesake replaced the owner
	default:
		return ownerPresent, nil
	}
}

// checkOwners deletes obj when all its owners are gone, or drops the dangling references
// when some remain.
func (g *garbageCollector) checkOwners(ctx context.Context, obj client.Object) error {
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	var gone []string
	goneUIDs := map[types.UID]bool{}
	solid := 0
	for _, ref := range refs {
		st, err := g.ownerStateOf(ctx, obj.GetNamespace(), ref)
		if err != nil {
			return err
		}
		switch st {
		case ownerAbsent:
			gone = append(gone, ref.Kind+"/"+ref.Name)
			goneUIDs[ref.UID] = true
		default:
			solid++
		}
	}
	if len(gone) == 0 {
		return nil
	}
	if solid == 0 {
		uid := obj.GetUID()
		err := g.s.client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err == nil {
			g.s.record("gc", ActionGCDeleted, g.gvk.Kind, obj.GetNamespace(), obj.GetName(), "owners gone: %s", strings.Join(gone, ", "))
		}
		if apierrors.IsConflict(err) {
			return nil // replaced by a namesake meanwhile
		}
		return err
	}
	wrote, err := g.s.writeObject(ctx, obj, func() bool {
		return removeOwnerRefs(obj, func(r metav1.OwnerReference) bool { return goneUIDs[r.UID] })
	})
	if wrote {
		g.s.record("gc", ActionGCOwnerRefRemoved, g.gvk.Kind, obj.GetNamespace(), obj.GetName(), "dangling owner references removed: %s", strings.Join(gone, ", "))
	}
	return err
}

func removeOwnerRefs(obj client.Object, drop func(metav1.OwnerReference) bool) bool {
	refs := obj.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), drop)
	if len(kept) == len(refs) {
		return false
	}
	if len(kept) == 0 {
		kept = nil
	}
	obj.SetOwnerReferences(kept)
	return true
}

// processDeletion completes deletions waiting for the garbage collector: foreground
// (delete the dependents, wait for the blocking ones, drop the finalizer) and orphan (drop
// the dependents' references to obj, drop the finalizer).
func (g *garbageCollector) processDeletion(ctx context.Context, obj client.Object) (reconcile.Result, error) {
	fins := obj.GetFinalizers()
	foreground := slices.Contains(fins, metav1.FinalizerDeleteDependents)
	orphan := slices.Contains(fins, metav1.FinalizerOrphanDependents)
	if !foreground && !orphan {
		return reconcile.Result{}, nil
	}
	deps, err := g.dependents(ctx, obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	ownerUID := obj.GetUID()
	if orphan {
		for _, d := range deps {
			wrote, err := g.s.writeObject(ctx, d, func() bool {
				return removeOwnerRefs(d, func(r metav1.OwnerReference) bool { return r.UID == ownerUID })
			})
			if client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, err
			}
			if wrote {
				g.s.record("gc", ActionGCOwnerRefRemoved, kindOf(g.s, d), d.GetNamespace(), d.GetName(), "orphaned by deletion of %s %s", g.gvk.Kind, obj.GetName())
			}
		}
		return reconcile.Result{}, g.removeFinalizer(ctx, obj, metav1.FinalizerOrphanDependents)
	}
	blocking := 0
	for _, d := range deps {
		if d.GetDeletionTimestamp() == nil {
			uid := d.GetUID()
			err := g.s.client.Delete(ctx, d, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationForeground))
			if err == nil {
				g.s.record("gc", ActionGCDeleted, kindOf(g.s, d), d.GetNamespace(), d.GetName(), "owner %s %s is deleted in foreground", g.gvk.Kind, obj.GetName())
			} else if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return reconcile.Result{}, err
			}
		}
		for _, r := range d.GetOwnerReferences() {
			if r.UID == ownerUID && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
				blocking++
			}
		}
	}
	if blocking > 0 {
		// Dependents' deletions wake this owner; the requeue only bounds a missed event.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	return reconcile.Result{}, g.removeFinalizer(ctx, obj, metav1.FinalizerDeleteDependents)
}

func (g *garbageCollector) removeFinalizer(ctx context.Context, obj client.Object, finalizer string) error {
	wrote, err := g.s.writeObject(ctx, obj, func() bool {
		fins := obj.GetFinalizers()
		kept := slices.DeleteFunc(slices.Clone(fins), func(f string) bool { return f == finalizer })
		if len(kept) == len(fins) {
			return false
		}
		obj.SetFinalizers(kept)
		return true
	})
	if wrote {
		g.s.record("gc", ActionGCFinalizerRemoved, g.gvk.Kind, obj.GetNamespace(), obj.GetName(), "removed finalizer %s", finalizer)
	}
	return client.IgnoreNotFound(err)
}

// dependents lists the cached objects of every collected kind that name obj as an owner.
func (g *garbageCollector) dependents(ctx context.Context, obj client.Object) ([]client.Object, error) {
	var out []client.Object
	for _, gvk := range g.kinds {
		lo, err := g.s.scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			return nil, err
		}
		list := lo.(client.ObjectList)
		opts := []client.ListOption{client.MatchingFields{indexOwnerUID: string(obj.GetUID())}}
		if ns := obj.GetNamespace(); ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := g.s.client.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			out = append(out, it.(client.Object))
		}
	}
	return out, nil
}

func kindOf(s *Simulator, obj client.Object) string {
	if gvk, err := apiutil.GVKForObject(obj, s.scheme); err == nil {
		return gvk.Kind
	}
	return typeName(obj)
}
