package soak

import (
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
)

// The refusal invariant (refusewatch.go), proven able to fail: the Jumpstarter simulator
// decides the leases, as upstream's core would, and no controller runs, so nothing makes
// the instance a set with room should hold.

// startSim starts a Jumpstarter simulator on the bench's namespace: it decides the leases.
func (b *bench) startSim() *jumpsim.Simulator {
	b.t.Helper()
	sim, err := jumpsim.New(env.Config, jumpsim.WithNamespaces(b.ns))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := sim.Start(b.ctx); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = sim.Stop() })
	return sim
}

// refusedLease takes a lease for board and waits until it has ended, refused for reason.
func (b *bench) refusedLease(sim *jumpsim.Simulator, name, board, reason string) {
	b.t.Helper()
	if _, err := sim.TakeLease(b.ctx, b.ns, name, map[string]string{"board": board}, 0); err != nil {
		b.t.Fatal(err)
	}
	l, err := sim.WaitLeaseEnded(b.ctx, b.ns, name)
	if err != nil {
		b.t.Fatal(err)
	}
	if c := refusedBy(l); c == nil || c.Reason != reason {
		b.t.Fatalf("lease %s ended with %+v, want Unsatisfiable %s", name, l.Status.Conditions, reason)
	}
}

// pastGrace waits out the refusal grace after the bench changed something.
func (b *bench) pastGrace() { time.Sleep(selfTestCeiling.RefuseGrace + 200*time.Millisecond) }

func TestCheckerDetectsLeaseRefusedWithRoom(t *testing.T) {
	b := newBench(t)
	sim := b.startSim()

	// An on-demand set (no Exporter at rest) with room: its user is refused NoAccess.
	b.set("ondemand", 3)
	b.pastGrace()
	b.refusedLease(sim, "lease-ondemand", "ondemand", jumpsim.ReasonNoAccess)
	b.expect(InvLeaseRefused, "lease-ondemand")

	// A set at a ceiling of 1 whose only instance the set itself retired (disabled with
	// the retiring annotation, its replacement not made): AllDisabled.
	one := b.set("one", 1)
	e := b.exporter("one-1", one, "")
	b.patch(e, func(e *jumpstarterv1alpha1.Exporter) {
		e.Annotations = map[string]string{expool.AnnotationRetiring: time.Now().UTC().Format(time.RFC3339)}
		e.Spec.Enabled = ptr.To(false)
	})
	b.pastGrace()
	b.refusedLease(sim, "lease-one", "one", jumpsim.ReasonAllDisabled)
	b.expect(InvLeaseRefused, "lease-one")
}

func TestCheckerExcusesLeaseRefusedWithoutRoom(t *testing.T) {
	b := newBench(t)
	sim := b.startSim()

	// A lease for no pool: Unsatisfiable is the Jumpstarter core's business.
	b.refusedLease(sim, "lease-nopool", "nopool", jumpsim.ReasonNoAccess)

	// A set a CapacityBudget of 0 governs: no room.
	b.create(newBudget(b.ns, 0))
	b.budgetedSet("starved", 0, 3)
	b.pastGrace()
	b.refusedLease(sim, "lease-starved", "starved", jumpsim.ReasonNoAccess)

	// A set whose one place is held by an Exporter a person disabled: no room.
	held := b.set("held", 1)
	e := b.exporter("held-1", held, "")
	b.patch(e, func(e *jumpstarterv1alpha1.Exporter) { e.Spec.Enabled = ptr.To(false) })
	b.pastGrace()
	b.refusedLease(sim, "lease-held", "held", jumpsim.ReasonAllDisabled)

	// A set just created: it has had no chance to make its first instance.
	b.set("fresh", 3)
	b.refusedLease(sim, "lease-fresh", "fresh", jumpsim.ReasonNoAccess)

	// A set whose class is gone.
	classless := b.set("classless", 3)
	b.delete(newClass(b.ns, &pool{set: classless.Name, class: classless.Spec.VirtualTargetClassName}))
	b.pastGrace()
	b.refusedLease(sim, "lease-classless", "classless", jumpsim.ReasonNoAccess)

	time.Sleep(refuseJudgeDelay + time.Second)
	// Each excused for its own reason, as the history's notes say.
	for l, why := range map[string]string{
		"lease-nopool":    "refused (NoAccess) for no pool",
		"lease-starved":   "starved: CapacityBudget shared has a limit of 0",
		"lease-held":      "held: Exporters disabled by hand (held-1) hold its ceiling 1 (maxReplicas 1, or its budget's allowed)",
		"lease-fresh":     "fresh: created",
		"lease-classless": "classless: its class classless does not exist",
	} {
		b.expectNone(InvLeaseRefused, l)
		found := false
		for _, e := range b.history.Entries() {
			found = found || (strings.Contains(e.Text, "lease "+l+" ") && strings.Contains(e.Text, why))
		}
		if !found {
			t.Errorf("no note that %s was excused with %q; history:\n%s", l, why, b.history.Tail(50))
		}
	}
	judged, noPool, excused := b.checker.RefuseStats()
	if judged != 5 || noPool != 1 || excused != 4 {
		t.Errorf("refusals judged %d (no pool %d, excused %d), want 5 (1, 4); history:\n%s", judged, noPool, excused, b.history.Tail(50))
	}
}

// A budget whose status allows a set 0 while the set wants more gives it a ceiling of 0,
// full or not (another set's floor took every place): the refusal is excused. Allowed 0
// while the set wants nothing is not: the budget, not full, leaves the set its spare place,
// and the set owes its Leases a standby.
func TestCheckerExcusesLeaseRefusedAtABudgetCeilingOfZero(t *testing.T) {
	b := newBench(t)
	sim := b.startSim()

	cb := newBudget(b.ns, 2)
	b.create(cb)
	b.budgetedSet("short", 1, 3)
	b.budgetedSet("spare", 0, 3)
	cb.Status.Used.Instances = 1 // not full
	cb.Status.Sets = []vtv1alpha1.BudgetSetStatus{{Name: "short", Wanted: 1, Allowed: 0}, {Name: "spare", Wanted: 0, Allowed: 0}}
	if err := b.c.Status().Update(b.ctx, cb); err != nil {
		t.Fatal(err)
	}
	b.pastGrace()
	b.refusedLease(sim, "lease-short", "short", jumpsim.ReasonNoAccess)
	b.refusedLease(sim, "lease-spare", "spare", jumpsim.ReasonNoAccess)

	b.expect(InvLeaseRefused, "lease-spare")
	b.expectNone(InvLeaseRefused, "lease-short")
	found := false
	for _, e := range b.history.Entries() {
		found = found || strings.Contains(e.Text, "lease lease-short ") && strings.Contains(e.Text, "gave it a ceiling of 0")
	}
	if !found {
		t.Errorf("no note that lease-short was excused for its budget's ceiling of 0; history:\n%s", b.history.Tail(50))
	}
}
