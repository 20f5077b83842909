package ledger

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/budget"
)

// A budget is never exceeded, whichever processes create for its sets. Before it creates, a
// set's pass reads the budget and every Exporter of the namespace through the uncached
// reader, counts the governed ones plus the reservations whose Exporter does not exist yet
// (UsageOf), and adds reservations for what fits, writing the budget's status with the
// resourceVersion it read as precondition. Two processes that reserve at once cannot both
// win: the second write conflicts, and it counts again. A reservation stands in for its
// Exporter until the Exporter exists, when the uncached List counts it instead; one whose
// create never came lapses after ReservationGrace.

// reserveAttempts bounds how often one reservation is retried after losing a race.
const reserveAttempts = 8

// Ledger reserves places in budgets for one controller.
type Ledger struct {
	// Cache reads the sets a budget selects.
	Cache client.Reader
	// Live reads the budget and the Exporters uncached: a count from a lagging cache could
	// exceed the budget.
	Live client.Reader
	// Writer writes the budget's status (the reservations).
	Writer client.Client
	// Now is the controller's clock.
	Now func() time.Time
}

// Reserve takes the budgets' capacity for set's Exporters named, in order, and returns how
// many of them (a prefix) it got: every budget must have room for each. Those reserved in
// one budget beyond what a later one allowed stay reserved until they lapse; that only ever
// makes the count higher, never lower. retry reports a reservation lost to other writers
// reserveAttempts times: the caller tries again later.
func (l Ledger) Reserve(ctx context.Context, set *vtv1alpha1.ExporterSet, budgets []string, names []string, per corev1.ResourceList) (got int, retry bool, err error) {
	n := len(names)
	for _, b := range budgets {
		if n == 0 {
			break
		}
		got, retry, err := l.reserveIn(ctx, set, b, names[:n], per)
		if err != nil || retry {
			return 0, retry, err
		}
		n = got
	}
	return n, false, nil
}

// reserveIn reserves in one budget.
func (l Ledger) reserveIn(ctx context.Context, set *vtv1alpha1.ExporterSet, name string, names []string, per corev1.ResourceList) (int, bool, error) {
	key := types.NamespacedName{Namespace: set.Namespace, Name: name}
	for range reserveAttempts {
		var b vtv1alpha1.CapacityBudget
		if err := l.Live.Get(ctx, key, &b); err != nil {
			if apierrors.IsNotFound(err) {
				return len(names), false, nil // deleted since the pass read it: it limits nothing
			}
			return 0, false, fmt.Errorf("reading CapacityBudget %s: %w", name, err)
		}
		sets, err := SelectedSets(ctx, l.Cache, &b)
		if err != nil {
			return 0, false, err
		}
		governed := map[string]bool{set.Name: true} // the pass saw the budget select it
		for _, s := range sets {
			governed[s.Name] = true
		}
		exporters, err := ExportersOf(ctx, l.Live, set.Namespace)
		if err != nil {
			return 0, false, fmt.Errorf("CapacityBudget %s: %w", name, err)
		}
		now := l.Now()
		u, live := UsageOf(exporters, governed, b.Status.Reservations, now)
		k := 0
		limits := b.Spec.Limits
		for k < len(names) && u.Instances+1 <= limits.Instances && budget.Fits(u.Resources, per, limits.Resources) {
			u.Instances++
			u.Resources = budget.Add(u.Resources, per)
			live = append(live, vtv1alpha1.BudgetReservation{Exporter: names[k], Set: set.Name, Since: metav1.NewTime(now), Resources: per})
			k++
		}
		if k == 0 {
			return 0, false, nil // full: the budget's next status write (a place freed) wakes the set
		}
		b.Status.Reservations = live
		if err := l.Writer.Status().Update(ctx, &b); err != nil {
			if apierrors.IsConflict(err) {
				continue // another reservation or status write came first: count again
			}
			return 0, false, fmt.Errorf("reserving in CapacityBudget %s: %w", name, err)
		}
		return k, false, nil
	}
	return 0, true, nil
}
