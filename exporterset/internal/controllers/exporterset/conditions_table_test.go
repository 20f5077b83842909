package exporterset

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// condWant is one expected condition: its status, reason and a part of its message.
type condWant struct {
	status  metav1.ConditionStatus
	reason  vtv1alpha1.ConditionReason
	message string
}

func checkCond(t *testing.T, c metav1.Condition, want condWant) {
	t.Helper()
	if c.Status != want.status || c.Reason != string(want.reason) || !strings.Contains(c.Message, want.message) {
		t.Errorf("%s=%s %s %q, want %s %s containing %q", c.Type, c.Status, c.Reason, c.Message, want.status, want.reason, want.message)
	}
	if c.ObservedGeneration != 3 {
		t.Errorf("%s: observedGeneration %d, want the set's 3", c.Type, c.ObservedGeneration)
	}
}

// TestDegradedCondition: one pure function of the pass's results, the most pressing problem
// first: blocked, CA, credentials, failed creates, Pod errors, failures, backoff, failed Pods.
func TestDegradedCondition(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	failingPool := []*pool.Instance{fixture.Instance("a", fixture.Pod("Pending"), problem(vtv1alpha1.ReasonImagePullFailed))}
	cases := []struct {
		name      string
		instances []*pool.Instance
		edit      func(*condInput)
		want      condWant
	}{
		{name: "nothing wrong", want: condWant{F, vtv1alpha1.ReasonAsExpected, "no problems"}},
		{name: "blocked ranks first", instances: failingPool, edit: func(p *condInput) {
			p.res.blocked = blocked(vtv1alpha1.ReasonClassNotFound, "class %q gone", "c")
			p.res.act.caProblem = "CA bundle ConfigMap ns/x not found"
		}, want: condWant{T, vtv1alpha1.ReasonClassNotFound, `class "c" gone`}},
		{name: "CA missing before credentials", edit: func(p *condInput) {
			p.res.act.caProblem = "CA bundle ConfigMap ns/x not found"
			p.res.act.configured = []contract.Result{{CredMissing: "credential Secret t of a not found"}}
		}, want: condWant{T, vtv1alpha1.ReasonCABundleMissing, "ns/x not found"}},
		{name: "credentials of every instance, joined", edit: func(p *condInput) {
			p.res.act.configured = []contract.Result{{CredMissing: "t1 missing"}, {WaitingCred: true}, {CredMissing: "t2 missing"}}
		}, want: condWant{T, vtv1alpha1.ReasonCredentialsMissing, "t1 missing; t2 missing"}},
		{name: "a failed create", instances: failingPool, edit: func(p *condInput) {
			p.res.act.createErr = errors.New("quota exceeded")
		}, want: condWant{T, vtv1alpha1.ReasonProvisionerError, "creating instances: quota exceeded"}},
		{name: "a Pod error: the last instance's", edit: func(p *condInput) {
			p.res.act.configured = []contract.Result{{PodErr: errors.New("first")}, {}, {PodErr: errors.New("forbidden by policy")}}
		}, want: condWant{T, vtv1alpha1.ReasonProvisionerError, "starting pods: forbidden by policy"}},
		{name: "failing instances", instances: failingPool, want: condWant{T, vtv1alpha1.ReasonImagePullFailed, "1 of 1 instances cannot pull an image"}},
		{name: "backing off, nothing failing now", edit: func(p *condInput) {
			p.res.health.backoff = pool.Backoff{Failures: 2, Until: p.now.Add(time.Minute)}
		}, want: condWant{T, vtv1alpha1.ReasonBackingOff, "next attempt at"}},
		{name: "retrying after the backoff, no instance ready since", edit: func(p *condInput) {
			p.res.health.backoff = pool.Backoff{Failures: 3, Until: p.now.Add(-time.Second)}
		}, want: condWant{T, vtv1alpha1.ReasonBackingOff, "3 consecutive instance failures; trying again since"}},
		{name: "failed Pods being replaced", instances: []*pool.Instance{fixture.Instance("a", fixture.Pod("Failed"))}, want: condWant{T, vtv1alpha1.ReasonPodsFailing, "1 instance pods failed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := conditionPass(0, 0, vtv1alpha1.BindingImmediate, tc.instances...)
			if tc.edit != nil {
				tc.edit(p)
			}
			checkCond(t, degradedCondition(condOf(p.set.Generation), p.now, p.res), tc.want)
		})
	}
}

// TestProgressingCondition: what the pool does about its spec, from the plan and the act.
func TestProgressingCondition(t *testing.T) {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	cases := []struct {
		name      string
		instances []*pool.Instance
		edit      func(*condInput)
		want      condWant
	}{
		{name: "at its size", want: condWant{F, vtv1alpha1.ReasonAsExpected, "desired size"}},
		{name: "blocked", edit: func(p *condInput) {
			p.res.blocked, p.res.plan = blocked(vtv1alpha1.ReasonInvalidParameters, "parameters.arch: bad"), nil
		}, want: condWant{F, vtv1alpha1.ReasonInvalidParameters, "blocked: parameters.arch: bad"}},
		{name: "backing off", edit: func(p *condInput) {
			p.res.plan.BackingOff = true
			p.res.health.backoff = pool.Backoff{Failures: 1, Until: p.now.Add(2 * time.Second)}
		}, want: condWant{F, vtv1alpha1.ReasonBackingOff, ""}},
		{name: "rolling", edit: func(p *condInput) { p.res.plan.Outdated, p.res.plan.Create = 2, 1 },
			want: condWant{T, vtv1alpha1.ReasonRollingInstances, "2 idle instances of an older spec left"}},
		{name: "creating", edit: func(p *condInput) { p.res.plan.Create, p.res.plan.Wanted = 3, 5 },
			want: condWant{T, vtv1alpha1.ReasonCreatingInstances, "creating 3 instances (want 5)"}},
		{name: "retiring", edit: func(p *condInput) { p.res.plan.Retire = []*pool.Instance{fixture.Instance("a")} },
			want: condWant{T, vtv1alpha1.ReasonRetiringInstances, "retiring 1, removing 0"}},
		{name: "waiting for credentials", edit: func(p *condInput) {
			p.res.act.configured = []contract.Result{{WaitingCred: true}, {}, {WaitingCred: true}}
		}, want: condWant{T, vtv1alpha1.ReasonWaitingForCredentials, "2 instances wait"}},
		{name: "instances not ready", instances: []*pool.Instance{fixture.Instance("a", fixture.Pod("Pending"))},
			want: condWant{T, vtv1alpha1.ReasonWaitingForInstances, "1 instances are not ready yet"}},
		{name: "cooling down", edit: func(p *condInput) {
			since := p.now
			p.res.plan.SurplusSince = &since
			p.set.Spec.ScaleDownCooldown = &metav1.Duration{Duration: time.Minute}
		}, want: condWant{T, vtv1alpha1.ReasonScaleDownCoolingDown, "retired at 01:01:00Z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := conditionPass(0, 0, vtv1alpha1.BindingImmediate, tc.instances...)
			if tc.edit != nil {
				tc.edit(p)
			}
			checkCond(t, progressingCondition(condOf(p.set.Generation), p.set.Spec, p.now, p.res), tc.want)
		})
	}
}

// TestScalingLimitedCondition: said only when a plan was made, True at the ceiling.
func TestScalingLimitedCondition(t *testing.T) {
	p := conditionPass(0, 0, vtv1alpha1.BindingImmediate)
	p.set.Spec.MaxReplicas = ptr.To[int32](4)
	cond := condOf(p.set.Generation)
	if _, ok := scalingLimitedCondition(cond, p.set.Spec, nil, governance{}); ok {
		t.Error("a blocked pass (no plan) must leave ScalingLimited as it was")
	}
	c, ok := scalingLimitedCondition(cond, p.set.Spec, &pool.Plan{Wanted: 6, Limited: true}, governance{})
	if !ok {
		t.Fatal("no condition with a plan")
	}
	checkCond(t, c, condWant{metav1.ConditionTrue, vtv1alpha1.ReasonAtMaxReplicas, "wants 6 instances, maxReplicas is 4"})
	c, _ = scalingLimitedCondition(cond, p.set.Spec, &pool.Plan{Wanted: 3}, governance{})
	checkCond(t, c, condWant{metav1.ConditionFalse, vtv1alpha1.ReasonWithinLimits, "wants 3 instances"})
	// A budget's lower ceiling: BudgetExhausted, naming the budget.
	allowed := int32(1)
	c, _ = scalingLimitedCondition(cond, p.set.Spec, &pool.Plan{Wanted: 3, Limited: true, BudgetLimited: true}, governance{ceiling: &allowed, strictest: "lab"})
	checkCond(t, c, condWant{metav1.ConditionTrue, vtv1alpha1.ReasonBudgetExhausted, "wants 3 instances, CapacityBudget lab allows 1 now (maxReplicas is 4)"})
	// conditions leaves it out entirely without a plan.
	p.res.plan = nil
	for _, c := range p.conditions() {
		if c.Type == vtv1alpha1.ConditionScalingLimited {
			t.Errorf("blocked pass wrote %s", c.Type)
		}
	}
}
