package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// budgetMetrics are the CapacityBudgets' series (issue 32), labelled by the budget, not by a
// set: a budget is its own object, and its reconciler alone writes them.
type budgetMetrics struct {
	used, limit *prometheus.GaugeVec
	reclaims    *prometheus.CounterVec
	waiting     *prometheus.GaugeVec
}

// BudgetInstances is the resource label of a budget's instance count.
const BudgetInstances = "instances"

func newBudgetMetrics() budgetMetrics {
	labels := []string{"namespace", "budget"}
	resource := []string{"namespace", "budget", "resource"}
	return budgetMetrics{
		used: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "exporterset_budget_used",
			Help: "What the budget's governed sets hold, reservations included, by resource: instances, or a Pod request the budget limits (cpu in cores, memory in bytes).",
		}, resource),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "exporterset_budget_limit",
			Help: "The budget's limit, by resource: instances, or a Pod request it limits (cpu in cores, memory in bytes).",
		}, resource),
		reclaims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "exporterset_budget_reclaims_total",
			Help: "Idle instances the budget asked a set to retire to make room for another set's waiting or booked leases.",
		}, []string{"namespace", "budget", "set"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "exporterset_budget_waiting_leases",
			Help: "Leases waiting for an instance of one of the budget's governed sets.",
		}, labels),
	}
}

func (b budgetMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{b.used, b.limit, b.reclaims, b.waiting}
}

// ObserveBudget sets a budget's gauges: used and limit by resource (BudgetInstances for the
// instance count, else the resource's name, in its base unit), and the waiting leases. A
// resource observed before and absent now (taken out of the limits) loses its series.
func (m *Metrics) ObserveBudget(ns, name string, used, limit map[string]float64, waiting int) {
	if m == nil {
		return
	}
	for _, g := range []struct {
		vec    *prometheus.GaugeVec
		values map[string]float64
	}{{m.budget.used, used}, {m.budget.limit, limit}} {
		for r, v := range g.values {
			g.vec.WithLabelValues(ns, name, r).Set(v)
		}
		for _, r := range resourcesOf(g.vec, ns, name) {
			if _, ok := g.values[r]; !ok {
				g.vec.DeleteLabelValues(ns, name, r)
			}
		}
	}
	m.budget.waiting.WithLabelValues(ns, name).Set(float64(waiting))
}

// resourcesOf lists the resource label values vec has for the budget. The series are read
// back from the vector, so no second copy of them is kept to drift.
func resourcesOf(vec *prometheus.GaugeVec, ns, name string) []string {
	ch := make(chan prometheus.Metric)
	go func() { vec.Collect(ch); close(ch) }()
	var out []string
	for mt := range ch {
		var pb dto.Metric
		if err := mt.Write(&pb); err != nil {
			continue
		}
		have := map[string]string{}
		for _, l := range pb.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		if have["namespace"] == ns && have["budget"] == name {
			out = append(out, have["resource"])
		}
	}
	return out
}

// CountReclaims counts n idle instances the budget asked set to retire for another set's
// demand (nil-safe).
func (m *Metrics) CountReclaims(ns, budget, set string, n int) {
	if m != nil && n > 0 {
		m.budget.reclaims.WithLabelValues(ns, budget, set).Add(float64(n))
	}
}

// ForgetBudget drops a deleted budget's series.
func (m *Metrics) ForgetBudget(ns, name string) {
	if m == nil {
		return
	}
	match := prometheus.Labels{"namespace": ns, "budget": name}
	m.budget.used.DeletePartialMatch(match)
	m.budget.limit.DeletePartialMatch(match)
	m.budget.reclaims.DeletePartialMatch(match)
	m.budget.waiting.DeletePartialMatch(match)
}
