package soak

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
)

// The CapacityBudget invariants, broken by hand with no controller running.

// budgetedSet creates a class and a set the soak's budget selects.
func (b *bench) budgetedSet(name string, minR, maxR int32) *vtv1alpha1.ExporterSet {
	p := &pool{set: name, class: name, provisioner: fakeprov.Name, recycle: vtv1alpha1.RecycleExitAndReplace, min: minR, max: maxR, budgeted: true}
	b.create(newClass(b.ns, p))
	s := newSet(b.ns, p)
	b.create(s)
	return s
}

// setLimit changes the budget's limit.
func (b *bench) setLimit(limit int32) {
	b.t.Helper()
	var cb vtv1alpha1.CapacityBudget
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: b.ns, Name: budgetName}, &cb); err != nil {
		b.t.Fatal(err)
	}
	cb.Spec.Limits.Instances = limit
	if err := b.c.Update(b.ctx, &cb); err != nil {
		b.t.Fatal(err)
	}
}

func TestCheckerDetectsBudgetExceeded(t *testing.T) {
	b := newBench(t)
	b.create(newBudget(b.ns, 2))
	one := b.budgetedSet("one", 0, 4)
	two := b.budgetedSet("two", 0, 4)
	free := b.set("free", 4) // not governed: its Exporters do not count
	b.exporter("one-1", one, "")
	b.exporter("two-1", two, "")
	b.exporter("free-1", free, "")
	b.exporter("free-2", free, "")
	time.Sleep(ceilingJudgeDelay + time.Second)
	b.expectNone(InvBudgetExceeded, budgetName)

	// A third governed Exporter, beside two that exist, exceeds the limit of 2.
	b.exporter("two-2", two, "")
	b.expect(InvBudgetExceeded, budgetName)
}

func TestCheckerDetectsStarvationBesideIdleSpares(t *testing.T) {
	b := newBench(t)
	b.create(newBudget(b.ns, 3))
	hungry := b.budgetedSet("hungry", 0, 3)
	rich := b.budgetedSet("rich", 0, 3)
	b.instance("rich-1", rich, "h", true)
	b.instance("rich-2", rich, "h", true)
	_ = hungry
	l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lease-hungry"},
		Spec: jumpstarterv1alpha1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "c"}, Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": "hungry"}}}}
	b.create(l)
	l.Status.Conditions = []metav1.Condition{{Type: jumpstarterv1alpha1.LeaseConditionPending, Status: metav1.ConditionTrue, Reason: "NotAvailable", Message: "soak self-test", LastTransitionTime: metav1.Now()}}
	if err := b.c.Status().Update(b.ctx, l); err != nil {
		t.Fatal(err)
	}
	// With room left in the budget (2 of 3), the Lease waits for its own set, not for the
	// budget: no violation.
	time.Sleep(3 * selfTestCeiling.Starve)
	b.expectNone(InvBudgetStarved, "lease-hungry")

	// Full (2 of 2) with rich's two idle instances above its floor of 0, and no
	// controller to reclaim one: the Lease starves.
	b.setLimit(2)
	b.expect(InvBudgetStarved, "lease-hungry")
}

func TestFinalDetectsBudgetStatusProblems(t *testing.T) {
	b := newBench(t)
	cb := newBudget(b.ns, 4)
	b.create(cb)
	set := b.budgetedSet("counted", 0, 4)
	b.exporter("counted-1", set, "")
	b.exporter("counted-2", set, "")
	// A status nobody computed: one Exporter counted, a reservation whose create never
	// came and that is older than the grace, and one still within it.
	cb.Status = vtv1alpha1.CapacityBudgetStatus{
		ObservedGeneration: cb.Generation,
		Used:               vtv1alpha1.BudgetUsage{Instances: 1},
		Sets:               []vtv1alpha1.BudgetSetStatus{{Name: "counted", Instances: 1}},
		Reservations: []vtv1alpha1.BudgetReservation{
			{Exporter: "ghost", Set: "counted", Since: metav1.NewTime(time.Now().Add(-time.Minute))},
			{Exporter: "coming", Set: "counted", Since: metav1.NewTime(time.Now().Add(time.Minute))},
			{Exporter: "counted-1", Set: "counted", Since: metav1.NewTime(time.Now().Add(-time.Minute))},
		},
	}
	if err := b.c.Status().Update(b.ctx, cb); err != nil {
		t.Fatal(err)
	}
	joined := b.final()
	for _, want := range []string{
		"budget shared: reservation for Exporter ghost (set counted)",
		"budget shared: status.used.instances 1, but 2 governed Exporters exist (with the reservations not yet created: 3)",
		"budget shared: status.sets[counted].instances 1, want 3",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("the final check missed %q", want)
		}
	}
	if strings.Contains(joined, "reservation for Exporter coming") || strings.Contains(joined, "reservation for Exporter counted-1") {
		t.Errorf("the final check refused a reservation within its grace or one whose Exporter exists")
	}
}
