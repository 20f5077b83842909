package capacitybudget

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
	"github.com/exporterset/exporterset/exporterset/internal/ledger"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
)

// SetupWithManager registers the controller under name. It watches the budgets, the sets
// (their labels decide which budget governs them), their Exporters (what the budget counts)
// and Leases (the demand), each mapped to the budgets of its namespace.
func (b *Reconciler) SetupWithManager(mgr ctrl.Manager, name string) error {
	toBudgets := handler.EnqueueRequestsFromMapFunc(b.budgetsOfNamespace)
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&vtv1alpha1.CapacityBudget{}).
		Watches(&vtv1alpha1.ExporterSet{}, toBudgets).
		Watches(&jumpstarterv1alpha1.Exporter{}, toBudgets, builder.WithPredicates(exporterOfASet)).
		Watches(&jumpstarterv1alpha1.Lease{}, toBudgets).
		Complete(b)
}

// budgetsOfNamespace maps an object to every budget of its namespace: there are few, and a
// budget's pass decides what concerns it.
func (b *Reconciler) budgetsOfNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list vtv1alpha1.CapacityBudgetList
	if err := b.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}

// exporterOfASet passes the events of Exporters that belong to a set, and of those only the
// changes a budget counts (no heartbeats).
var exporterOfASet = predicate.And(predicate.NewPredicateFuncs(func(o client.Object) bool {
	e, ok := o.(*jumpstarterv1alpha1.Exporter)
	return ok && ledger.SetNameOf(e) != ""
}), objects.ExporterChanged())
