package exporterset

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/budget"
)

// The ledger: a budget is never exceeded, whichever processes create for its sets. Before
// it creates, a set's pass reads the budget and every Exporter of the namespace through the
// uncached reader, counts the governed ones plus the reservations whose Exporter does not
// exist yet (usageOf), and adds reservations for what fits, writing the budget's status with
// the resourceVersion it read as precondition. Two processes that reserve at once cannot
// both win: the second write conflicts, and it counts again. A reservation stands in for
// its Exporter until the Exporter exists, when the uncached List counts it instead; one
// whose create never came lapses after reservationGrace.

// reserveAttempts bounds how often one reservation is retried after losing a race.
const reserveAttempts = 8

// reserve takes the budgets' capacity for the Exporters named, in order, and returns how
// many of them (a prefix) it got: every budget governing the set must have room for each.
// Those reserved in one budget beyond what a later one allowed stay reserved until they
// lapse; that only ever makes the count higher, never lower.
func (r *Reconciler) reserve(ctx context.Context, p *pass, g governance, names []string, per corev1.ResourceList) (int, error) {
	n := len(names)
	for _, b := range g.budgets {
		if n == 0 {
			break
		}
		got, err := r.reserveIn(ctx, p, b.Name, names[:n], per)
		if err != nil {
			return 0, err
		}
		n = got
	}
	return n, nil
}

// reserveIn reserves in one budget.
func (r *Reconciler) reserveIn(ctx context.Context, p *pass, name string, names []string, per corev1.ResourceList) (int, error) {
	key := types.NamespacedName{Namespace: p.set.Namespace, Name: name}
	for range reserveAttempts {
		var b vtv1alpha1.CapacityBudget
		if err := r.apiReader.Get(ctx, key, &b); err != nil {
			if apierrors.IsNotFound(err) {
				return len(names), nil // deleted since the pass read it: it limits nothing
			}
			return 0, fmt.Errorf("reading CapacityBudget %s: %w", name, err)
		}
		governed, err := r.governedSets(ctx, &b)
		if err != nil {
			return 0, err
		}
		governed[p.set.Name] = true // the pass saw the budget select it
		var list jumpstarterv1alpha1.ExporterList
		if err := r.apiReader.List(ctx, &list, client.InNamespace(p.set.Namespace)); err != nil {
			return 0, fmt.Errorf("listing Exporters for CapacityBudget %s: %w", name, err)
		}
		exporters := make([]*jumpstarterv1alpha1.Exporter, len(list.Items))
		for i := range list.Items {
			exporters[i] = &list.Items[i]
		}
		now := r.clock.Now()
		u, live := usageOf(exporters, governed, b.Status.Reservations, now)
		k := 0
		limits := b.Spec.Limits
		for k < len(names) && u.instances+1 <= limits.Instances && budget.Fits(u.resources, per, limits.Resources) {
			u.instances++
			u.resources = budget.Add(u.resources, per)
			live = append(live, vtv1alpha1.BudgetReservation{Exporter: names[k], Set: p.set.Name, Since: metav1.NewTime(now), Resources: per})
			k++
		}
		if k == 0 {
			return 0, nil // full: the budget's next status write (a place freed) wakes the set
		}
		b.Status.Reservations = live
		if err := r.client.Status().Update(ctx, &b); err != nil {
			if apierrors.IsConflict(err) {
				continue // another reservation or status write came first: count again
			}
			return 0, fmt.Errorf("reserving in CapacityBudget %s: %w", name, err)
		}
		return k, nil
	}
	p.requeueIn(conflictRetry)
	return 0, nil
}

// governedSets are the names of the sets of b's namespace it selects, from the cache.
func (r *Reconciler) governedSets(ctx context.Context, b *vtv1alpha1.CapacityBudget) (map[string]bool, error) {
	sets, err := r.selectedSets(ctx, b)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(sets))
	for _, s := range sets {
		out[s.Name] = true
	}
	return out, nil
}

// selectedSets are the sets of b's namespace it selects, from the cache, by name.
func (r *Reconciler) selectedSets(ctx context.Context, b *vtv1alpha1.CapacityBudget) ([]*vtv1alpha1.ExporterSet, error) {
	var sets vtv1alpha1.ExporterSetList
	if err := r.client.List(ctx, &sets, client.InNamespace(b.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ExporterSets: %w", err)
	}
	var out []*vtv1alpha1.ExporterSet
	for i := range sets.Items {
		if budgetSelects(b, &sets.Items[i]) {
			out = append(out, &sets.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
