package soak

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// The soak's CapacityBudget (issue 32): one budget over the sets marked budgeted (alpha,
// beta and delta, on two provisioners), whose limit binds some of the time: the three sets
// want 4 instances when idle (their floors add up to 2) and up to 10 with their leases, so
// with a limit of 3 to 6 (4 at first) the walk's leases exhaust it often but not always,
// and sets with waiting Leases take idle instances from the others (reclaims). The walk moves the limit now and then
// (budget-limit), up and down: the watched count is judged against the highest limit in
// effect over budgetLimitWindow (budgetwatch.go), so Exporters above a lowered limit are
// no violation, only one that joins beyond it once the window has passed.

const (
	// budgetName is the soak's CapacityBudget.
	budgetName = "shared"
	// budgetLabel is the set label its selector matches (value budgetName).
	budgetLabel = "soak.exporterset.dev/budget"
)

// budgetLimits are the limits the walk draws from; the first is the initial one.
var budgetLimits = []int32{4, 3, 5, 6}

// newBudget is the soak's CapacityBudget with the given limit of instances.
func newBudget(ns string, limit int32) *vtv1alpha1.CapacityBudget {
	return &vtv1alpha1.CapacityBudget{
		ObjectMeta: metav1.ObjectMeta{Name: budgetName, Namespace: ns},
		Spec: vtv1alpha1.CapacityBudgetSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{budgetLabel: budgetName}},
			Limits:   vtv1alpha1.BudgetLimits{Instances: limit},
		},
	}
}

// budgetCatalogue is the walk's budget action.
func (wk *Walk) budgetCatalogue() []action {
	return []action{{"budget-limit", 2, wk.budgetLimit}}
}

// budgetLimit sets the budget's limit to another of budgetLimits.
func (wk *Walk) budgetLimit(ctx context.Context) (string, bool, error) {
	limit := budgetLimits[wk.rng.Intn(len(budgetLimits))]
	var from int32
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var b vtv1alpha1.CapacityBudget
		if err := wk.w.c.Get(ctx, client.ObjectKey{Namespace: wk.w.ns, Name: budgetName}, &b); err != nil {
			return err
		}
		from = b.Spec.Limits.Instances
		b.Spec.Limits.Instances = limit
		return wk.w.c.Update(ctx, &b)
	})
	if err == nil && from == limit {
		return "", true, nil
	}
	return fmt.Sprintf("%s: limits.instances %d -> %d", budgetName, from, limit), false, err
}
