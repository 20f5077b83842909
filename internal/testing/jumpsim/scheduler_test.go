package jumpsim

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

var board = map[string]string{"board": "x86-64-virtual"}

func cond(l *jsv1.Lease, typ string) *metav1.Condition {
	return meta.FindStatusCondition(l.Status.Conditions, typ)
}

func exporterObj(ns, name string) *jsv1.Exporter {
	return &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func leaseObj(ns, name string) *jsv1.Lease {
	return &jsv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func TestLeaseAssignedToFirstByName(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	for _, n := range []string{"exp-b", "exp-a", "exp-c"} {
		startExporter(t, sim, ns, n, board, false)
	}
	startExporter(t, sim, ns, "other", map[string]string{"board": "arm"}, false)

	if _, err := sim.TakeLease(ctx, ns, "l1", board, 0); err != nil {
		t.Fatal(err)
	}
	l, err := sim.WaitLeaseAssigned(ctx, ns, "l1")
	if err != nil {
		t.Fatal(err)
	}
	if l.Status.ExporterRef.Name != "exp-a" || l.Status.BeginTime == nil || l.Status.Ended {
		t.Fatalf("lease status %+v", l.Status)
	}
	if c := cond(l, jsv1.LeaseConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %+v", c)
	}
	exA := getObj(t, exporterObj(ns, "exp-a"))
	eventually(t, 5*time.Second, func() error {
		l = getObj(t, leaseObj(ns, "l1"))
		ref := metav1.GetControllerOf(l)
		if ref == nil || ref.UID != exA.UID || ref.Kind != "Exporter" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			return fmt.Errorf("lease controller %+v", ref)
		}
		exA = getObj(t, exA)
		if exA.Status.LeaseRef == nil || exA.Status.LeaseRef.Name != "l1" || exA.Status.ExporterStatusValue != jsv1.ExporterStatusLeaseReady {
			return fmt.Errorf("exporter leaseRef %v status %q", exA.Status.LeaseRef, exA.Status.ExporterStatusValue)
		}
		return nil
	})

	// The next lease gets the next name; a pinned one gets its pin.
	if _, err := sim.TakeLease(ctx, ns, "l2", board, 0); err != nil {
		t.Fatal(err)
	}
	pinned := &jsv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "l3"},
		Spec: jsv1.LeaseSpec{
			ClientRef:   exRef(TestClientName),
			Selector:    metav1.LabelSelector{MatchLabels: board},
			ExporterRef: ptr.To(exRef("exp-c")),
		},
	}
	if err := env.Client.Create(ctx, pinned); err != nil {
		t.Fatal(err)
	}
	for lease, want := range map[string]string{"l2": "exp-b", "l3": "exp-c"} {
		l, err := sim.WaitLeaseAssigned(ctx, ns, lease)
		if err != nil {
			t.Fatal(err)
		}
		if l.Status.ExporterRef.Name != want {
			t.Errorf("lease %s got %s, want %s", lease, l.Status.ExporterRef.Name, want)
		}
	}
}

func TestLeasePendingOffline(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	ex := createExporter(t, ns, "cold", board) // no Pod: never online
	if _, err := sim.TakeLease(ctx, ns, "wait", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeasePending(ctx, ns, "wait", ReasonOffline); err != nil {
		t.Fatal(err)
	}
	consistently(t, 300*time.Millisecond, func() error {
		if l := getObj(t, leaseObj(ns, "wait")); l.Status.Ended {
			return fmt.Errorf("lease ended while a matching exporter exists")
		}
		return nil
	})
	// The exporter coming up is an event: the waiting lease gets it.
	createConfigSecret(t, ex, false)
	createPod(t, ex, "cold")
	l, err := sim.WaitLeaseAssigned(ctx, ns, "wait")
	if err != nil {
		t.Fatal(err)
	}
	// Pending stays True after assignment, as upstream leaves it.
	if c := cond(l, jsv1.LeaseConditionPending); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Pending after assignment %+v", c)
	}
}

func TestLeaseNotAvailableUntilReleased(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "only", board, false) // InPlaceReuse: stays up after a lease
	if _, err := sim.TakeLease(ctx, ns, "first", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeaseAssigned(ctx, ns, "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.TakeLease(ctx, ns, "second", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeasePending(ctx, ns, "second", ReasonNotAvailable); err != nil {
		t.Fatal(err)
	}

	if err := sim.ReleaseLease(ctx, ns, "first"); err != nil {
		t.Fatal(err)
	}
	l, err := sim.WaitLeaseEnded(ctx, ns, "first")
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(l, jsv1.LeaseConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonReleased || l.Status.EndTime == nil {
		t.Fatalf("released lease: Ready %+v endTime %v", c, l.Status.EndTime)
	}
	eventually(t, 5*time.Second, func() error {
		if getObj(t, leaseObj(ns, "first")).Labels[jsv1.LeaseEndedLabel] != "true" {
			return fmt.Errorf("no ended label")
		}
		return nil
	})
	l, err = sim.WaitLeaseAssigned(ctx, ns, "second")
	if err != nil {
		t.Fatal(err)
	}
	if l.Status.ExporterRef.Name != "only" {
		t.Fatalf("second got %s", l.Status.ExporterRef.Name)
	}
	ex := getObj(t, exporterObj(ns, "only"))
	if ex.Status.LeaseRef == nil || ex.Status.LeaseRef.Name != "second" {
		eventually(t, 5*time.Second, func() error {
			if ex := getObj(t, exporterObj(ns, "only")); ex.Status.LeaseRef == nil || ex.Status.LeaseRef.Name != "second" {
				return fmt.Errorf("leaseRef %v", ex.Status.LeaseRef)
			}
			return nil
		})
	}
	if err := sim.ReleaseLease(ctx, ns, "second"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitExporter(ctx, ns, "only", func(e *jsv1.Exporter) bool {
		return e.Status.LeaseRef == nil && e.Status.ExporterStatusValue == jsv1.ExporterStatusAvailable && ExporterReady(e)
	}); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseNotReadyExporterSkipped(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "busy", board, false)
	if err := sim.SetExporterStatus(ctx, ns, "busy", jsv1.ExporterStatusAfterLeaseHookFailed, "hook failed"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.TakeLease(ctx, ns, "l", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeasePending(ctx, ns, "l", ReasonNotReady); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetExporterStatus(ctx, ns, "busy", "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeaseAssigned(ctx, ns, "l"); err != nil {
		t.Fatal(err)
	}
}
