package soak

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// reservationGrace is the controller's: a reservation whose Exporter never came is dropped
// once it is this old (exporterset/internal/ledger).
const reservationGrace = 20 * time.Second

// budgetFinal is the final state of the namespace's CapacityBudgets, read from the API
// server: for each, the problems of its status, and whether it is full (its governed sets'
// Exporters number at least its limit). A full budget excuses its sets' warm buffers,
// floors and begun bookings in the final check: the budget holds them back by design
// (floors are served only while they fit, spares after demand), and whether it hands its
// capacity out as it should is the starvation invariant's to judge, which runs during the
// settle too.
//
// The status must be current (observedGeneration), its reservations must each name an
// existing Exporter or be younger than the reservation grace, and used.instances, like
// each set's instances, must equal the governed Exporters that exist plus the reservations
// of the set not seen as Exporters yet.
func budgetFinal(budgets []vtv1alpha1.CapacityBudget, sets []vtv1alpha1.ExporterSet, exporters []jumpstarterv1alpha1.Exporter, now time.Time) (problems []string, full map[string]bool) {
	full = map[string]bool{}
	exists := map[string]bool{}
	for i := range exporters {
		exists[exporters[i].Name] = true
	}
	for i := range budgets {
		b := &budgets[i]
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("budget %s: ", b.Name)+fmt.Sprintf(format, args...))
		}
		sel, err := metav1.LabelSelectorAsSelector(&b.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		governed := map[string]bool{}
		for j := range sets {
			if sel.Matches(labels.Set(sets[j].Labels)) {
				governed[sets[j].Name] = true
			}
		}
		perSet := map[string]int32{}
		var count int32
		for j := range exporters {
			if s := budgetSetOf(&exporters[j]); governed[s] {
				perSet[s]++
				count++
			}
		}
		if count >= b.Spec.Limits.Instances {
			for s := range governed {
				full[s] = true
			}
		}
		if b.Status.ObservedGeneration != b.Generation {
			bad("status.observedGeneration %d, generation %d", b.Status.ObservedGeneration, b.Generation)
		}
		want := count
		for _, r := range b.Status.Reservations {
			switch {
			case exists[r.Exporter]:
			case now.Sub(r.Since.Time) < reservationGrace:
				if governed[r.Set] {
					want++
					perSet[r.Set]++
				}
			default:
				bad("reservation for Exporter %s (set %s) made %s ago: no such Exporter, and older than the grace %s", r.Exporter, r.Set, now.Sub(r.Since.Time).Round(time.Second), reservationGrace)
			}
		}
		if b.Status.Used.Instances != want {
			bad("status.used.instances %d, but %d governed Exporters exist (with the reservations not yet created: %d)", b.Status.Used.Instances, count, want)
		}
		listed := map[string]bool{}
		for _, s := range b.Status.Sets {
			listed[s.Name] = true
			if governed[s.Name] && s.Instances != perSet[s.Name] {
				bad("status.sets[%s].instances %d, want %d", s.Name, s.Instances, perSet[s.Name])
			}
		}
		var missing []string
		for s := range governed {
			if !listed[s] {
				missing = append(missing, s)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			bad("status.sets lacks the governed sets %v", missing)
		}
	}
	return problems, full
}
