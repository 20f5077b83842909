package exporterset

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/budget"
	"github.com/exporterset/exporterset/exporterset/internal/ledger"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
)

// governance is what the CapacityBudgets selecting a set say to one of its passes.
type governance struct {
	// budgets select the set, by name.
	budgets []*vtv1alpha1.CapacityBudget
	// ceiling is the lowest ceiling the budgets' status gives the set (ceilingOf), nil
	// when none has allocated for it yet (a budget's reservations still bound its creates).
	ceiling *int32
	// strictest names the budget ceiling comes from.
	strictest string
}

// governed reports whether any budget selects the set.
func (g governance) governed() bool { return len(g.budgets) > 0 }

// names are the budgets' names, sorted.
func (g governance) names() []string {
	out := make([]string, len(g.budgets))
	for i, b := range g.budgets {
		out[i] = b.Name
	}
	return out
}

// governanceOf reads the budgets of the set's namespace from the cache; holds is how many
// Exporters the set holds now, as this pass sees them, and rolling whether some of them are
// outdated (replaced by surge).
func (r *Reconciler) governanceOf(ctx context.Context, set *vtv1alpha1.ExporterSet, holds int32, rolling bool) (governance, error) {
	var g governance
	if !r.Budgets {
		return g, nil
	}
	var list vtv1alpha1.CapacityBudgetList
	if err := r.client.List(ctx, &list, client.InNamespace(set.Namespace)); err != nil {
		return g, fmt.Errorf("listing CapacityBudgets: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for i := range list.Items {
		b := &list.Items[i]
		if b.DeletionTimestamp != nil || !ledger.Selects(b, set) {
			continue
		}
		g.budgets = append(g.budgets, b)
		for _, s := range b.Status.Sets {
			if c := ceilingOf(b, s, holds, rolling); s.Name == set.Name && (g.ceiling == nil || c < *g.ceiling) {
				g.ceiling, g.strictest = &c, b.Name
			}
		}
	}
	return g, nil
}

// ceilingOf is the ceiling a budget gives a set: its Allowed, and one more while the set
// has all it wants and the budget has a place free. The allocation grants a set no more
// than it wants, so without that one a governed set could never surge: every roll and
// idle-age replacement would retire first, leaving the set one short meanwhile, however
// empty the budget. The spare place is only room: the set's plan creates above what it
// wants only to surge, and its reservation still needs the place free (internal/ledger).
// The budget's count is as fresh as its last status: the set's own part of it is taken
// from what the pass holds now (holds), so a place the set itself has just freed counts
// as free before the budget has written again. While the set rolls, the place it took to
// surge stays its own: counted as used, it would take the spare away the moment the budget
// wrote the surge instance into its count, and the ceiling, one lower, would retire an
// outdated instance that still serves before its successor is available.
func ceilingOf(b *vtv1alpha1.CapacityBudget, s vtv1alpha1.BudgetSetStatus, holds int32, rolling bool) int32 {
	own := holds
	if rolling {
		own = min(holds, s.Allowed)
	}
	used := b.Status.Used.Instances - s.Instances + own
	if s.Allowed >= s.Wanted && used < b.Spec.Limits.Instances {
		return s.Allowed + 1
	}
	return s.Allowed
}

// budgetConflictCondition says whether more than one budget selects the set; ok=false
// removes the condition (at most one does).
func budgetConflictCondition(cond condFunc, g governance) (metav1.Condition, bool) {
	if len(g.budgets) < 2 {
		return metav1.Condition{}, false
	}
	now := "none has allocated for the set yet"
	if g.ceiling != nil {
		now = fmt.Sprintf("now %s's, %d", g.strictest, *g.ceiling)
	}
	return cond(vtv1alpha1.ConditionBudgetConflict, true, vtv1alpha1.ReasonMultipleBudgets,
		"CapacityBudgets %s all select this set: each bounds its creates, and the stricter ceiling applies (%s)",
		strings.Join(g.names(), ", "), now), true
}

// instanceRequests is what one new instance of the set requests, as its provisioner renders
// its Pod (budget.PodRequests), when a governing budget limits resources; nil otherwise.
func (r *Reconciler) instanceRequests(ctx context.Context, p *pass) (corev1.ResourceList, error) {
	limited := false
	for _, b := range p.gov.budgets {
		limited = limited || len(b.Spec.Limits.Resources) > 0
	}
	if !limited || p.prov == nil || p.req == nil {
		return nil, nil
	}
	e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: p.set.Name + "-budget", Namespace: p.set.Namespace, Labels: objects.InstanceLabels(p.set, p.hash)}}
	pod, err := p.prov.RenderPod(ctx, p.req.ForExporter(e, objects.ConfigSecretName(e.Name)))
	if err != nil {
		return nil, fmt.Errorf("rendering an instance's Pod to count its requests against the CapacityBudget: %w", err)
	}
	rl := budget.PodRequests(pod)
	if rl == nil {
		rl = corev1.ResourceList{} // recorded as requesting nothing, not as unknown
	}
	return rl, nil
}
