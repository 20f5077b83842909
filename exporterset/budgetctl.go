package exporterset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/budget"
	"github.com/exporterset/exporterset/exporterset/internal/metrics"
)

// budgetReconciler keeps a CapacityBudget's status: what its sets hold and want, and the
// allocation (package budget) whose Allowed each set's pass takes as its ceiling. It is a
// writer of the budget's status beside the sets' reservations (budgetledger.go): each
// write carries the resourceVersion it read, so neither overwrites the other.
type budgetReconciler struct{ *Reconciler }

// budgetView is what a budget's pass observed beside the allocation's input.
type budgetView struct {
	reservations []vtv1alpha1.BudgetReservation // those still needed
	sets         []*vtv1alpha1.ExporterSet      // governed, by name
	waiting      int32                          // Leases waiting for a governed set's instances
}

// Reconcile computes one budget's allocation and writes its status once, when it changed.
func (b budgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cb vtv1alpha1.CapacityBudget
	if err := b.client.Get(ctx, req.NamespacedName, &cb); err != nil {
		if apierrors.IsNotFound(err) {
			b.metrics.ForgetBudget(req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if cb.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	now := b.clock.Now()
	in, view, err := b.budgetInput(ctx, &cb, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !b.servesAny(ctx, view.sets) {
		return ctrl.Result{RequeueAfter: gateRetry}, nil // a standby, or none of its sets is ours
	}
	alloc := budget.Allocate(in)
	st := budgetStatus(&cb, in, alloc, view, now)
	b.observeBudget(&cb, st, view)
	b.budgetEvents(&cb, st, alloc)
	var requeue time.Duration
	for _, res := range view.reservations {
		if d := res.Since.Add(reservationGrace).Sub(now); requeue == 0 || d < requeue {
			requeue = max(d, 100*time.Millisecond) // a lapsed reservation frees its place
		}
	}
	if budgetStatusEqual(cb.Status, st) {
		return ctrl.Result{RequeueAfter: requeue}, nil
	}
	cb.Status = st
	if err := b.client.Status().Update(ctx, &cb); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil // a reservation came first: count again
		}
		return ctrl.Result{}, fmt.Errorf("writing CapacityBudget status: %w", err)
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// budgetInput observes the governed sets from the cache.
func (b budgetReconciler) budgetInput(ctx context.Context, cb *vtv1alpha1.CapacityBudget, now time.Time) (budget.Input, budgetView, error) {
	in := budget.Input{Limits: budget.Limits{Instances: cb.Spec.Limits.Instances, Resources: cb.Spec.Limits.Resources}}
	var view budgetView
	var err error
	if view.sets, err = b.selectedSets(ctx, cb); err != nil {
		return in, view, err
	}
	governed := map[string]bool{}
	for _, s := range view.sets {
		governed[s.Name] = true
	}
	var list jumpstarterv1alpha1.ExporterList
	if err := b.client.List(ctx, &list, client.InNamespace(cb.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return in, view, fmt.Errorf("listing Exporters: %w", err)
	}
	exporters := make([]*jumpstarterv1alpha1.Exporter, len(list.Items))
	for i := range list.Items {
		exporters[i] = &list.Items[i]
	}
	u, live := usageOf(exporters, governed, cb.Status.Reservations, now)
	view.reservations = live
	for _, set := range view.sets {
		sel, err := metav1.LabelSelectorAsSelector(&set.Spec.Selector)
		if err != nil {
			sel = labels.Everything() // the set is blocked; its Exporters still count
		}
		obs, err := b.observe(ctx, set, sel)
		if err != nil {
			return in, view, err
		}
		s := budgetSetOf(set, obs, b.leadTimeOf(set), now)
		s.Instances = u.perSet[set.Name]
		s.Used = u.perSetRes[set.Name]
		// A place reserved is an instance about to start: it serves the set's waiting Leases
		// as a starting one does, or the set's demand would reclaim for them a second time.
		s.Idle += u.pending[set.Name]
		if s.PerInstance == nil {
			s.PerInstance = reservedRequests(live, set.Name)
		}
		view.waiting += s.Waiting
		in.Sets = append(in.Sets, s)
	}
	return in, view, nil
}

// budgetSetOf is a set as the allocation sees it (Instances and Used come from usageOf).
func budgetSetOf(set *vtv1alpha1.ExporterSet, obs *observation, lead time.Duration, now time.Time) budget.Set {
	s := budget.Set{Name: set.Name, Min: set.Spec.MinReplicas, Waiting: int32(len(obs.WaitingLeases))}
	if set.Spec.MaxReplicas != nil {
		s.Max = *set.Spec.MaxReplicas
	}
	var newest time.Time
	for _, in := range obs.Instances {
		switch {
		case in.Deleting() || in.Retiring(),
			in.Terminal() && !in.Leased() && set.Spec.RecycleStrategy != vtv1alpha1.RecycleInPlaceReuse: // exited: removed next
			s.Leaving++
			continue
		case in.Leased():
			s.Leased++
		case in.Enabled() && !in.Quarantined() && !in.Terminal() && !in.Failed():
			s.Idle++
		}
		if t := in.Exporter.CreationTimestamp.Time; s.PerInstance == nil || !t.Before(newest) {
			if rl := requestsOf(in.Exporter); rl != nil {
				s.PerInstance, newest = rl, t // the newest instance renders as a new one would
			}
		}
	}
	s.Leaving += int32(len(obs.Strays)) // no longer selected: retired once unleased
	for _, l := range obs.WaitingLeases {
		if t := l.CreationTimestamp.Time; s.OldestWaiting.IsZero() || t.Before(s.OldestWaiting) {
			s.OldestWaiting = t
		}
	}
	for _, bk := range obs.Bookings {
		if bk.Begin.Sub(now) <= lead {
			s.BookedDue++
		}
	}
	s.Wanted = budget.WantedOf(s.Min, s.Max, set.Spec.MinAvailableReplicas, s.Leased, s.Waiting, s.BookedDue)
	return s
}

// reservedRequests is what the set's live reservations say one instance requests (nil
// without any).
func reservedRequests(live []vtv1alpha1.BudgetReservation, set string) corev1.ResourceList {
	for _, r := range live {
		if r.Set == set && r.Resources != nil {
			return r.Resources
		}
	}
	return nil
}

// leadTimeOf is a set's lead time for bookings as its own passes last learned it, read
// without recording anything (bookingLead is the set reconciler's).
func (b budgetReconciler) leadTimeOf(set *vtv1alpha1.ExporterSet) time.Duration {
	if v, ok := set.Annotations[AnnotationBookingLeadTime]; ok {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return d
		}
	}
	if log, ok := b.memory.startup.forSet(keyOf(set)); ok {
		if lead, ok := log.LeadTime(); ok {
			return lead
		}
	}
	return DefaultBookingLeadTime
}

// observeBudget exports the budget's used and limit per resource and its waiting Leases.
func (b budgetReconciler) observeBudget(cb *vtv1alpha1.CapacityBudget, st vtv1alpha1.CapacityBudgetStatus, view budgetView) {
	used := map[string]float64{metrics.BudgetInstances: float64(st.Used.Instances)}
	limit := map[string]float64{metrics.BudgetInstances: float64(cb.Spec.Limits.Instances)}
	for k, q := range cb.Spec.Limits.Resources {
		limit[string(k)] = q.AsApproximateFloat64()
		u := st.Used.Resources[k]
		used[string(k)] = u.AsApproximateFloat64()
	}
	b.metrics.ObserveBudget(cb.Namespace, cb.Name, used, limit, int(view.waiting))
}

// servesAny reports whether this process acts on at least one of the governed sets: it
// serves the set's provisioner and, with a gate, holds its lock. Only such a process writes
// the allocation, so a standby replica does not (its sets' reservations still count: the
// ledger is the limit, the allocation only who gets the places). Without a gate, or
// without governed sets, it writes.
func (b budgetReconciler) servesAny(ctx context.Context, sets []*vtv1alpha1.ExporterSet) bool {
	if b.gate == nil || len(sets) == 0 {
		return true
	}
	for _, set := range sets {
		var class vtv1alpha1.VirtualTargetClass
		if err := b.client.Get(ctx, client.ObjectKey{Namespace: set.Namespace, Name: set.Spec.VirtualTargetClassName}, &class); err != nil {
			continue
		}
		if _, ok := b.registry.Get(class.Spec.Provisioner); ok && b.gate(set.Namespace, class.Spec.Provisioner) {
			return true
		}
	}
	return false
}
