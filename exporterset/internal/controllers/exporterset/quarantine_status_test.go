package exporterset

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// The breaker opens at the third quarantine in a row and holds creates for the failure
// backoff's delay counted from the threshold.
func TestReuseBreaker(t *testing.T) {
	var c reuseCount
	now := fixture.Epoch
	for i := 1; i <= 4; i++ {
		c.add(now, "instance x: AfterLeaseHookFailed: boom")
		b := c.breaker(2*time.Second, time.Minute)
		wantOpen := i >= breakerThreshold
		if b.open() != wantOpen {
			t.Fatalf("after %d quarantines open=%t, want %t", i, b.open(), wantOpen)
		}
		var wantUntil time.Time
		switch i {
		case 3:
			wantUntil = now.Add(2 * time.Second)
		case 4:
			wantUntil = now.Add(4 * time.Second)
		}
		if !b.until.Equal(wantUntil) {
			t.Fatalf("after %d quarantines until %v, want %v", i, b.until, wantUntil)
		}
	}
}

// Degraded says ReuseCheckFailing while the breaker is open, quoting the last failure,
// before the failures and the backoff; its message names the quarantined instances and the
// ignored annotations; Progressing names the breaker when it holds creates longer.
func TestReuseConditions(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	p := conditionPass(0, 0, vtv1alpha1.BindingImmediate, fixture.Instance("a", fixture.Pod("Pending"), problem(vtv1alpha1.ReasonImagePullFailed)))
	c := reuseCount{inRow: 3, at: p.now, last: `instance pool-x: AfterLeaseHookFailed: afterLease hook failed (on_failure=endLease): exit 1`}
	p.res.reuse = reuseResult{breaker: c.breaker(2*time.Second, time.Minute)}
	checkCond(t, degradedCondition(condOf(p.set.Generation), p.now, p.res),
		condWant{T, vtv1alpha1.ReasonReuseCheckFailing, "3 instances in a row failed the check between two leases and were quarantined; last: instance pool-x: AfterLeaseHookFailed: afterLease hook failed (on_failure=endLease): exit 1; replacements back off until"})
	p.res.plan.BackingOff = true
	checkCond(t, progressingCondition(condOf(p.set.Generation), p.set.Spec, p.now, p.res), condWant{F, vtv1alpha1.ReasonBackingOff, "3 instances in a row"})

	q := conditionPass(0, 0, vtv1alpha1.BindingImmediate)
	q.res.reuse = reuseResult{
		kept:     []string{"pool-x (AfterLeaseHookFailed at 2026-01-01T00:00:00Z)"},
		problems: []policyProblem{{annotation: AnnotationQuarantineTTL, value: "soon", on: "ExporterSet", err: errNotDuration}},
	}
	got := withReuseNotes(degradedCondition(condOf(q.set.Generation), q.now, q.res), q.res.reuse)
	checkCond(t, got, condWant{F, vtv1alpha1.ReasonAsExpected,
		`no problems; 1 quarantined for inspection: pool-x (AfterLeaseHookFailed at 2026-01-01T00:00:00Z); ignored, defaults used: annotation virtualtarget.jumpstarter.dev/quarantine-ttl="soon" on the ExporterSet: not a duration`})
}

var errNotDuration = errString("not a duration")

type errString string

func (e errString) Error() string { return string(e) }

// reuseResultOf names the quarantined instances the pass keeps, not those it removes.
func TestReuseResultKept(t *testing.T) {
	a := fixture.Instance("a", fixture.Ready, fixture.Quarantined(0))
	b := fixture.Instance("b", fixture.Ready, fixture.Quarantined(time.Minute))
	rr := reuseResultOf(reuseBreaker{}, nil, &observation{Instances: []*pool.Instance{a, b, fixture.Instance("c", fixture.Ready)}}, pool.QuarantinePlan{Remove: []*pool.Instance{a}})
	if len(rr.kept) != 1 || rr.kept[0] != "b (AfterLeaseHookFailed at 2026-01-01T00:01:00Z)" {
		t.Fatalf("kept %v", rr.kept)
	}
}
