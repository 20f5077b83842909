package exporterset_test

import (
	"sync/atomic"
	"testing"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
)

// While the gate is shut for a set's provisioner the reconciler writes nothing at all, not
// even status; opened, the set is reconciled within the gate's retry, without an event.
func TestGateLeavesSetsAlone(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	var open atomic.Bool
	var asked atomic.Value
	w.controller(env.Config, exporterset.WithProvisionerGate(func(ns, p string) bool {
		asked.Store(ns + "/" + p)
		return open.Load()
	}))
	w.set("pool", 2, 4, 0)
	time.Sleep(3 * time.Second)
	if got := w.getSet("pool"); got.Status.ObservedGeneration != 0 || len(got.Status.Conditions) != 0 {
		t.Fatalf("status written behind a shut gate: %s", summary(got.Status))
	}
	if n := len(w.exporters("pool")); n != 0 {
		t.Fatalf("%d instances created behind a shut gate", n)
	}
	if p, _ := asked.Load().(string); p != w.ns+"/"+fakeprov.Name {
		t.Fatalf("the gate was asked about %q, want the set's namespace and its class's provisioner %q", p, w.ns+"/"+fakeprov.Name)
	}
	opened := time.Now()
	open.Store(true)
	w.waitStatus("pool", 20*time.Second, "2 ready once the gate opened", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 2 })
	t.Logf("reconciled %s after the gate opened", time.Since(opened).Round(100*time.Millisecond))
}

// GateOpened, as the controller calls it when it takes a lock, reconciles the namespace's
// sets at once instead of at the gate's next retry (2 s after the shut ask).
func TestGateOpenedReconcilesAtOnce(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	var open atomic.Bool
	asks := make(chan time.Time, 100)
	w.controller(env.Config, exporterset.WithProvisionerGate(func(ns, p string) bool {
		select {
		case asks <- time.Now():
		default:
		}
		return open.Load()
	}))
	w.set("pool", 1, 2, 0)
	select {
	case <-asks: // the first, shut ask: the set waits for the gate's retry
	case <-time.After(20 * time.Second):
		t.Fatal("the gate was never asked")
	}
	open.Store(true)
	opened := time.Now()
	if err := w.rec.GateOpened(w.ctx, w.ns); err != nil {
		t.Fatal(err)
	}
	var next time.Time
	select {
	case next = <-asks:
	case <-time.After(20 * time.Second):
		t.Fatal("the gate was not asked again")
	}
	if d := next.Sub(opened); d > time.Second {
		t.Fatalf("the set was looked at again %s after GateOpened: the gate's retry, not GateOpened", d.Round(10*time.Millisecond))
	}
	w.waitStatus("pool", 20*time.Second, "status written once the gate opened", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ObservedGeneration != 0 })
}
