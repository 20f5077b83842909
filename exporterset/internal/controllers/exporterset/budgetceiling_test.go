package exporterset

import (
	"testing"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// The ceiling a budget gives a set: its Allowed, one more while it has all it wants and a
// place is free, and that place kept while a roll holds it. Without the last, a budget that
// wrote the surge instance into its count took the spare away and the lower ceiling retired
// a serving outdated instance before its successor was available
// (TestBudgetLeavesRoomToSurge saw availability fall to 2 of 3 under load).
func TestBudgetCeilingOf(t *testing.T) {
	budget := func(limit, used int32) *vtv1alpha1.CapacityBudget {
		b := &vtv1alpha1.CapacityBudget{}
		b.Spec.Limits.Instances, b.Status.Used.Instances = limit, used
		return b
	}
	set := func(instances, wanted, allowed int32) vtv1alpha1.BudgetSetStatus {
		return vtv1alpha1.BudgetSetStatus{Name: "pool", Instances: instances, Wanted: wanted, Allowed: allowed}
	}
	cases := []struct {
		name    string
		b       *vtv1alpha1.CapacityBudget
		s       vtv1alpha1.BudgetSetStatus
		holds   int32
		rolling bool
		want    int32
	}{
		{"all it wants, a place free: one more to surge", budget(4, 3), set(3, 3, 3), 3, false, 4},
		{"all it wants, the budget full: its allowance", budget(3, 3), set(3, 3, 3), 3, false, 3},
		{"wants more than allowed: its allowance", budget(4, 3), set(3, 4, 3), 3, false, 3},
		{"a place it has just freed counts as free before the budget writes", budget(4, 4), set(4, 3, 3), 3, false, 4},
		{"surging, the budget not yet counting it: the spare stays", budget(4, 3), set(3, 3, 3), 4, true, 4},
		{"surging, the budget counting it: the spare stays its own", budget(4, 4), set(4, 3, 3), 4, true, 4},
		{"not rolling, over its allowance in the budget's count: the spare is gone", budget(4, 4), set(4, 3, 3), 4, false, 3},
		{"rolling, another set took the spare: its allowance", budget(4, 4), set(3, 3, 3), 3, true, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ceilingOf(c.b, c.s, c.holds, c.rolling); got != c.want {
				t.Errorf("ceiling %d, want %d", got, c.want)
			}
		})
	}
}
