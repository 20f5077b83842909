package controllerapp

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// budgetAccess is what the controller does with CapacityBudgets: watch them and write their
// status (reservations and allocation).
var budgetAccess = []struct{ verb, subresource string }{{"list", ""}, {"watch", ""}, {"update", "status"}}

// budgetsUsable reports whether CapacityBudgets can be honoured: their CRD is served and
// this controller may watch them and write their status in every namespace it serves
// (namespaces; none: the whole cluster). Otherwise it says why not. Under upstream's
// operator the Role grants none of it, and an informer on a kind it may not list would keep
// the cache from ever syncing: the controller then runs without budgets.
func budgetsUsable(ctx context.Context, mapper meta.RESTMapper, c client.Client, namespaces []string) (bool, string) {
	gk := schema.GroupKind{Group: vtv1alpha1.GroupVersion.Group, Kind: "CapacityBudget"}
	if _, err := mapper.RESTMapping(gk, vtv1alpha1.GroupVersion.Version); err != nil {
		return false, "the CapacityBudget CRD is not installed"
	}
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		for _, a := range budgetAccess {
			r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: a.verb, Group: gk.Group, Resource: "capacitybudgets", Subresource: a.subresource,
			}}}
			if err := c.Create(ctx, r); err != nil {
				return false, fmt.Sprintf("could not ask whether it may %s capacitybudgets: %v", a.verb, err)
			}
			if !r.Status.Allowed {
				where := "cluster-wide"
				if ns != "" {
					where = "in namespace " + ns
				}
				res := "capacitybudgets"
				if a.subresource != "" {
					res += "/" + a.subresource
				}
				return false, fmt.Sprintf("it may not %s %s %s", a.verb, res, where)
			}
		}
	}
	return true, ""
}
