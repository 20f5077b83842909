package jumpsim

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Booked leases (spec.beginTime), by upstream's rules: nothing is assigned and no condition
// is set before the begin time; the lease ends at spec.endTime, else spec.beginTime +
// duration, even when it was assigned late.

// nextSecond is a begin time d from now on a whole second: the apiserver keeps times in
// seconds, so the test compares with what it stores.
func nextSecond(d time.Duration) time.Time {
	return time.Now().Add(d).Truncate(time.Second).Add(time.Second)
}

func TestBookedLeaseWaitsWithoutCondition(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "e", board, false)
	begin := nextSecond(2 * time.Second)
	if _, err := sim.BookLease(ctx, ns, "later", Booking{Selector: board, Begin: begin, Duration: time.Minute}); err != nil {
		t.Fatal(err)
	}
	// Until the begin time: no exporter, no condition, the Exporter stays free.
	consistently(t, time.Until(begin)-300*time.Millisecond, func() error {
		l := getObj(t, &jsv1.Lease{ObjectMeta: objMeta(ns, "later")})
		if l.Status.ExporterRef != nil || len(l.Status.Conditions) > 0 || l.Status.Ended {
			return fmt.Errorf("before its begin time the booked lease has status %+v", l.Status)
		}
		if ex := getObj(t, &jsv1.Exporter{ObjectMeta: objMeta(ns, "e")}); ex.Status.LeaseRef != nil {
			return fmt.Errorf("the exporter is held by %s before the begin time", ex.Status.LeaseRef.Name)
		}
		return nil
	})
	got, err := sim.WaitLeaseAssigned(ctx, ns, "later")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.BeginTime.Time.Before(begin) {
		t.Fatalf("began %v, before its begin time %v", got.Status.BeginTime, begin)
	}
	// Assigned at the begin time by the requeue, not by the 5 s safety net.
	if late := got.Status.BeginTime.Sub(begin); late > 2*time.Second {
		t.Fatalf("assigned %s after its begin time", late)
	}
}

// A booked lease assigned late still ends at spec.beginTime + duration.
func TestBookedLeaseExpiresAtBeginPlusDuration(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "e", board, false)
	if _, err := sim.TakeLease(ctx, ns, "holder", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeaseAssigned(ctx, ns, "holder"); err != nil {
		t.Fatal(err)
	}
	begin := nextSecond(time.Second)
	const duration = 6 * time.Second
	if _, err := sim.BookLease(ctx, ns, "booked", Booking{Selector: board, Begin: begin, Duration: duration}); err != nil {
		t.Fatal(err)
	}
	// The holder keeps the exporter 3 s past the begin time.
	time.Sleep(time.Until(begin.Add(3 * time.Second)))
	if err := sim.ReleaseLease(ctx, ns, "holder"); err != nil {
		t.Fatal(err)
	}
	assigned, err := sim.WaitLeaseAssigned(ctx, ns, "booked")
	if err != nil {
		t.Fatal(err)
	}
	ended, err := sim.WaitLeaseEnded(ctx, ns, "booked")
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(ended, jsv1.LeaseConditionReady); c == nil || c.Reason != ReasonExpired {
		t.Fatalf("Ready %+v", c)
	}
	// By the old rule (actual start + duration) it would end at least 3 s after begin+duration.
	plannedEnd := begin.Add(duration)
	if ended.Status.EndTime.After(plannedEnd.Add(2 * time.Second)) {
		t.Fatalf("assigned at %v, ended at %v; want about %v (beginTime + duration)", assigned.Status.BeginTime, ended.Status.EndTime, plannedEnd)
	}
	if ended.Status.EndTime.Time.Before(plannedEnd) {
		t.Fatalf("ended at %v, before %v", ended.Status.EndTime, plannedEnd)
	}
}

// Both times given and no duration: the lease runs from beginTime to endTime.
func TestBookedLeaseWithoutDuration(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "e", board, false)
	begin := nextSecond(time.Second)
	end := begin.Add(3 * time.Second)
	if _, err := sim.BookLease(ctx, ns, "window", Booking{Selector: board, Begin: begin, End: end}); err != nil {
		t.Fatal(err)
	}
	assigned, err := sim.WaitLeaseAssigned(ctx, ns, "window")
	if err != nil {
		t.Fatal(err)
	}
	if assigned.Status.BeginTime.Time.Before(begin) {
		t.Fatalf("began %v, before %v", assigned.Status.BeginTime, begin)
	}
	ended, err := sim.WaitLeaseEnded(ctx, ns, "window")
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(ended, jsv1.LeaseConditionReady); c == nil || c.Reason != ReasonExpired || ended.Status.EndTime.Time.Before(end) || ended.Status.EndTime.After(end.Add(2*time.Second)) {
		t.Fatalf("ended at %v (want %v), Ready %+v", ended.Status.EndTime, end, c)
	}
}

// A booking whose beginTime + duration passed before it could be assigned ends Expired
// without an exporter.
func TestBookedLeasePastItsEnd(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "e", board, false)
	if _, err := sim.BookLease(ctx, ns, "missed", Booking{Selector: board, Begin: time.Now().Add(-time.Minute), Duration: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	l, err := sim.WaitLeaseEnded(ctx, ns, "missed")
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(l, jsv1.LeaseConditionReady); c == nil || c.Reason != ReasonExpired || l.Status.ExporterRef != nil {
		t.Fatalf("missed booking: exporter %v, Ready %+v", l.Status.ExporterRef, c)
	}
}

func objMeta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
