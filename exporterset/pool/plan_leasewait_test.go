package pool_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// The lease-wait rule (leasewait.go): a set whose ceiling admits an instance keeps an
// enabled Exporter at every moment, so that the Jumpstarter controller never ends a Lease for
// it as Unsatisfiable. Each case is one way an Exporter leaves a pool, at a ceiling of 1
// where nothing can be created beside it, or on an on-demand set.
func TestPlanKeepsLeasesWaiting(t *testing.T) {
	ten := 10 * time.Minute
	cases := []struct {
		name string
		in   pool.PlanInput
		want planSummary
		// refused: the set cannot keep an Exporter (a person's disable holds its only place)
		refused bool
	}{
		{
			name: "on demand at rest: one Exporter without a Pod, nothing started",
			in:   input(0, 3, 0, fixture.Instance("a", fixture.Online, fixture.Registered)),
			want: planSummary{Standby: 1},
		},
		{
			name: "on demand: a waiting lease starts the standby's Pod",
			in:   withDemand(input(0, 3, 0, fixture.Instance("a")), 1),
			want: planSummary{Wanted: 1, StartPods: []string{"a"}},
		},
		{
			name: "on demand: two waiting leases, the standby and one more",
			in:   withDemand(input(0, 3, 0, fixture.Instance("a")), 2),
			want: planSummary{Wanted: 2, Create: 1, StartPods: []string{"a"}},
		},
		{
			name: "on demand: the leased instance is enabled, nothing more is kept",
			in:   input(0, 3, 0, fixture.Instance("a", fixture.Ready, fixture.Leased("l"))),
			want: planSummary{Wanted: 1},
		},
		{
			name: "on demand: the exited instance stays until its successor, created now, exists",
			in:   input(0, 3, 0, fixture.Instance("a", fixture.Pod(corev1.PodSucceeded))),
			want: planSummary{Create: 1, Standby: 1, Bridge: "a"},
		},
		{
			name: "on demand: once the successor exists, the exited one goes",
			in:   input(0, 3, 0, fixture.Instance("a", fixture.Pod(corev1.PodSucceeded)), fixture.Instance("b")),
			want: planSummary{Standby: 1, Remove: []string{"a"}},
		},
		{
			name: "on demand at a ceiling of 1: the exited one is kept, its Pod goes, none starts",
			in:   input(0, 1, 0, fixture.Instance("a", fixture.Pod(corev1.PodSucceeded))),
			want: planSummary{Standby: 1, RestartPods: []string{"a"}},
		},
		{
			name: "a ceiling of 1 and a buffer of 1: the kept instance gets its fresh Pod",
			in:   input(0, 1, 1, fixture.Instance("a")),
			want: planSummary{Wanted: 1, StartPods: []string{"a"}},
		},
		{
			name: "the last idle Pod rests after the cooldown; the Exporter stays",
			in:   withSince(input(0, 3, 0, fixture.Instance("a", fixture.Ready)), fixture.Epoch),
			want: planSummary{Standby: 1, RestPods: []string{"a"}},
		},
		{
			name: "the last idle Pod runs on during the cooldown",
			in:   input(0, 3, 0, fixture.Instance("a", fixture.Ready)),
			want: planSummary{Standby: 1, SurplusSince: at(0), RequeueAfter: 5 * time.Minute},
		},
		{
			name: "roll at a ceiling of 1: renewed in place, its Pod replaced",
			in:   input(0, 1, 1, fixture.Instance("old", fixture.Ready, fixture.Hash("h0"))),
			want: planSummary{Wanted: 1, Renew: []string{"old"}, RestPods: []string{"old"}},
		},
		{
			name: "an outdated instance whose Pod is pending, at a ceiling of 1, while backing off: not relabelled, for its Pod cannot be replaced now",
			in:   withBackoff(input(0, 1, 1, fixture.Instance("old", fixture.Hash("h0"), fixture.Pod(corev1.PodPending)))),
			want: planSummary{Wanted: 1, RequeueAfter: 8 * time.Second},
		},
		{
			name: "the same once the backoff ended: renewed and its Pod replaced",
			in:   input(0, 1, 1, fixture.Instance("old", fixture.Hash("h0"), fixture.Pod(corev1.PodPending))),
			want: planSummary{Wanted: 1, Renew: []string{"old"}, RestPods: []string{"old"}},
		},
		{
			name: "the resting standby outdated while backing off: relabelled, no Pod to replace",
			in:   withBackoff(input(0, 1, 0, fixture.Instance("old", fixture.Hash("h0")))),
			want: planSummary{Standby: 1, Renew: []string{"old"}, RequeueAfter: 8 * time.Second},
		},
		{
			name: "roll of the resting standby at a ceiling of 1: relabelled, no Pod to replace",
			in:   input(0, 1, 0, fixture.Instance("old", fixture.Hash("h0"))),
			want: planSummary{Standby: 1, Renew: []string{"old"}},
		},
		{
			name: "roll of an instance at rest at a ceiling of 1 and a buffer of 1: renewed and its Pod started now",
			in:   input(0, 1, 1, fixture.Instance("old", fixture.Hash("h0"))),
			want: planSummary{Wanted: 1, Renew: []string{"old"}, StartPods: []string{"old"}},
		},
		{
			name: "the same, a second place held by an instance disabled by hand: renewed and started",
			in:   input(0, 2, 1, fixture.Instance("old", fixture.Hash("h0")), fixture.Instance("off", fixture.Ready, fixture.Disabled)),
			want: planSummary{Wanted: 1, Renew: []string{"old"}, StartPods: []string{"old"}},
		},
		{
			name:    "a ceiling of 1 whose one place an instance disabled by hand holds: the exited one is not kept, the ceiling holds",
			in:      input(1, 1, 1, fixture.Instance("a", fixture.Pod(corev1.PodSucceeded)), fixture.Instance("off", fixture.Ready, fixture.Disabled)),
			want:    planSummary{Wanted: 1, RemoveBeforeCreate: 1, Remove: []string{"a"}},
			refused: true,
		},
		{
			name: "the same with the last enabled one failing beyond repair: retired, not renewed in place",
			in: input(1, 1, 1, fixture.Instance("a", fixture.Pod(corev1.PodRunning), fixture.WithProblem(&pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Replace: true})),
				fixture.Instance("off", fixture.Ready, fixture.Disabled)),
			want:    planSummary{Wanted: 1, RemoveBeforeCreate: 1, Retire: []string{"a"}},
			refused: true,
		},
		{
			name: "roll at a ceiling of 1, its external target kept: it serves on as it is, its Pod stays",
			in:   withKept(input(0, 1, 1, fixture.Instance("old", fixture.Ready, fixture.Hash("h0")))),
			want: planSummary{Wanted: 1},
		},
		{
			name: "the same at rest: its Pod starts on the kept target, not renewed",
			in:   withKept(input(0, 1, 1, fixture.Instance("old", fixture.Hash("h0")))),
			want: planSummary{Wanted: 1, StartPods: []string{"old"}},
		},
		{
			name: "used up at a ceiling of 1 with its external target kept: it serves on",
			in:   withKept(withMaxUse(withRecycle(input(0, 1, 1, fixture.Instance("a", fixture.Ready, usedOnce)), vtv1alpha1.RecycleInPlaceReuse), 1)),
			want: planSummary{Wanted: 1},
		},
		{
			name: "roll with room: the new one first, the outdated standby after",
			in:   input(0, 3, 0, fixture.Instance("old", fixture.Hash("h0"))),
			want: planSummary{Create: 1, Standby: 1, Bridge: "old"},
		},
		{
			name: "used up at a ceiling of 1 (InPlaceReuse): renewed in place",
			in:   withMaxUse(withRecycle(input(0, 1, 1, fixture.Instance("a", fixture.Ready, usedOnce)), vtv1alpha1.RecycleInPlaceReuse), 1),
			want: planSummary{Wanted: 1, Renew: []string{"a"}, RestPods: []string{"a"}},
		},
		{
			name: "upstream's exited instance at a ceiling of 1 gets no Pod of ours: removed, replaced after",
			in:   input(0, 1, 1, fixture.Instance("up", fixture.Pod(corev1.PodSucceeded), foreign)),
			want: planSummary{Wanted: 1, CreateAfterRemove: 1, Remove: []string{"up"}},
		},
		{
			name: "renewed at the ceiling, then room (a budget raised, a successor made): its restart is still owed, it is not removed as exited",
			in:   input(0, 3, 0, fixture.Instance("a", fixture.Pod(corev1.PodSucceeded), fixture.RenewedPod), fixture.Instance("b")),
			want: planSummary{Standby: 1, RestartPods: []string{"a"}, SurplusSince: at(0), RequeueAfter: 5 * time.Minute},
		},
		{
			name: "renewed over a failed Pod: restarting, not retired for the old Pod's crash",
			in: withProblems(input(0, 3, 0, fixture.Instance("a", fixture.Pod(corev1.PodFailed), fixture.RenewedPod,
				fixture.WithProblem(&pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Replace: true})), fixture.Instance("b"))),
			want: planSummary{Standby: 1, RestartPods: []string{"a"}, SurplusSince: at(0), RequeueAfter: 5 * time.Minute},
		},
		{
			name: "the renewed Pod's successor exited too: the mark names a Pod that is gone, so it is removed as exited",
			in:   input(0, 3, 0, fixture.Instance("a", fixture.Pod(corev1.PodSucceeded), fixture.RenewedPod, dropPods, fixture.Pod(corev1.PodSucceeded)), fixture.Instance("b")),
			want: planSummary{Standby: 1, Remove: []string{"a"}},
		},
		{
			name: "a budget of 0 owes nothing: no standby",
			in:   withBudget(input(0, 3, 0), 0),
			want: planSummary{},
		},
		{
			name: "a budget of 1 is a ceiling of 1",
			in:   withBudget(input(0, 3, 1, fixture.Instance("a", fixture.Pod(corev1.PodSucceeded))), 1),
			want: planSummary{Wanted: 1, RestartPods: []string{"a"}},
		},
		{
			name: "unbounded (maxReplicas 0) owes an Exporter too",
			in:   input(0, 0, 0),
			want: planSummary{Create: 1, Standby: 1},
		},
		{
			name: "idle age at a ceiling of 1: no room to roll it by surge, it stays enabled",
			in:   withIdle(input(0, 1, 1, fixture.Instance("a", fixture.Ready)), ten),
			want: planSummary{Wanted: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pool.PlanScale(tc.in)
			if diff := cmp.Diff(tc.want, summarize(p), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("PlanScale (-want +got):\n%s", diff)
			}
			if p.LeasesRefused != tc.refused && p.CreateAfterRemove == 0 {
				t.Errorf("LeasesRefused %v, want %v", p.LeasesRefused, tc.refused)
			}
		})
	}
}

// A set that cannot keep an enabled Exporter says so: its only place is taken by a
// quarantined (disabled) instance, so a Lease would end Unsatisfiable (AllDisabled).
func TestPlanSaysWhenLeasesAreRefused(t *testing.T) {
	p := pool.PlanScale(input(0, 1, 1, fixture.Instance("q", fixture.Ready, fixture.Quarantined(time.Minute))))
	if !p.LeasesRefused {
		t.Fatalf("LeasesRefused = false with the only place quarantined: %+v", summarize(p))
	}
	p = pool.PlanScale(input(0, 2, 1, fixture.Instance("q", fixture.Ready, fixture.Quarantined(time.Minute))))
	if p.LeasesRefused || p.Create != 1 {
		t.Fatalf("with room beside the quarantined one: LeasesRefused %v, Create %d; want false, 1", p.LeasesRefused, p.Create)
	}
}

// foreign is an instance upstream's controller made: it has none of our labels.
var foreign fixture.Trait = func(in *pool.Instance) { delete(in.Exporter.Labels, pool.LabelSet) }

// dropPods forgets the instance's Pods so far (they were replaced).
var dropPods fixture.Trait = func(in *pool.Instance) { in.Pods = nil }

// withProblems gives the input the problems its instances carry (fixture.WithProblem).
func withProblems(in pool.PlanInput) pool.PlanInput {
	in.Problems = fixture.ProblemsOf(in.Instances)
	return in
}

// usedOnce is an instance that served one lease, seen ended.
var usedOnce fixture.Trait = func(in *pool.Instance) {
	if in.Exporter.Annotations == nil {
		in.Exporter.Annotations = map[string]string{}
	}
	in.Exporter.Annotations[pool.AnnotationUseCount] = "1"
	in.Exporter.Annotations[pool.AnnotationLastLease] = "l"
	in.Exporter.Annotations[pool.AnnotationIdleSince] = fixture.Epoch.Format(time.RFC3339)
}

// withKept marks every instance's target as kept (an external target that exists).
func withKept(in pool.PlanInput) pool.PlanInput {
	in.TargetKept = map[*pool.Instance]bool{}
	for _, i := range in.Instances {
		in.TargetKept[i] = true
	}
	return in
}

// withBackoff has the set back off for 8 s more.
func withBackoff(in pool.PlanInput) pool.PlanInput {
	in.BackoffUntil = in.Now.Add(8 * time.Second)
	return in
}

func withMaxUse(in pool.PlanInput, n int) pool.PlanInput   { in.MaxUseCount = n; return in }
func withBudget(in pool.PlanInput, n int32) pool.PlanInput { in.BudgetCeiling = &n; return in }
func withIdle(in pool.PlanInput, d time.Duration) pool.PlanInput {
	in.MaxIdleAge = d
	return in
}

// StartNew is the plan's rule for instances it has not seen yet: under Immediate binding they
// get their Pod once configured, unless the set keeps a standby (which rests without one);
// under WaitForFirstConsumer only StartPods starts Pods.
func TestPlanStartNew(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      pool.PlanInput
		binding vtv1alpha1.BindingMode
		want    bool
	}{
		{"immediate, a buffer to fill", input(0, 3, 1), vtv1alpha1.BindingImmediate, true},
		{"immediate, on demand at rest (standby)", input(0, 3, 0, fixture.Instance("a")), vtv1alpha1.BindingImmediate, false},
		{"immediate, on demand with a lease waiting", withDemand(input(0, 3, 0, fixture.Instance("a")), 1), vtv1alpha1.BindingImmediate, true},
		{"wait for first consumer, a buffer to fill", input(0, 3, 1), vtv1alpha1.BindingWaitForFirstConsumer, false},
	} {
		in := c.in
		in.Binding = c.binding
		if got := pool.PlanScale(in).StartNew; got != c.want {
			t.Errorf("%s: StartNew %v, want %v", c.name, got, c.want)
		}
	}
}
