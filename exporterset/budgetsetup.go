package exporterset

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// setupBudgets registers the budget reconciler (WithCapacityBudgets). It watches the
// budgets, the sets (their labels decide which budget governs them), their Exporters (what
// the budget counts) and Leases (the demand), each mapped to the budgets of its namespace.
func (r *Reconciler) setupBudgets(mgr ctrl.Manager) error {
	toBudgets := handler.EnqueueRequestsFromMapFunc(r.budgetsOfNamespace)
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.name+"-budget").
		For(&vtv1alpha1.CapacityBudget{}).
		Watches(&vtv1alpha1.ExporterSet{}, toBudgets).
		Watches(&jumpstarterv1alpha1.Exporter{}, toBudgets, builder.WithPredicates(exporterOfASet)).
		Watches(&jumpstarterv1alpha1.Lease{}, toBudgets).
		Complete(budgetReconciler{r})
}

// budgetsOfNamespace maps an object to every budget of its namespace: there are few, and a
// budget's pass decides what concerns it.
func (r *Reconciler) budgetsOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list vtv1alpha1.CapacityBudgetList
	if err := r.client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}

// setsOfBudget maps a budget to the sets it selects now or allocated for before (a set
// whose label was removed must hear that it is no longer governed).
func (r *Reconciler) setsOfBudget(ctx context.Context, o client.Object) []reconcile.Request {
	cb, ok := o.(*vtv1alpha1.CapacityBudget)
	if !ok {
		return nil
	}
	var sets vtv1alpha1.ExporterSetList
	if err := r.client.List(ctx, &sets, client.InNamespace(cb.Namespace)); err != nil {
		return nil
	}
	listed := map[string]bool{}
	for _, s := range cb.Status.Sets {
		listed[s.Name] = true
	}
	return requestsFor(sets.Items, func(s *vtv1alpha1.ExporterSet) bool { return listed[s.Name] || budgetSelects(cb, s) })
}

// exporterOfASet passes the events of Exporters that belong to a set, and of those only the
// changes a budget counts (exporterChanged: no heartbeats).
var exporterOfASet = predicate.And(predicate.NewPredicateFuncs(func(o client.Object) bool {
	e, ok := o.(*jumpstarterv1alpha1.Exporter)
	return ok && setNameOf(e) != ""
}), exporterChanged)
