package pool_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// readyAt is the trait of an instance ready (online, registered, running) since Epoch+d.
func readyAt(d time.Duration) fixture.Trait {
	return func(in *pool.Instance) {
		fixture.Ready(in)
		for k := range in.Exporter.Status.Conditions {
			in.Exporter.Status.Conditions[k].LastTransitionTime = metav1.NewTime(fixture.Epoch.Add(d))
		}
	}
}

// idleInput is a pool with a buffer of minAvail and ceiling maxR whose instances may be idle
// for 20s (jittered ±2s); now is Epoch+1h.
func idleInput(maxR, minAvail int32, instances ...*pool.Instance) pool.PlanInput {
	in := input(0, maxR, minAvail, instances...)
	in.MaxIdleAge = 20 * time.Second
	in.Cooldown = time.Hour
	return in
}

const hour = time.Hour

func TestIdleAgeRollsBySurge(t *testing.T) {
	// a is idle since an hour ago, b and c just became ready.
	a, b, c := fixture.Instance("a", readyAt(0)), fixture.Instance("b", readyAt(hour-time.Second)), fixture.Instance("c", readyAt(hour-time.Second))
	p := pool.PlanScale(idleInput(6, 3, a, b, c))
	if p.IdleAged != a || p.Create != 1 || len(p.Retire) != 0 {
		t.Fatalf("first the replacement, the old one stays: idleAged=%s create=%d retire=%v", nameOf(p.IdleAged), p.Create, fixture.Names(p.Retire))
	}
	// The set looks again when b's (or c's) deadline falls: 20s±2s after their readiness.
	if p.RequeueAfter < 17*time.Second || p.RequeueAfter > 21*time.Second {
		t.Errorf("requeue after %v, want b's or c's jittered deadline (19s±2s)", p.RequeueAfter)
	}

	// The replacement is created, not yet available: nothing more happens.
	d := fixture.Instance("d")
	p = pool.PlanScale(idleInput(6, 3, a, b, c, d))
	if p.IdleAged != a || p.Create != 0 || len(p.Retire) != 0 {
		t.Fatalf("replacement booting: idleAged=%s create=%d retire=%v", nameOf(p.IdleAged), p.Create, fixture.Names(p.Retire))
	}

	// Available: the old one goes, for its idle age.
	d = fixture.Instance("d", readyAt(hour))
	p = pool.PlanScale(idleInput(6, 3, a, b, c, d))
	if got := fixture.Names(p.Retire); len(got) != 1 || got[0] != "a" || p.Create != 0 {
		t.Fatalf("replacement available: retire %v create %d, want a and no create", got, p.Create)
	}
	if r := p.RetirementReason(a); r != pool.RetiredIdleAge {
		t.Errorf("reason %q, want idle-age", r)
	}
}

func TestIdleAgeOneAtATime(t *testing.T) {
	a, b := fixture.Instance("a", readyAt(0)), fixture.Instance("b", readyAt(10*time.Minute))
	c := fixture.Instance("c", readyAt(hour))
	p := pool.PlanScale(idleInput(6, 3, a, b, c))
	if p.IdleAged != a || p.Create != 1 {
		t.Fatalf("the one overdue longest first: idleAged=%s create=%d", nameOf(p.IdleAged), p.Create)
	}
	// While a retirement is in flight, nothing else is rolled.
	gone := fixture.Instance("x", fixture.Retiring)
	p = pool.PlanScale(idleInput(6, 3, gone, b, c))
	if p.IdleAged != nil {
		t.Fatalf("rolled %s while x retires", nameOf(p.IdleAged))
	}
}

func TestIdleAgeNeverLeasedNorBooked(t *testing.T) {
	leased := fixture.Instance("a", readyAt(0), fixture.Leased("l"))
	if p := pool.PlanScale(idleInput(6, 1, leased, fixture.Instance("b", readyAt(hour)))); p.IdleAged != nil || len(p.Retire) != 0 {
		t.Fatalf("a leased instance is never idle: idleAged=%s retire=%v", nameOf(p.IdleAged), fixture.Names(p.Retire))
	}
	in := idleInput(6, 1, fixture.Instance("a", readyAt(0)))
	in.Bookings = []pool.Booking{{Name: "soon", Begin: in.Now.Add(time.Minute)}}
	in.LeadTime = 2 * time.Minute
	if p := pool.PlanScale(in); p.IdleAged != nil || len(p.Retire) != 0 {
		t.Fatalf("a booking due counts on the warm instances: idleAged=%s retire=%v", nameOf(p.IdleAged), fixture.Names(p.Retire))
	}
	// Disabled by a person, or failing: not a member of the warm pool, not rolled for age.
	if p := pool.PlanScale(idleInput(6, 0, fixture.Instance("a", readyAt(0), fixture.Disabled))); p.IdleAged != nil {
		t.Fatalf("rolled a disabled instance")
	}
}

// At the ceiling no replacement fits beside the old instance: it waits while the pool has
// only its buffer, and goes at once when the pool can spare it.
func TestIdleAgeAtTheCeiling(t *testing.T) {
	a, b := fixture.Instance("a", readyAt(0)), fixture.Instance("b", readyAt(hour))
	p := pool.PlanScale(idleInput(2, 2, a, b))
	if p.IdleAged != nil || len(p.Retire) != 0 || p.Create+p.CreateAfterRemove != 0 {
		t.Fatalf("at the ceiling with the buffer only: idleAged=%s retire=%v create=%d", nameOf(p.IdleAged), fixture.Names(p.Retire), p.Create)
	}
	c := fixture.Instance("c", readyAt(hour))
	p = pool.PlanScale(idleInput(3, 2, a, b, c)) // a surplus of one, in its cooldown
	if got := fixture.Names(p.Retire); len(got) != 1 || got[0] != "a" {
		t.Fatalf("at the ceiling above the buffer: retire %v, want a", got)
	}
	if p.Create+p.CreateAfterRemove != 0 {
		t.Errorf("no replacement needed above the buffer: create %d+%d", p.Create, p.CreateAfterRemove)
	}
}

func TestIdleSinceLaterOfReadyAndLeaseEnd(t *testing.T) {
	in := fixture.Instance("a", readyAt(0))
	in.Exporter.Annotations = map[string]string{pool.AnnotationLastLease: "l1"}
	if _, ok := in.IdleSince(); ok {
		t.Fatal("idle although the end of its last lease is not recorded")
	}
	in.Exporter.Annotations[pool.AnnotationIdleSince] = fixture.Epoch.Add(hour - 5*time.Second).Format(time.RFC3339)
	since, ok := in.IdleSince()
	if !ok || !since.Equal(fixture.Epoch.Add(hour-5*time.Second)) {
		t.Fatalf("idle since %v (%v), want the lease's end", since, ok)
	}
	// 5s idle of 20s: not due; due in 15s±2s.
	p := pool.PlanScale(idleInput(6, 1, in))
	if p.IdleAged != nil || p.RequeueAfter < 13*time.Second || p.RequeueAfter > 17*time.Second {
		t.Fatalf("idleAged=%s requeue %v, want none and 15s±2s", nameOf(p.IdleAged), p.RequeueAfter)
	}
}

func TestIdleDeadlineJitter(t *testing.T) {
	seen := map[time.Time]bool{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		in := fixture.Instance(name, readyAt(0))
		due, ok := pool.IdleDeadline(in, 100*time.Second)
		again, _ := pool.IdleDeadline(fixture.Instance(name, readyAt(0)), 100*time.Second)
		if !ok || !due.Equal(again) {
			t.Fatalf("%s: deadline %v then %v: not deterministic", name, due, again)
		}
		if off := due.Sub(fixture.Epoch); off < 90*time.Second || off > 110*time.Second {
			t.Errorf("%s: deadline %v after ready, want 100s±10%%", name, off)
		}
		seen[due] = true
	}
	if len(seen) < 4 {
		t.Errorf("8 instances share %d deadlines: the jitter does not spread them", len(seen))
	}
}

func TestMaxUseCount(t *testing.T) {
	used := func(n string) fixture.Trait {
		return func(in *pool.Instance) {
			in.Exporter.Annotations = map[string]string{pool.AnnotationUseCount: n, pool.AnnotationLastLease: "l" + n,
				pool.AnnotationIdleSince: fixture.Epoch.Format(time.RFC3339)}
		}
	}
	reuse := func(in pool.PlanInput) pool.PlanInput {
		in.Recycle = vtv1alpha1.RecycleInPlaceReuse
		in.MaxUseCount = 2
		return in
	}
	a, b := fixture.Instance("a", fixture.Ready, used("2")), fixture.Instance("b", fixture.Ready, used("1"))
	p := pool.PlanScale(reuse(input(0, 2, 2, a, b)))
	if got := fixture.Names(p.Retire); len(got) != 1 || got[0] != "a" {
		t.Fatalf("retire %v, want a (served 2 of 2)", got)
	}
	if p.RetirementReason(a) != pool.RetiredMaxUse {
		t.Errorf("reason %q, want max-use", p.RetirementReason(a))
	}
	// At the ceiling its replacement follows its removal, never beside it.
	if p.Create != 0 {
		t.Errorf("created %d beside it at the ceiling", p.Create)
	}
	if p = pool.PlanScale(reuse(input(0, 3, 2, a, b))); p.Create != 1 {
		t.Errorf("below the ceiling: create %d, want its replacement", p.Create)
	}
	// Never while leased.
	leased := fixture.Instance("a", fixture.Ready, used("2"), fixture.Leased("l2"))
	if p = pool.PlanScale(reuse(input(0, 3, 1, leased, b))); len(p.Retire) != 0 {
		t.Fatalf("retired %v while leased", fixture.Names(p.Retire))
	}
	// Counted (from its Lease) but its end not seen yet: not retired.
	counting := fixture.Instance("a", fixture.Ready, used("2"))
	delete(counting.Exporter.Annotations, pool.AnnotationIdleSince)
	if p = pool.PlanScale(reuse(input(0, 3, 1, counting, b))); len(p.Retire) != 0 {
		t.Fatalf("retired %v before its last lease was seen to end", fixture.Names(p.Retire))
	}
	// ExitAndReplace: every instance serves one lease anyway.
	in := reuse(input(0, 2, 2, a, b))
	in.Recycle = vtv1alpha1.RecycleExitAndReplace
	if p = pool.PlanScale(in); len(p.Retire) != 0 {
		t.Fatalf("retired %v under ExitAndReplace", fixture.Names(p.Retire))
	}
}

func TestUseRecordCountsEachLeaseOnce(t *testing.T) {
	now := fixture.Epoch.Add(hour)
	in := fixture.Instance("a", fixture.Ready)
	apply := func(lease string) map[string]*string {
		ch := pool.UseRecord(in, lease, now)
		if in.Exporter.Annotations == nil {
			in.Exporter.Annotations = map[string]string{}
		}
		for k, v := range ch {
			if v == nil {
				delete(in.Exporter.Annotations, k)
			} else {
				in.Exporter.Annotations[k] = *v
			}
		}
		return ch
	}
	if ch := apply(""); len(ch) != 0 {
		t.Fatalf("never leased: wrote %v", ch)
	}
	apply("l1")
	if ch := apply("l1"); len(ch) != 0 || in.UseCount() != 1 {
		t.Fatalf("l1 counted again (%v) or count %d, want 1", ch, in.UseCount())
	}
	apply("")
	if in.Exporter.Annotations[pool.AnnotationIdleSince] != now.Format(time.RFC3339) {
		t.Fatalf("idle clock not started after l1: %v", in.Exporter.Annotations)
	}
	if ch := apply(""); len(ch) != 0 {
		t.Fatalf("idle clock restarted: %v", ch)
	}
	apply("l2")
	if in.UseCount() != 2 || in.Exporter.Annotations[pool.AnnotationIdleSince] != "" {
		t.Fatalf("after l2: %v", in.Exporter.Annotations)
	}
}

func nameOf(in *pool.Instance) string {
	if in == nil {
		return "none"
	}
	return in.Name()
}
