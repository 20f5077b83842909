package exporterset_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// budget creates a CapacityBudget of limit instances over the sets labelled lab=name.
func (w *world) budget(name string, limit int32) *vtv1alpha1.CapacityBudget {
	w.t.Helper()
	b := &vtv1alpha1.CapacityBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: vtv1alpha1.CapacityBudgetSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"lab": name}},
			Limits:   vtv1alpha1.BudgetLimits{Instances: limit},
		}}
	w.create(b)
	return b
}

// inBudget labels a set for the budget name.
func inBudget(name string) func(*vtv1alpha1.ExporterSet) {
	return func(s *vtv1alpha1.ExporterSet) { s.Labels = map[string]string{"lab": name} }
}

// setsSelector selects the Exporters of the sets named.
func setsSelector(t *testing.T, sets ...string) labels.Selector {
	r, err := labels.NewRequirement(pool.LabelSet, selection.In, sets)
	if err != nil {
		t.Fatal(err)
	}
	return labels.NewSelector().Add(*r)
}

func (w *world) getBudget(name string) *vtv1alpha1.CapacityBudget {
	w.t.Helper()
	var b vtv1alpha1.CapacityBudget
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &b); err != nil {
		w.t.Fatal(err)
	}
	return &b
}

// Two sets share a budget of 4. A's idle spares make room for B's waiting Leases; leased
// instances are never touched; the two never hold more than 4 Exporters at once, counted
// from a watch; A says ScalingLimited=True BudgetExhausted, naming the budget, while it is
// below its buffer, and is back at it once B's leases are released.
func TestBudgetServesWaitingLeasesBeforeSpares(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.budget("lab", 4)
	cw := w.watchExporters(setsSelector(t, "a", "b"), 4)
	w.set("a", 0, 4, 3, inBudget("lab"))
	w.set("b", 0, 4, 1, inBudget("lab"))
	w.waitStatus("a", 30*time.Second, "a: 3 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 3 })
	w.waitStatus("b", 30*time.Second, "b: 1 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 1 })

	start := time.Now()
	var leases []*jumpstarterv1alpha1.Lease
	for i := range 3 {
		leases = append(leases, w.lease(fmt.Sprintf("b-%d", i), "b"))
	}
	// A gives way: it is limited by the budget while below its buffer.
	st := w.waitStatus("a", 10*time.Second, "a: ScalingLimited=True BudgetExhausted naming lab, below its buffer", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(s.Conditions, vtv1alpha1.ConditionScalingLimited)
		return s.AvailableReplicas < 3 && c != nil && c.Status == metav1.ConditionTrue && c.Reason == string(vtv1alpha1.ReasonBudgetExhausted) && strings.Contains(c.Message, "lab")
	})
	t.Logf("a: %s", apimeta.FindStatusCondition(st.Conditions, vtv1alpha1.ConditionScalingLimited).Message)
	holders := map[string]string{}
	for _, l := range leases {
		holders[l.Name] = w.waitAssigned(l)
	}
	took := time.Since(start)
	t.Logf("3 leases for b assigned %v after they were created, with the budget exhausted", took)
	if took > 10*time.Second {
		t.Errorf("the leases took %v to be assigned, want at most 10s", took)
	}
	// No leased instance was touched: each holder is enabled, not retiring, and holds its
	// lease. The Jumpstarter core writes the Lease's exporterRef first and the Exporter's
	// leaseRef after it (as the simulator does), so the latter is waited for.
	for lease, holder := range holders {
		w.eventually(5*time.Second, holder+" showing lease "+lease, func() string {
			e := getExporter(t, w, holder)
			if !e.IsEnabled() || e.Annotations[pool.AnnotationRetiring] != "" || e.DeletionTimestamp != nil {
				t.Fatalf("%s holds lease %s and was disabled, retired or deleted", holder, lease)
			}
			if e.Status.LeaseRef == nil || e.Status.LeaseRef.Name != lease {
				return fmt.Sprintf("leaseRef %v", e.Status.LeaseRef)
			}
			return ""
		})
	}
	if n := w.eventCount("a", "BudgetReclaim"); n == 0 {
		t.Errorf("a recorded no BudgetReclaim event")
	}
	b := w.getBudget("lab")
	if b.Status.Used.Instances > 4 {
		t.Errorf("budget status used %d of 4", b.Status.Used.Instances)
	}

	// B's leases end (ExitAndReplace): its instances go, and A is back at its buffer.
	for _, l := range leases {
		w.release(l)
	}
	released := time.Now()
	w.waitStatus("a", 20*time.Second, "a: back at 3 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 3 })
	t.Logf("a back at 3 available %v after b's leases were released", time.Since(released))
	cw.check(t, 4, 7)
}
