package jumpsim

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Lease condition reasons, as upstream's lease controller writes them (jumpstarter-controller
// b1f2bb41, lease_controller.go, reconcileStatusExporterRef and reconcileStatusEnded).
const (
	ReasonOffline      = "Offline"      // Pending: exporters match, none Registered and Online
	ReasonNotAvailable = "NotAvailable" // Pending: every online match is leased
	ReasonNotReady     = "NotReady"     // Pending: free online matches are busy (exporterStatus)
	// ReasonNoAccess ends a lease Unsatisfiable when no enabled Exporter matches its
	// selector. Upstream's words are about access policies: with none (the simulator has
	// none) every enabled match is approved, so "none approved" means "none enabled matches",
	// and the count in its message is 0.
	ReasonNoAccess = "NoAccess"
	// ReasonAllDisabled ends a lease Unsatisfiable when Exporters match its selector but
	// every one is disabled. Upstream leaves disabled Exporters out of a selector's matches
	// whatever the lease's spec.allowDisabled says: that field only lets a lease pinned by
	// spec.exporterRef have a disabled Exporter.
	ReasonAllDisabled = "AllDisabled"
	// ReasonExporterNotFound, ReasonSelectorMismatch and ReasonExporterDisabled end a lease
	// pinned by spec.exporterRef Unsatisfiable: its Exporter does not exist, does not match
	// a non-empty selector, or is disabled and the lease does not allow disabled ones.
	ReasonExporterNotFound = "ExporterNotFound"
	ReasonSelectorMismatch = "SelectorMismatch"
	ReasonExporterDisabled = "ExporterDisabled"
	ReasonInvalid          = "InvalidSelector"
	ReasonReady            = "Ready"
	ReasonReleased         = "Released"
	ReasonExpired          = "Expired"
)

// pendingSafetyRequeue re-examines waiting leases even without events. Events (Exporter and
// Lease changes) drive scheduling; this only bounds the damage of a missed one.
const pendingSafetyRequeue = 5 * time.Second

// scheduler assigns Leases to Exporters. Reconciles run concurrently, and the cache lags
// behind the scheduler's own writes, so assignments are reserved in memory first: an
// Exporter counts as leased if reserved here, or if the cache shows it leased (which also
// covers assignments by an earlier Simulator). Both can only over-report, never miss, a lease.
type scheduler struct {
	s  *Simulator
	mu sync.Mutex
	// byExporter maps an Exporter to the lease reserved for it.
	byExporter map[types.NamespacedName]reservation
	// byLease maps a lease back to its Exporter.
	byLease map[types.NamespacedName]types.NamespacedName
}

type reservation struct {
	lease string
	uid   types.UID // of the Exporter, so a re-created namesake is not considered leased
}

func newScheduler(s *Simulator) *scheduler {
	return &scheduler{
		s:          s,
		byExporter: map[types.NamespacedName]reservation{},
		byLease:    map[types.NamespacedName]types.NamespacedName{},
	}
}

func (s *Simulator) setupScheduler() error {
	sc := s.sched
	err := builder.ControllerManagedBy(s.mgr).
		Named("jumpsim-lease").
		For(&jsv1.Lease{}).
		// Exporters coming online, freed, disabled or relabelled change what waiting leases
		// can get; an Exporter's leaseRef names a lease to check.
		Watches(&jsv1.Exporter{}, handler.EnqueueRequestsFromMapFunc(sc.exporterToLeases)).
		// A lease ending or going away frees its Exporter for the waiting ones.
		Watches(&jsv1.Lease{}, handler.EnqueueRequestsFromMapFunc(sc.endedLeaseToWaiting)).
		WatchesRawSource(source.Channel(s.leasePokes, &handler.EnqueueRequestForObject{})).
		Complete(reconcile.Func(sc.reconcile))
	if err != nil {
		return fmt.Errorf("jumpsim: setting up lease scheduler: %w", err)
	}
	return nil
}

func (sc *scheduler) waitingLeases(ctx context.Context, namespace string) []reconcile.Request {
	var list jsv1.LeaseList
	if err := sc.s.client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{indexLeaseWaiting: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, l := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l)})
	}
	return out
}

func (sc *scheduler) exporterToLeases(ctx context.Context, obj client.Object) []reconcile.Request {
	ex := obj.(*jsv1.Exporter)
	reqs := sc.waitingLeases(ctx, ex.Namespace)
	if ex.Status.LeaseRef != nil {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ex.Namespace, Name: ex.Status.LeaseRef.Name}})
	}
	return reqs
}

func (sc *scheduler) endedLeaseToWaiting(ctx context.Context, obj client.Object) []reconcile.Request {
	l := obj.(*jsv1.Lease)
	if !l.Status.Ended && l.DeletionTimestamp == nil {
		return nil
	}
	return sc.waitingLeases(ctx, l.Namespace)
}

func (sc *scheduler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var l jsv1.Lease
	err := sc.s.client.Get(ctx, req.NamespacedName, &l)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, sc.forgetLease(ctx, req.NamespacedName)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	var res reconcile.Result
	now := time.Now()
	switch {
	case l.DeletionTimestamp != nil:
		err = sc.releaseExporter(ctx, &l, false)
	case l.Status.Ended:
		err = sc.finishEnded(ctx, &l)
	case l.Status.ExporterRef != nil:
		res, err = sc.reconcileAssigned(ctx, &l, now)
	default:
		res, err = sc.reconcileWaiting(ctx, &l, now)
	}
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, sc.s.reconcileError("scheduler", "Lease", req.NamespacedName, err)
	}
	return res, nil
}

// reconcileAssigned keeps an assigned lease's ownership and Exporter leaseRef in place and
// ends it on release or expiry.
func (sc *scheduler) reconcileAssigned(ctx context.Context, l *jsv1.Lease, now time.Time) (reconcile.Result, error) {
	exKey := types.NamespacedName{Namespace: l.Namespace, Name: l.Status.ExporterRef.Name}
	var ex jsv1.Exporter
	exErr := sc.s.client.Get(ctx, exKey, &ex)
	if uid, _, owned := controllerUID(l, "Exporter"); exErr == nil && owned && uid != ex.UID {
		// The Exporter that held the lease was replaced by a namesake, which must not
		// inherit the lease (with the garbage collector on, the lease goes with its owner).
		exErr = apierrors.NewNotFound(jsv1.GroupVersion.WithResource("exporters").GroupResource(), exKey.Name)
	}
	if exErr == nil {
		sc.adopt(exKey, l.Name, ex.UID)
	}
	if l.Spec.Release {
		return reconcile.Result{}, sc.end(ctx, l, ReasonReleased, "The lease was marked for release")
	}
	var res reconcile.Result
	if at, ok := expiry(l); ok {
		if !now.Before(at) {
			return reconcile.Result{}, sc.end(ctx, l, ReasonExpired, "The lease has expired")
		}
		res.RequeueAfter = requeueAt(at, now)
	}
	if exErr != nil {
		// A vanished Exporter: its Lease is garbage collected with it (it is the owner).
		return res, client.IgnoreNotFound(exErr)
	}
	if err := sc.ensureOwner(ctx, l, &ex); err != nil {
		return res, err
	}
	return res, sc.ensureLeaseRef(ctx, &ex, l.Name)
}

// reconcileWaiting decides for a lease that is neither ended nor assigned, in the contract's
// order: invalid, released, expired, not yet begun, unsatisfiable, offline, not available,
// not ready, assigned.
func (sc *scheduler) reconcileWaiting(ctx context.Context, l *jsv1.Lease, now time.Time) (reconcile.Result, error) {
	sel, err := metav1.LabelSelectorAsSelector(&l.Spec.Selector)
	if err != nil {
		return reconcile.Result{}, sc.endUnassigned(ctx, l, jsv1.LeaseConditionInvalid, ReasonInvalid, fmt.Sprintf("Invalid selector: %v", err))
	}
	if l.Spec.Release {
		return reconcile.Result{}, sc.end(ctx, l, ReasonReleased, "The lease was marked for release")
	}
	if end, ok := plannedEnd(l); ok && !now.Before(end) {
		return reconcile.Result{}, sc.end(ctx, l, ReasonExpired, "The lease has expired")
	}
	if begin, ok := requestedBegin(l); ok && now.Before(begin) {
		// A booked lease: upstream sets no condition and looks again at its begin time.
		return reconcile.Result{RequeueAfter: requeueAt(begin, now)}, nil
	}

	// Decided from the cache alone, as upstream decides from its informers: a lease that
	// comes before the cache has its just-created Exporter ends Unsatisfiable, for good.
	candidates, reason, msg, err := sc.candidates(ctx, l, sel)
	if err != nil {
		return reconcile.Result{}, err
	}
	if reason != "" {
		return reconcile.Result{}, sc.endUnassigned(ctx, l, jsv1.LeaseConditionUnsatisfiable, reason, msg)
	}

	leasedInCache, err := sc.leasedInCache(ctx, l)
	if err != nil {
		return reconcile.Result{}, err
	}
	chosen, reason, msg := sc.pick(l, sc.s.connected(ctx, candidates), leasedInCache)
	if chosen == nil {
		return reconcile.Result{RequeueAfter: waitingRequeue(l, now)}, sc.setPending(ctx, l, reason, msg)
	}
	return sc.assign(ctx, l, chosen, now)
}
