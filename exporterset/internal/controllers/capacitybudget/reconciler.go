// Package capacitybudget is the CapacityBudget controller: it keeps a budget's status, what
// its sets hold and want and the allocation (package budget) whose Allowed each set's pass
// takes as its ceiling. It writes the budget's status beside the sets' reservations
// (internal/ledger): each write carries the resourceVersion it read, so neither overwrites
// the other. It reads the sets through SetView, which the set controller provides; it
// imports no other controller.
package capacitybudget

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/budget"
	"github.com/exporterset/exporterset/exporterset/internal/ledger"
	"github.com/exporterset/exporterset/exporterset/internal/metrics"
)

// standbyRetry is how soon a process that serves none of a budget's sets (a standby, or
// another process's sets) looks again.
const standbyRetry = 2 * time.Second

// SetView is a set as the allocation sees it, observed from the cache at now: its floor,
// ceiling, demand and what it holds. Instances and Used are left out: the ledger counts
// them for every set alike.
type SetView func(ctx context.Context, set *vtv1alpha1.ExporterSet, now time.Time) (budget.Set, error)

// Reconciler computes one budget's allocation per reconcile.
type Reconciler struct {
	// Client reads from the cache and writes the budget's status.
	Client client.Client
	// Clock gives now.
	Clock clock.PassiveClock
	// Metrics exports the budgets' gauges; nil for none.
	Metrics *metrics.Metrics
	// Recorder records the budgets' events.
	Recorder events.EventRecorder
	// Sets observes a governed set.
	Sets SetView
	// Serves reports whether this process acts on set (it serves the set's provisioner and,
	// with leader election per provisioner, holds its lock); nil: every set.
	Serves func(ctx context.Context, set *vtv1alpha1.ExporterSet) bool
}

// view is what a budget's pass observed beside the allocation's input.
type view struct {
	reservations []vtv1alpha1.BudgetReservation // those still needed
	sets         []*vtv1alpha1.ExporterSet      // governed, by name
	waiting      int32                          // Leases waiting for a governed set's instances
}

// Reconcile computes one budget's allocation and writes its status once, when it changed.
func (b *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cb vtv1alpha1.CapacityBudget
	if err := b.Client.Get(ctx, req.NamespacedName, &cb); err != nil {
		if apierrors.IsNotFound(err) {
			b.Metrics.ForgetBudget(req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if cb.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	now := b.Clock.Now()
	in, v, err := b.input(ctx, &cb, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !b.servesAny(ctx, v.sets) {
		return ctrl.Result{RequeueAfter: standbyRetry}, nil
	}
	alloc := budget.Allocate(in)
	st := Status(&cb, in, alloc, v.reservations, now)
	b.observe(&cb, st, v)
	b.events(&cb, st, alloc)
	var requeue time.Duration
	for _, res := range v.reservations {
		if d := res.Since.Add(ledger.ReservationGrace).Sub(now); requeue == 0 || d < requeue {
			requeue = max(d, 100*time.Millisecond) // a lapsed reservation frees its place
		}
	}
	if statusEqual(cb.Status, st) {
		return ctrl.Result{RequeueAfter: requeue}, nil
	}
	cb.Status = st
	if err := b.Client.Status().Update(ctx, &cb); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil // a reservation came first: count again
		}
		return ctrl.Result{}, fmt.Errorf("writing CapacityBudget status: %w", err)
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// input observes the governed sets from the cache.
func (b *Reconciler) input(ctx context.Context, cb *vtv1alpha1.CapacityBudget, now time.Time) (budget.Input, view, error) {
	in := budget.Input{Limits: budget.Limits{Instances: cb.Spec.Limits.Instances, Resources: cb.Spec.Limits.Resources}}
	var v view
	var err error
	if v.sets, err = ledger.SelectedSets(ctx, b.Client, cb); err != nil {
		return in, v, err
	}
	governed := map[string]bool{}
	for _, s := range v.sets {
		governed[s.Name] = true
	}
	exporters, err := ledger.ExportersOf(ctx, b.Client, cb.Namespace, client.UnsafeDisableDeepCopy)
	if err != nil {
		return in, v, err
	}
	u, live := ledger.UsageOf(exporters, governed, cb.Status.Reservations, now)
	v.reservations = live
	for _, set := range v.sets {
		s, err := b.Sets(ctx, set, now)
		if err != nil {
			return in, v, err
		}
		s.Instances = u.PerSet[set.Name]
		s.Used = u.PerSetRes[set.Name]
		// A place reserved is an instance about to start: it serves the set's waiting Leases
		// as a starting one does, or the set's demand would reclaim for them a second time.
		s.Idle += u.Pending[set.Name]
		if s.PerInstance == nil {
			s.PerInstance = reservedRequests(live, set.Name)
		}
		v.waiting += s.Waiting
		in.Sets = append(in.Sets, s)
	}
	return in, v, nil
}

// observe exports the budget's used and limit per resource and its waiting Leases.
func (b *Reconciler) observe(cb *vtv1alpha1.CapacityBudget, st vtv1alpha1.CapacityBudgetStatus, v view) {
	used := map[string]float64{metrics.BudgetInstances: float64(st.Used.Instances)}
	limit := map[string]float64{metrics.BudgetInstances: float64(cb.Spec.Limits.Instances)}
	for k, q := range cb.Spec.Limits.Resources {
		limit[string(k)] = q.AsApproximateFloat64()
		u := st.Used.Resources[k]
		used[string(k)] = u.AsApproximateFloat64()
	}
	b.Metrics.ObserveBudget(cb.Namespace, cb.Name, used, limit, int(v.waiting))
}

// servesAny reports whether this process acts on at least one of the governed sets. Only
// such a process writes the allocation, so a standby replica does not (its sets'
// reservations still count: the ledger is the limit, the allocation only who gets the
// places). Without Serves, or without governed sets, it writes.
func (b *Reconciler) servesAny(ctx context.Context, sets []*vtv1alpha1.ExporterSet) bool {
	if b.Serves == nil || len(sets) == 0 {
		return true
	}
	for _, set := range sets {
		if b.Serves(ctx, set) {
			return true
		}
	}
	return false
}
