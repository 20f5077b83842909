package pool_test

import (
	"testing"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// Each way the plan retires an instance has its reason for exporterset_retirements_total.
func TestRetirementReasons(t *testing.T) {
	reasonOf := func(in pool.PlanInput, name string) pool.RetirementReason {
		t.Helper()
		p := pool.PlanScale(in)
		for _, i := range p.Retire {
			if i.Name() == name {
				return p.RetirementReason(i)
			}
		}
		t.Fatalf("%s not retired: %v", name, fixture.Names(p.Retire))
		return ""
	}

	surplus := input(0, 4, 1, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready, fixture.CreatedAt(time.Second)))
	surplus.SurplusSince = at(-time.Hour)
	if r := reasonOf(surplus, "b"); r != pool.RetiredScaledDown {
		t.Errorf("surplus after the cooldown: %q, want scaled-down", r)
	}
	old := input(0, 4, 0, fixture.Instance("a", fixture.Ready, fixture.Hash("old")), fixture.Instance("b", fixture.Ready, fixture.Leased("l")))
	if r := reasonOf(old, "a"); r != pool.RetiredRolled {
		t.Errorf("outdated: %q, want rolled", r)
	}
	crashing := fixture.Instance("a", fixture.Online, fixture.WithProblem(&pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Replace: true}))
	if r := reasonOf(input(0, 4, 1, crashing, fixture.Instance("b", fixture.Ready, fixture.Leased("l"))), "a"); r != pool.RetiredFailed {
		t.Errorf("crash loop: %q, want failed", r)
	}
	budget := input(0, 4, 1, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready, fixture.CreatedAt(time.Second)))
	budget.BudgetCeiling = new(int32) // the budget took both places
	if r := reasonOf(budget, "b"); r != pool.RetiredReclaimed {
		t.Errorf("over a budget's lower ceiling: %q, want reclaimed", r)
	}
	if len(pool.RetirementReasons()) != 8 {
		t.Errorf("%d reasons, the metric documents 8", len(pool.RetirementReasons()))
	}
}
