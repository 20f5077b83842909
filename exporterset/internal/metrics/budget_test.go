package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exporterset/exporterset/exporterset/internal/fixture"
)

// gaugeValue is the value of the series of name with exactly these labels' values, and
// whether it exists.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	m := metricSample(t, reg, name, labels)
	if m == nil {
		return 0, false
	}
	if m.GetGauge() != nil {
		return m.GetGauge().GetValue(), true
	}
	return m.GetCounter().GetValue(), true
}

func TestBudgetSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, fixture.Epoch)
	lab := func(resource string) map[string]string {
		return map[string]string{"namespace": "ns", "budget": "lab", "resource": resource}
	}

	m.ObserveBudget("ns", "lab", map[string]float64{BudgetInstances: 3, "cpu": 6}, map[string]float64{BudgetInstances: 4, "cpu": 8}, 2)
	m.ObserveBudget("ns", "other", map[string]float64{BudgetInstances: 1}, map[string]float64{BudgetInstances: 9}, 0)
	for _, c := range []struct {
		name     string
		labels   map[string]string
		want     float64
		wantSeen bool
	}{
		{"exporterset_budget_used", lab(BudgetInstances), 3, true},
		{"exporterset_budget_used", lab("cpu"), 6, true},
		{"exporterset_budget_limit", lab(BudgetInstances), 4, true},
		{"exporterset_budget_limit", lab("cpu"), 8, true},
		{"exporterset_budget_limit", lab("memory"), 0, false},
		{"exporterset_budget_waiting_leases", map[string]string{"namespace": "ns", "budget": "lab"}, 2, true},
		{"exporterset_budget_waiting_leases", map[string]string{"namespace": "ns", "budget": "other"}, 0, true},
		{"exporterset_budget_limit", map[string]string{"namespace": "ns", "budget": "other", "resource": BudgetInstances}, 9, true},
	} {
		got, seen := gaugeValue(t, reg, c.name, c.labels)
		if seen != c.wantSeen || got != c.want {
			t.Errorf("%s%v = %v (exists %v), want %v (exists %v)", c.name, c.labels, got, seen, c.want, c.wantSeen)
		}
	}

	// cpu taken out of the limits: its series go, the instance count's stay.
	m.ObserveBudget("ns", "lab", map[string]float64{BudgetInstances: 4}, map[string]float64{BudgetInstances: 4}, 0)
	for _, name := range []string{"exporterset_budget_used", "exporterset_budget_limit"} {
		if _, seen := gaugeValue(t, reg, name, lab("cpu")); seen {
			t.Errorf("%s{resource=cpu} outlived cpu's limit", name)
		}
		if v, _ := gaugeValue(t, reg, name, lab(BudgetInstances)); v != 4 {
			t.Errorf("%s{resource=instances} = %v, want 4", name, v)
		}
	}
	if v, _ := gaugeValue(t, reg, "exporterset_budget_waiting_leases", map[string]string{"namespace": "ns", "budget": "lab"}); v != 0 {
		t.Errorf("waiting leases = %v after they were served, want 0", v)
	}

	m.CountReclaims("ns", "lab", "a", 2)
	m.CountReclaims("ns", "lab", "a", 1)
	m.CountReclaims("ns", "lab", "b", 0)
	if v, _ := gaugeValue(t, reg, "exporterset_budget_reclaims_total", map[string]string{"namespace": "ns", "budget": "lab", "set": "a"}); v != 3 {
		t.Errorf("reclaims of a = %v, want 3", v)
	}
	if _, seen := gaugeValue(t, reg, "exporterset_budget_reclaims_total", map[string]string{"set": "b"}); seen {
		t.Error("a count of 0 made a series")
	}

	// A deleted set's reclaims go with it; another set's stay.
	m.CountReclaims("ns", "lab", "c", 1)
	m.Forget("ns", "c")
	if _, seen := gaugeValue(t, reg, "exporterset_budget_reclaims_total", map[string]string{"set": "c"}); seen {
		t.Error("the reclaims of a forgotten set remain")
	}
	if _, seen := gaugeValue(t, reg, "exporterset_budget_reclaims_total", map[string]string{"set": "a"}); !seen {
		t.Error("forgetting set c dropped set a's reclaims")
	}

	// A deleted budget's series go; another budget's stay.
	m.ForgetBudget("ns", "lab")
	for _, name := range []string{"exporterset_budget_used", "exporterset_budget_limit", "exporterset_budget_reclaims_total", "exporterset_budget_waiting_leases"} {
		if _, seen := gaugeValue(t, reg, name, map[string]string{"namespace": "ns", "budget": "lab"}); seen {
			t.Errorf("%s of the forgotten budget remains", name)
		}
	}
	if v, seen := gaugeValue(t, reg, "exporterset_budget_used", map[string]string{"namespace": "ns", "budget": "other"}); !seen || v != 1 {
		t.Errorf("the other budget's used = %v (exists %v), want 1", v, seen)
	}
}

// A nil *Metrics records nothing and does not panic, as for the sets' series.
func TestBudgetSeriesNilSafe(t *testing.T) {
	var m *Metrics
	m.ObserveBudget("ns", "lab", map[string]float64{BudgetInstances: 1}, nil, 1)
	m.CountReclaims("ns", "lab", "a", 1)
	m.ForgetBudget("ns", "lab")
}
