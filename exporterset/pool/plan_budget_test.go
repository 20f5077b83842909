package pool_test

import (
	"testing"

	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

func budgetCeiling(n int32) *int32 { return &n }

// A budget's ceiling caps the set as maxReplicas does, 0 included, and the lower of the two
// limits it; its excess is reclaimed from idle instances only.
func TestPlanBudgetCeiling(t *testing.T) {
	ready := func(name string) *pool.Instance { return fixture.Instance(name, fixture.Ready) }
	leased := func(name string) *pool.Instance {
		return fixture.Instance(name, fixture.Ready, fixture.Leased("l-"+name))
	}

	// 0 is a ceiling, not "unbounded": nothing is created, and the idle instance goes.
	in := input(0, 4, 2, ready("a"))
	in.BudgetCeiling = budgetCeiling(0)
	p := pool.PlanScale(in)
	if p.Create != 0 || p.CreateAfterRemove != 0 || !p.Limited || !p.BudgetLimited {
		t.Errorf("ceiling 0: Create %d+%d Limited %v BudgetLimited %v, want nothing created, limited by the budget", p.Create, p.CreateAfterRemove, p.Limited, p.BudgetLimited)
	}
	if got := fixture.Names(p.Reclaimed); len(got) != 1 || got[0] != "a" {
		t.Errorf("ceiling 0: reclaimed %v, want [a]", got)
	}

	// Reclaimed instances are idle ones only: the leased ones stay whatever the ceiling.
	in = input(0, 4, 1, leased("a"), ready("b"), ready("c"), leased("d"))
	in.BudgetCeiling = budgetCeiling(1)
	p = pool.PlanScale(in)
	for _, i := range p.Retire {
		if i.Leased() {
			t.Errorf("retired leased instance %s", i.Name())
		}
	}
	if got := fixture.Names(p.Reclaimed); len(got) != 2 {
		t.Errorf("reclaimed %v, want b and c", got)
	}

	// Below the budget's ceiling it grows up to it, and no further.
	in = input(0, 4, 3, ready("a"))
	in.BudgetCeiling = budgetCeiling(2)
	p = pool.PlanScale(in)
	if p.Create != 1 || !p.BudgetLimited || p.Wanted != 3 {
		t.Errorf("budget 2, maxReplicas 4, wants 3: Create %d BudgetLimited %v Wanted %d, want 1, true, 3", p.Create, p.BudgetLimited, p.Wanted)
	}

	// A budget above maxReplicas: maxReplicas limits, not the budget.
	in = input(0, 2, 3, ready("a"))
	in.BudgetCeiling = budgetCeiling(10)
	p = pool.PlanScale(in)
	if p.Create != 1 || !p.Limited || p.BudgetLimited || len(p.Reclaimed) != 0 {
		t.Errorf("budget 10, maxReplicas 2: Create %d Limited %v BudgetLimited %v, want 1, true, false", p.Create, p.Limited, p.BudgetLimited)
	}

	// Unbounded maxReplicas (0) with a budget: the budget is the ceiling.
	in = input(0, 0, 5, ready("a"))
	in.BudgetCeiling = budgetCeiling(3)
	p = pool.PlanScale(in)
	if p.Create != 2 || !p.BudgetLimited {
		t.Errorf("maxReplicas 0, budget 3: Create %d BudgetLimited %v, want 2, true", p.Create, p.BudgetLimited)
	}
}
