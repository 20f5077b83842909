package pool

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Hardware first: physical boards (Exporters no pool owns) that serve the same Leases as a
// set count toward its warm buffer, so virtual instances run only for what the free boards
// cannot serve. docs/hardware-first.md.

// isBoard reports whether e can be a board at all: it is no pool's instance (no controller
// owner, no set label), whatever its labels.
func isBoard(e *jumpstarterv1alpha1.Exporter) bool {
	return metav1.GetControllerOf(e) == nil && e.Labels[LabelSet] == ""
}

// FreeBoard reports whether e can take the next Lease as a board: it is a board (isBoard),
// enabled and not being deleted, Online and Registered, unleased, and reports itself
// Available (or nothing yet).
func FreeBoard(e *jumpstarterv1alpha1.Exporter) bool {
	if !isBoard(e) || e.DeletionTimestamp != nil {
		return false
	}
	in := &Instance{Exporter: e}
	if !in.Ready() || !in.Enabled() || in.Leased() {
		return false
	}
	switch e.Status.ExporterStatusValue {
	case "", jumpstarterv1alpha1.ExporterStatusAvailable, jumpstarterv1alpha1.ExporterStatusUnspecified:
		return true
	}
	return false
}

// FreeBoards returns the names, sorted, of the Exporters among exporters (a list's items, as
// its callers hold them) that sel matches and FreeBoard accepts. A nil or empty selector
// names no boards.
func FreeBoards(exporters []jumpstarterv1alpha1.Exporter, sel labels.Selector) []string {
	if sel == nil || sel.Empty() {
		return nil
	}
	var out []string
	for i := range exporters {
		if e := &exporters[i]; sel.Matches(labels.Set(e.Labels)) && FreeBoard(e) {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}

// buffer is the warm buffer the set's own instances must hold: minAvailableReplicas less the
// free boards, never below 0.
func (in PlanInput) buffer() int32 { return Buffer(in.MinAvailableReplicas, in.FreeBoards) }

// Buffer is the part of a warm buffer of minAvailable that a set's own instances hold while
// freeBoards boards are free: the rule PlanScale and the Available condition share.
func Buffer(minAvailable, freeBoards int32) int32 { return max(0, minAvailable-freeBoards) }
