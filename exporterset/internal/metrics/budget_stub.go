package metrics

// Stand-ins until the budget metrics land (replaced by budget.go).

func (m *Metrics) ObserveBudget(ns, name string, used, limit map[string]float64, waiting int) {}
func (m *Metrics) CountReclaims(ns, budget, set string, n int)                                {}
func (m *Metrics) ForgetBudget(ns, name string)                                               {}
