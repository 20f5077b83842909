package exporterset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// condInput is what conditions is computed from, as reconcile leaves it before writing
// status: instances diagnosed (their Problems given), counts and the failure summary
// computed, a plan made.
type condInput struct {
	set     *vtv1alpha1.ExporterSet
	binding vtv1alpha1.BindingMode
	now     time.Time
	res     passResult
}

func (c *condInput) conditions() []metav1.Condition {
	return conditions(c.set, c.binding, c.now, c.res)
}

func conditionPass(minR, minAvail int32, binding vtv1alpha1.BindingMode, instances ...*pool.Instance) *condInput {
	set := &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Generation: 3}}
	set.Spec.MinReplicas, set.Spec.MinAvailableReplicas = minR, minAvail
	return &condInput{set: set, binding: binding, now: fixture.Epoch.Add(time.Hour), res: passResult{
		counts: pool.ComputeStatus(instances, fixture.ProblemsOf(instances)),
		health: health{failures: summarizeFailures(instances, fixture.ProblemsOf(instances)), problems: fixture.ProblemsOf(instances)},
		plan:   &pool.Plan{},
	}}
}

func problem(reason vtv1alpha1.ConditionReason) fixture.Trait {
	return fixture.WithProblem(&pool.Problem{Reason: reason, Message: "kubelet says " + string(reason)})
}

// TestAvailableTruthTable: Available is True only when the set is not blocked, the warm
// buffer is met, the floor is served by ready instances and, with nothing available, no
// instance fails and the set does not back off. Each False has the most specific reason.
func TestAvailableTruthTable(t *testing.T) {
	imm, wffc := vtv1alpha1.BindingImmediate, vtv1alpha1.BindingWaitForFirstConsumer
	cases := []struct {
		name       string
		p          *condInput
		edit       func(*condInput)
		want       bool
		wantReason vtv1alpha1.ConditionReason
	}{
		{name: "empty pool asked for nothing", p: conditionPass(0, 0, imm), want: true, wantReason: vtv1alpha1.ReasonWarmBufferMet},
		{name: "buffer met", p: conditionPass(0, 1, imm, fixture.Instance("a", fixture.Ready)), want: true, wantReason: vtv1alpha1.ReasonWarmBufferMet},
		{name: "buffer not met", p: conditionPass(0, 2, imm, fixture.Instance("a", fixture.Ready), fixture.Instance("b")), wantReason: vtv1alpha1.ReasonWarmBufferNotMet},
		{name: "class missing, buffer 0", p: conditionPass(0, 0, imm), edit: func(p *condInput) {
			p.binding = ""
			p.res.blocked = blocked(vtv1alpha1.ReasonClassNotFound, "VirtualTargetClass %q not found", "gone")
		}, wantReason: vtv1alpha1.ReasonClassNotFound},
		{name: "blocked even with instances available", p: conditionPass(0, 1, imm, fixture.Instance("a", fixture.Ready)), edit: func(p *condInput) {
			p.res.blocked = blocked(vtv1alpha1.ReasonInvalidParameters, "spec.parameters.arch: bad")
		}, wantReason: vtv1alpha1.ReasonInvalidParameters},
		{name: "buffer 0, image cannot be pulled", p: conditionPass(0, 0, imm, fixture.Instance("a", fixture.Pod("Pending"), problem(vtv1alpha1.ReasonImagePullFailed))),
			wantReason: vtv1alpha1.ReasonImagePullFailed},
		{name: "buffer 0, every target crash-loops (registered)", p: conditionPass(0, 0, imm,
			fixture.Instance("a", fixture.Ready, problem(vtv1alpha1.ReasonTargetCrashing)), fixture.Instance("b", fixture.Ready, problem(vtv1alpha1.ReasonTargetCrashing))),
			wantReason: vtv1alpha1.ReasonTargetCrashing},
		{name: "buffer 1 met by a crash-looping instance is not met", p: conditionPass(0, 1, imm, fixture.Instance("a", fixture.Ready, problem(vtv1alpha1.ReasonTargetCrashing))),
			wantReason: vtv1alpha1.ReasonTargetCrashing},
		{name: "buffer met while another instance fails: can serve, Degraded says the rest", p: conditionPass(0, 1, imm,
			fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Pod("Pending"), problem(vtv1alpha1.ReasonUnschedulable))), want: true, wantReason: vtv1alpha1.ReasonWarmBufferMet},
		{name: "floor not served by ready instances", p: conditionPass(2, 0, imm, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Pod("Pending"))),
			wantReason: vtv1alpha1.ReasonFloorNotMet},
		{name: "floor served by leased ready instances", p: conditionPass(2, 0, imm, fixture.Instance("a", fixture.Ready, fixture.Leased("l1")), fixture.Instance("b", fixture.Ready, fixture.Leased("l2"))),
			want: true, wantReason: vtv1alpha1.ReasonWarmBufferMet},
		{name: "backing off with nothing available", p: conditionPass(0, 0, imm), edit: func(p *condInput) {
			p.res.health.backoff = pool.Backoff{Failures: 3, Until: p.now.Add(time.Minute)}
		}, wantReason: vtv1alpha1.ReasonBackingOff},
		{name: "a backoff that ended holds nothing", p: conditionPass(0, 0, imm), edit: func(p *condInput) {
			p.res.health.backoff = pool.Backoff{Failures: 3, Until: p.now.Add(-time.Second)}
		}, want: true, wantReason: vtv1alpha1.ReasonWarmBufferMet},
		{name: "credentials missing, buffer not met", p: conditionPass(0, 1, imm, fixture.Instance("a")), edit: func(p *condInput) {
			p.res.act.configured = []contract.Result{{CredMissing: "credential Secret x-token of x not found"}}
		}, wantReason: vtv1alpha1.ReasonCredentialsMissing},
		{name: "WaitForFirstConsumer: idle instances wait", p: conditionPass(0, 1, wffc, fixture.Instance("a")), want: true, wantReason: vtv1alpha1.ReasonWaitForFirstConsumer},
		{name: "WaitForFirstConsumer: leased instances wait for no consumer", p: conditionPass(0, 1, wffc, fixture.Instance("a", fixture.Ready, fixture.Leased("l"))),
			wantReason: vtv1alpha1.ReasonWaitForFirstConsumer},
		{name: "WaitForFirstConsumer: failing instances", p: conditionPass(0, 1, wffc, fixture.Instance("a"), fixture.Instance("b", fixture.Pod("Pending"), problem(vtv1alpha1.ReasonImagePullFailed))),
			wantReason: vtv1alpha1.ReasonImagePullFailed},
		{name: "WaitForFirstConsumer: blocked", p: conditionPass(0, 0, wffc), edit: func(p *condInput) {
			p.res.blocked = blocked(vtv1alpha1.ReasonProvisionerUnknown, "not served")
		}, wantReason: vtv1alpha1.ReasonProvisionerUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.edit != nil {
				tc.edit(tc.p)
			}
			c := apimeta.FindStatusCondition(tc.p.conditions(), vtv1alpha1.ConditionAvailable)
			if c == nil {
				t.Fatal("no Available condition")
			}
			if got := c.Status == metav1.ConditionTrue; got != tc.want || c.Reason != string(tc.wantReason) {
				t.Errorf("Available=%s (%s: %s), want %v (%s)", c.Status, c.Reason, c.Message, tc.want, tc.wantReason)
			}
			// WaitForFirstConsumer is the documented exception: idle instances have no Pod.
			if c.Status == metav1.ConditionTrue && c.Reason != string(vtv1alpha1.ReasonWaitForFirstConsumer) && (tc.p.res.counts.AvailableReplicas < tc.p.set.Spec.MinAvailableReplicas || tc.p.res.health.failures.Serving < int(tc.p.set.Spec.MinReplicas)) {
				t.Errorf("Available=True with %d available (buffer %d) and %d serving (floor %d)", tc.p.res.counts.AvailableReplicas, tc.p.set.Spec.MinAvailableReplicas, tc.p.res.health.failures.Serving, tc.p.set.Spec.MinReplicas)
			}
		})
	}
}

// TestDegradedFailures: a failure is Degraded with its own reason, the quoted message, the
// count, and the backoff's next attempt; failures rank below a blocker.
func TestDegradedFailures(t *testing.T) {
	p := conditionPass(0, 1, vtv1alpha1.BindingImmediate, fixture.Instance("a", fixture.Pod("Pending"), problem(vtv1alpha1.ReasonImagePullFailed)), fixture.Instance("b", fixture.Ready))
	p.res.health.backoff = pool.Backoff{Failures: 2, Until: p.now.Add(4 * time.Second)}
	c := apimeta.FindStatusCondition(p.conditions(), vtv1alpha1.ConditionDegraded)
	if c.Status != metav1.ConditionTrue || c.Reason != string(vtv1alpha1.ReasonImagePullFailed) {
		t.Fatalf("Degraded=%s %s, want True ImagePullFailed", c.Status, c.Reason)
	}
	for _, want := range []string{"1 of 2 instances cannot pull an image", "instance a", "kubelet says ImagePullFailed", "next attempt at 2026-01-01T01:00:04Z"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q lacks %q", c.Message, want)
		}
	}
	p.res.blocked = blocked(vtv1alpha1.ReasonClassNotFound, "class gone")
	if c := apimeta.FindStatusCondition(p.conditions(), vtv1alpha1.ConditionDegraded); c.Reason != string(vtv1alpha1.ReasonClassNotFound) {
		t.Errorf("a blocker ranks above failures; got %s", c.Reason)
	}
	// No failing instance left (replaced), but still backing off: said as such.
	p = conditionPass(0, 1, vtv1alpha1.BindingImmediate)
	p.res.health.backoff = pool.Backoff{Failures: 4, Until: p.now.Add(time.Minute), Last: &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Message: "exit code 1"}, LastName: "x"}
	p.res.plan.BackingOff = true
	conds := p.conditions()
	for _, typ := range []string{vtv1alpha1.ConditionDegraded, vtv1alpha1.ConditionProgressing} {
		c := apimeta.FindStatusCondition(conds, typ)
		if c.Reason != string(vtv1alpha1.ReasonBackingOff) || !strings.Contains(c.Message, "instance x: TargetCrashing: exit code 1") {
			t.Errorf("%s: %s %q", typ, c.Reason, c.Message)
		}
	}
}

// ScalingLimited carries the plan's note on bookings, naming those the ceiling leaves waiting.
func TestScalingLimitedNamesWaitingBookings(t *testing.T) {
	now := fixture.Epoch.Add(time.Hour)
	in := pool.PlanInput{MaxReplicas: 2, Cooldown: 5 * time.Minute, Recycle: vtv1alpha1.RecycleExitAndReplace,
		Binding: vtv1alpha1.BindingImmediate, SpecHash: "h1", Now: now, LeadTime: time.Minute}
	for i, d := range []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second} {
		in.Bookings = append(in.Bookings, pool.Booking{Name: fmt.Sprint("b", i+1), Begin: now.Add(d)})
	}
	pl := pool.PlanScale(in)
	p := conditionPass(0, 0, vtv1alpha1.BindingImmediate)
	p.set.Spec.MaxReplicas = ptr.To[int32](2)
	c, ok := scalingLimitedCondition(condOf(p.set.Generation), p.set.Spec, &pl, governance{})
	if !ok {
		t.Fatal("no condition with a plan")
	}
	checkCond(t, c, condWant{metav1.ConditionTrue, vtv1alpha1.ReasonAtMaxReplicas, "maxReplicas leaves b3 waiting"})
	if !strings.Contains(c.Message, "wants 3 instances, maxReplicas is 2: 1 lease begins at ") {
		t.Errorf("message %q", c.Message)
	}
}
