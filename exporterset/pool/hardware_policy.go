package pool

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Counting free boards toward the buffer pays off only when upstream's core hands a Lease to
// a free board before a free virtual instance. The core (lease_controller.go,
// orderApprovedExporters) orders the free approved Exporters by spot access (last), then by
// the priority of the ExporterAccessPolicy rule approving the client (highest first), then
// by name; with no policy in the namespace it approves every Exporter at priority 0.

// BoardsNotPreferred says why the core may hand a Lease to one of the set's virtual
// instances while a board is free, or "" when every board outranks them. boards are the
// Exporters the set's hardware selector names (no pool's), instance the labels the set's
// instances carry, policies those of the namespace. Client selectors are not judged: a
// board's rank is the best priority any non-spot rule of a policy selecting it gives, and
// so is the instances'. A board no rule approves is named: it never takes a Lease at all.
func BoardsNotPreferred(policies []jumpstarterv1alpha1.ExporterAccessPolicy, boards []jumpstarterv1alpha1.Exporter, instance labels.Set) string {
	var named []*jumpstarterv1alpha1.Exporter
	for i := range boards {
		if e := &boards[i]; isBoard(e) {
			named = append(named, e)
		}
	}
	if len(named) == 0 {
		return ""
	}
	slices.SortFunc(named, func(a, b *jumpstarterv1alpha1.Exporter) int { return strings.Compare(a.Name, b.Name) })
	if len(policies) == 0 {
		return "no ExporterAccessPolicy in the namespace: the Jumpstarter controller approves boards and instances alike at priority 0 and hands free ones out by name, so a Lease may go to a virtual instance while a board is free"
	}
	inst, instFrom, ok := bestPriority(policies, instance)
	if !ok {
		return "" // no rule approves the instances: no Lease goes to them
	}
	for _, e := range named {
		p, from, ok := bestPriority(policies, e.Labels)
		switch {
		case !ok:
			return fmt.Sprintf("board %s is approved by no ExporterAccessPolicy rule: the Jumpstarter controller never hands it a Lease, yet it counts toward the buffer while free", e.Name)
		case p <= inst:
			return fmt.Sprintf("board %s ranks at priority %d (ExporterAccessPolicy %s), not above the set's instances at %d (%s): a Lease may go to a virtual instance while the board is free", e.Name, p, from, inst, instFrom)
		}
	}
	return ""
}

// bestPriority is the highest priority a non-spot rule with clients gives an Exporter of
// labels set, and the policy that gives it; ok is false when no such rule selects it.
func bestPriority(policies []jumpstarterv1alpha1.ExporterAccessPolicy, set labels.Set) (best int, from string, ok bool) {
	for i := range policies {
		pol := &policies[i]
		sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.ExporterSelector)
		if err != nil || !sel.Matches(set) {
			continue // the core fails the Lease on a selector that does not parse; nothing to rank
		}
		for _, rule := range pol.Spec.Policies {
			if rule.SpotAccess || len(rule.From) == 0 {
				continue
			}
			if !ok || rule.Priority > best {
				best, from, ok = rule.Priority, pol.Name, true
			}
		}
	}
	return best, from, ok
}
