package jumpsim

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Leases that can never be assigned end Unsatisfiable with upstream's reasons and words
// (jumpstarter-controller b1f2bb41, lease_controller.go, reconcileStatusExporterRef).

// checkUnsatisfiable waits for lease name to end Unsatisfiable with reason and message, with
// the ended label and no exporter. Pending is left as upstream leaves it (never set here: the
// lease never waited).
func checkUnsatisfiable(t *testing.T, ctx context.Context, sim *Simulator, ns, name, reason, message string) {
	t.Helper()
	l, err := sim.WaitLeaseEnded(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	c := cond(l, jsv1.LeaseConditionUnsatisfiable)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason || c.Message != message {
		t.Fatalf("%s: Unsatisfiable %+v, want True %s %q", name, c, reason, message)
	}
	if p := cond(l, jsv1.LeaseConditionPending); p != nil && p.Status != metav1.ConditionTrue {
		t.Errorf("%s: Pending %+v: upstream never sets it False", name, p)
	}
	if l.Status.ExporterRef != nil {
		t.Fatalf("%s assigned", name)
	}
	eventually(t, 5*time.Second, func() error {
		if getObj(t, leaseObj(ns, name)).Labels[jsv1.LeaseEndedLabel] != "true" {
			return fmt.Errorf("%s has no ended label", name)
		}
		return nil
	})
}

// waitCached waits until the simulator's cache shows the Exporter as check wants it: the
// scheduler decides from that cache, as upstream's does from its informers, so a lease must
// come after the cache has seen a change to be decided on it.
func waitCached(t *testing.T, ctx context.Context, sim *Simulator, ex *jsv1.Exporter, check func(*jsv1.Exporter) bool) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		var got jsv1.Exporter
		if err := sim.client.Get(ctx, client.ObjectKeyFromObject(ex), &got); err != nil {
			return err
		}
		if !check(&got) {
			return fmt.Errorf("the simulator's cache does not show %s as wanted yet", ex.Name)
		}
		return nil
	})
}

func TestLeaseUnsatisfiable(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)

	// Nothing matches at all: NoAccess, "0 exporters".
	if _, err := sim.TakeLease(ctx, ns, "nomatch", board, 0); err != nil {
		t.Fatal(err)
	}
	checkUnsatisfiable(t, ctx, sim, ns, "nomatch", ReasonNoAccess, "While there are 0 exporters matching the selector, none of them are approved by any policy for your client")

	// Matches exist but all are disabled: AllDisabled with their number, and spec.allowDisabled
	// does not change that for a selector (upstream filters disabled matches regardless).
	for _, name := range []string{"disabled-a", "disabled-b"} {
		ex := startExporter(t, sim, ns, name, board, false)
		ex.Spec.Enabled = ptr.To(false)
		if err := env.Client.Update(ctx, ex); err != nil {
			t.Fatal(err)
		}
		waitCached(t, ctx, sim, ex, func(e *jsv1.Exporter) bool { return !e.IsEnabled() })
	}
	if _, err := sim.TakeLease(ctx, ns, "alldisabled", board, 0); err != nil {
		t.Fatal(err)
	}
	checkUnsatisfiable(t, ctx, sim, ns, "alldisabled", ReasonAllDisabled, "All 2 exporters matching the selector are disabled")
	create := func(name string, spec jsv1.LeaseSpec) {
		t.Helper()
		spec.ClientRef = exRef(TestClientName)
		if err := env.Client.Create(ctx, &jsv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	create("allow-by-selector", jsv1.LeaseSpec{Selector: metav1.LabelSelector{MatchLabels: board}, AllowDisabled: true})
	checkUnsatisfiable(t, ctx, sim, ns, "allow-by-selector", ReasonAllDisabled, "All 2 exporters matching the selector are disabled")

	// Pinned leases: the Exporter must exist, match a non-empty selector, and be enabled
	// unless the lease allows disabled ones.
	create("pin-missing", jsv1.LeaseSpec{Selector: metav1.LabelSelector{MatchLabels: board}, ExporterRef: ptr.To(exRef("nope"))})
	checkUnsatisfiable(t, ctx, sim, ns, "pin-missing", ReasonExporterNotFound, "Requested exporter nope was not found")
	create("pin-mismatch", jsv1.LeaseSpec{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": "other"}}, ExporterRef: ptr.To(exRef("disabled-a"))})
	checkUnsatisfiable(t, ctx, sim, ns, "pin-mismatch", ReasonSelectorMismatch, "Requested exporter disabled-a does not match selector board=other")
	create("pin-disabled", jsv1.LeaseSpec{Selector: metav1.LabelSelector{MatchLabels: board}, ExporterRef: ptr.To(exRef("disabled-a"))})
	checkUnsatisfiable(t, ctx, sim, ns, "pin-disabled", ReasonExporterDisabled, "Requested exporter disabled-a is disabled. To lease a disabled exporter, set spec.allowDisabled: true on the Lease, or use --allow-disabled with jmp create lease")
	// Pinned with allowDisabled, and no selector at all (valid when pinned): assigned.
	create("pin-allowed", jsv1.LeaseSpec{ExporterRef: ptr.To(exRef("disabled-b")), AllowDisabled: true})
	l, err := sim.WaitLeaseAssigned(ctx, ns, "pin-allowed")
	if err != nil {
		t.Fatal(err)
	}
	if l.Status.ExporterRef.Name != "disabled-b" {
		t.Fatalf("pin-allowed got %s", l.Status.ExporterRef.Name)
	}
	waitCount(t, sim, ActionLeaseUnsatisfiable, 6)

}

// A waiting lease is decided again at every pass, from the cache, as upstream's is: when the
// last Exporter it could get goes away (an instance replaced at its set's ceiling) it ends
// NoAccess, and when the last one is disabled (retired, quarantined) it ends AllDisabled. It
// does not wait for a replacement. This is the real core's behaviour the pool must live
// with; the simulator was friendlier once, confirming "nothing matches" with a live read
// (the real core makes none), which no longer happens.
func TestWaitingLeaseEndsWhenItsLastExporterGoes(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)

	// Deleted: NoAccess.
	gone := createExporter(t, ns, "gone", map[string]string{"board": "gone"}) // no Pod: never online
	waitCached(t, ctx, sim, gone, func(*jsv1.Exporter) bool { return true })
	if _, err := sim.TakeLease(ctx, ns, "waits-gone", map[string]string{"board": "gone"}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeasePending(ctx, ns, "waits-gone", ReasonOffline); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	checkUnsatisfiable(t, ctx, sim, ns, "waits-gone", ReasonNoAccess, "While there are 0 exporters matching the selector, none of them are approved by any policy for your client")
	// It waited, so Pending stays True with its last reason, as upstream leaves it.
	if p := cond(getObj(t, leaseObj(ns, "waits-gone")), jsv1.LeaseConditionPending); p == nil || p.Status != metav1.ConditionTrue || p.Reason != ReasonOffline {
		t.Errorf("Pending after the end %+v", p)
	}

	// Disabled: AllDisabled.
	off := createExporter(t, ns, "off", map[string]string{"board": "off"})
	waitCached(t, ctx, sim, off, func(*jsv1.Exporter) bool { return true })
	if _, err := sim.TakeLease(ctx, ns, "waits-off", map[string]string{"board": "off"}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeasePending(ctx, ns, "waits-off", ReasonOffline); err != nil {
		t.Fatal(err)
	}
	off = getObj(t, off)
	off.Spec.Enabled = ptr.To(false)
	if err := env.Client.Update(ctx, off); err != nil {
		t.Fatal(err)
	}
	checkUnsatisfiable(t, ctx, sim, ns, "waits-off", ReasonAllDisabled, "All 1 exporters matching the selector are disabled")
}
