package exporterset_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
)

// Two budgets select one set: it says so (BudgetConflict, naming both) and holds what the
// stricter allows.
func TestBudgetConflictStricterApplies(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.budget("lab", 3)
	strict := w.budget("strict", 1)
	w.edit(strict, func() { strict.Spec.Selector.MatchLabels = map[string]string{"lab": "lab"} })
	cw := w.watchCeiling("pool", 1)
	w.set("pool", 0, 4, 3, inBudget("lab"))
	st := w.waitStatus("pool", 20*time.Second, "BudgetConflict naming both, 1 available", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(s.Conditions, vtv1alpha1.ConditionBudgetConflict)
		return s.AvailableReplicas == 1 && c != nil && c.Status == metav1.ConditionTrue && c.Reason == string(vtv1alpha1.ReasonMultipleBudgets) &&
			strings.Contains(c.Message, "lab, strict") && strings.Contains(c.Message, "strict's, 1")
	})
	t.Logf("BudgetConflict: %s", apimeta.FindStatusCondition(st.Conditions, vtv1alpha1.ConditionBudgetConflict).Message)
	time.Sleep(2 * time.Second) // nothing more may come
	cw.check(t, 1, 1)
}

// A standby (its gate shut for the sets' provisioner) writes no allocation: only a process
// that acts on a governed set does.
func TestBudgetStandbyWritesNothing(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config, exporterset.WithProvisionerGate(func(string, string) bool { return false }))
	w.budget("lab", 3)
	w.set("pool", 0, 4, 2, inBudget("lab"))
	time.Sleep(3 * time.Second)
	if st := w.getBudget("lab").Status; len(st.Sets) != 0 || len(st.Conditions) != 0 {
		t.Errorf("a standby wrote the budget's status: %+v", st)
	}
	w.controller(env.Config) // an active process
	w.eventually(20*time.Second, "the active process's allocation", func() string {
		if st := w.getBudget("lab").Status; len(st.Sets) != 1 || st.Sets[0].Name != "pool" {
			return fmt.Sprintf("status %+v", st)
		}
		return ""
	})
}

// A governed set rolls by surge while its budget has a place free: sampled every 100 ms,
// availableReplicas never drops below the buffer, and the budget is never exceeded.
func TestBudgetLeavesRoomToSurge(t *testing.T) {
	w := newWorld(t, jumpsim500msStart()...)
	w.class("fake")
	w.controller(env.Config)
	w.budget("lab", 4)
	cw := w.watchExporters(setsSelector(t, "pool"), 4)
	set := w.set("pool", 0, 6, 3, inBudget("lab"))
	w.waitHealthy("pool", 3, 30*time.Second)
	lowest, samples := w.rollSampled(set, 3)
	if lowest < 3 {
		t.Errorf("availableReplicas dropped to %d during the roll under a budget with a place free (buffer 3; %d samples)", lowest, samples)
	}
	t.Logf("lowest availableReplicas during the roll: %d (%d samples)", lowest, samples)
	cw.check(t, 4, 6)
}
