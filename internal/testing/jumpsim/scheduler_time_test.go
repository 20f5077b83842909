package jumpsim

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// The scheduler over time: the after-lease delay, expiry, invalid selectors
// and a restart that keeps assignments.

func TestAfterLeaseDelay(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t, WithAfterLeaseDelay(time.Second))
	ctx := testCtx(t)
	startExporter(t, sim, ns, "hooked", board, false)
	if _, err := sim.TakeLease(ctx, ns, "a", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeaseAssigned(ctx, ns, "a"); err != nil {
		t.Fatal(err)
	}
	if err := sim.ReleaseLease(ctx, ns, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitExporter(ctx, ns, "hooked", func(e *jsv1.Exporter) bool {
		return e.Status.ExporterStatusValue == jsv1.ExporterStatusAfterLeaseHook
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.TakeLease(ctx, ns, "b", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeasePending(ctx, ns, "b", ReasonNotReady); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeaseAssigned(ctx, ns, "b"); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseExpires(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "e", board, false)
	if _, err := sim.TakeLease(ctx, ns, "short", board, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	l, err := sim.WaitLeaseAssigned(ctx, ns, "short")
	if err != nil {
		t.Fatal(err)
	}
	l, err = sim.WaitLeaseEnded(ctx, ns, "short")
	if err != nil {
		t.Fatal(err)
	}
	took := l.Status.EndTime.Sub(l.Status.BeginTime.Time)
	if c := cond(l, jsv1.LeaseConditionReady); c.Reason != ReasonExpired || took < 1*time.Second || took > 6*time.Second {
		t.Fatalf("expired after %s, Ready %+v", took, c)
	}
	if _, err := sim.WaitExporter(ctx, ns, "e", func(e *jsv1.Exporter) bool { return e.Status.LeaseRef == nil }); err != nil {
		t.Fatal(err)
	}

	// spec.endTime ends a lease as well, even one never assigned.
	past := metav1.NewTime(time.Now().Add(-time.Minute))
	late := &jsv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"},
		Spec:       jsv1.LeaseSpec{ClientRef: exRef(TestClientName), Selector: metav1.LabelSelector{MatchLabels: board}, EndTime: &past},
	}
	if err := env.Client.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	l, err = sim.WaitLeaseEnded(ctx, ns, "late")
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(l, jsv1.LeaseConditionReady); c == nil || c.Reason != ReasonExpired || l.Status.ExporterRef != nil {
		t.Fatalf("late lease %+v", l.Status)
	}
}

func TestLeaseInvalidSelector(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	l := &jsv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
		Spec: jsv1.LeaseSpec{ClientRef: exRef(TestClientName), Selector: metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "board", Operator: "Near", Values: []string{"x"}}},
		}},
	}
	if err := env.Client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	got, err := sim.WaitLeaseEnded(ctx, ns, "bad")
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(got, jsv1.LeaseConditionInvalid); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Invalid %+v", c)
	}
}

// A new Simulator (a restart) picks up the assignments of the previous one from the
// apiserver: a held exporter is not handed out again.
func TestSimulatorRestartKeepsAssignments(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "exp-a", board, false)
	startExporter(t, sim, ns, "exp-b", board, false)
	if _, err := sim.TakeLease(ctx, ns, "l1", board, 0); err != nil {
		t.Fatal(err)
	}
	if l, err := sim.WaitLeaseAssigned(ctx, ns, "l1"); err != nil || l.Status.ExporterRef.Name != "exp-a" {
		t.Fatalf("l1: %v", err)
	}
	if err := sim.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(ctx); err == nil {
		t.Fatal("a stopped simulator started again")
	}

	again, err := New(env.Config, WithNamespaces(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = again.Stop() }()
	if _, err := again.TakeLease(ctx, ns, "l2", board, 0); err != nil {
		t.Fatal(err)
	}
	l, err := again.WaitLeaseAssigned(ctx, ns, "l2")
	if err != nil {
		t.Fatal(err)
	}
	if l.Status.ExporterRef.Name != "exp-b" {
		t.Fatalf("l2 got %s after the restart", l.Status.ExporterRef.Name)
	}
}
