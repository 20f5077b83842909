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

// planSummary is what a test compares: counts and names, not pointers.
type planSummary struct {
	Wanted, Create                         int32
	CreateAfterRemove, RemoveBeforeCreate  int32
	Retire, Remove, RestartPods, StartPods []string
	Limited                                bool
	SurplusSince                           *time.Time
	RequeueAfter                           time.Duration
	// The lease-wait rule (leasewait.go).
	Standby         int32
	Bridge          string
	RestPods, Renew []string
}

func summarize(p pool.Plan) planSummary {
	return planSummary{Wanted: p.Wanted, Create: p.Create, CreateAfterRemove: p.CreateAfterRemove, RemoveBeforeCreate: p.RemoveBeforeCreate, Retire: fixture.Names(p.Retire), Remove: fixture.Names(p.Remove),
		RestartPods: fixture.Names(p.RestartPods), StartPods: fixture.Names(p.StartPods), Limited: p.Limited,
		SurplusSince: p.SurplusSince, RequeueAfter: p.RequeueAfter,
		Standby: p.Standby, Bridge: bridgeName(p), RestPods: fixture.Names(p.RestPods), Renew: fixture.Names(p.Renew)}
}

func bridgeName(p pool.Plan) string {
	if p.Bridge == nil {
		return ""
	}
	return p.Bridge.Name()
}

func input(minR, maxR, minAvail int32, instances ...*pool.Instance) pool.PlanInput {
	return pool.PlanInput{MinReplicas: minR, MaxReplicas: maxR, MinAvailableReplicas: minAvail, Cooldown: 5 * time.Minute,
		Recycle: vtv1alpha1.RecycleExitAndReplace, Binding: vtv1alpha1.BindingImmediate, SpecHash: "h1",
		Instances: instances, Problems: fixture.ProblemsOf(instances), Now: fixture.Epoch.Add(time.Hour)}
}

func at(d time.Duration) *time.Time { t := fixture.Epoch.Add(time.Hour + d); return &t }

func TestPlanScale(t *testing.T) {
	now := fixture.Epoch.Add(time.Hour)
	cases := []struct {
		name string
		in   pool.PlanInput
		want planSummary
	}{
		{name: "empty set at 0: one Exporter rests, without a Pod, for leases to wait on", in: input(0, 4, 0), want: planSummary{Create: 1, Standby: 1}},
		{name: "floor from zero: create all at once", in: input(3, 4, 0), want: planSummary{Wanted: 3, Create: 3}},
		{name: "warm buffer from zero", in: input(0, 4, 2), want: planSummary{Wanted: 2, Create: 2}},
		{
			name: "booting instances count toward the buffer; they get pods",
			in:   input(0, 4, 2, fixture.Instance("a"), fixture.Instance("b", fixture.Pod(corev1.PodPending))),
			want: planSummary{Wanted: 2, StartPods: []string{"a"}},
		},
		{
			name: "a lease consumes a warm instance: refill",
			in:   input(0, 4, 1, fixture.Instance("a", fixture.Ready, fixture.Leased("l"))),
			want: planSummary{Wanted: 2, Create: 1},
		},
		{
			name: "demand raises the target up to the ceiling",
			in:   withDemand(input(0, 3, 1, fixture.Instance("a", fixture.Ready)), 5),
			want: planSummary{Wanted: 6, Create: 2, Limited: true},
		},
		{
			name: "unbounded ceiling",
			in:   withDemand(input(0, 0, 1), 10),
			want: planSummary{Wanted: 11, Create: 11},
		},
		{
			name: "expected creates are not created again",
			in:   withExpected(input(3, 4, 0, fixture.Instance("a")), 2),
			want: planSummary{Wanted: 3, StartPods: []string{"a"}},
		},
		{
			name: "ExitAndReplace: exited unleased instance is removed, replaced in the same pass once gone",
			in:   input(0, 2, 2, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Pod(corev1.PodSucceeded))),
			want: planSummary{Wanted: 2, CreateAfterRemove: 1, Remove: []string{"b"}},
		},
		{
			name: "ExitAndReplace below the ceiling: the replacement need not wait",
			in:   input(0, 3, 2, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Pod(corev1.PodSucceeded))),
			want: planSummary{Wanted: 2, Create: 1, Remove: []string{"b"}},
		},
		{
			name: "maxReplicas 1: the released instance is the last Exporter: kept, its Pod replaced",
			in:   input(0, 1, 1, fixture.Instance("a", fixture.Pod(corev1.PodSucceeded))),
			want: planSummary{Wanted: 1, RestartPods: []string{"a"}},
		},
		{
			name: "maxReplicas 1: an instance held by a finalizer holds its place",
			in:   input(0, 1, 1, fixture.Instance("a", fixture.Deleting)),
			want: planSummary{Wanted: 1},
		},
		{
			name: "maxReplicas 1: beside one held by a finalizer, the released one is the last enabled: kept, its Pod replaced",
			in:   input(0, 1, 1, fixture.Instance("a", fixture.Deleting), fixture.Instance("b", fixture.Pod(corev1.PodSucceeded))),
			want: planSummary{Wanted: 1, RestartPods: []string{"b"}},
		},
		{
			name: "strays count against the ceiling",
			in:   withOthers(input(0, 2, 2, fixture.Instance("a", fixture.Ready)), 1),
			want: planSummary{Wanted: 2},
		},
		{
			name: "ExitAndReplace: exited but still leased stays (never removed while leased)",
			in:   input(0, 2, 1, fixture.Instance("b", fixture.Pod(corev1.PodSucceeded), fixture.Leased("l"))),
			want: planSummary{Wanted: 2, Create: 1},
		},
		{
			name: "InPlaceReuse: a failed pod is restarted, not the instance",
			in:   withRecycle(input(0, 4, 1, fixture.Instance("a", fixture.Pod(corev1.PodFailed))), vtv1alpha1.RecycleInPlaceReuse),
			want: planSummary{Wanted: 1, RestartPods: []string{"a"}},
		},
		{
			name: "a leased instance without a pod (restarted) gets one",
			in:   withRecycle(input(0, 4, 0, fixture.Instance("a", fixture.Online, fixture.Registered, fixture.Leased("l"))), vtv1alpha1.RecycleInPlaceReuse),
			want: planSummary{Wanted: 1, StartPods: []string{"a"}},
		},
		{
			name: "surplus starts the cooldown clock, rounded up to the second",
			in:   withNow(input(0, 4, 1, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)), now.Add(300*time.Millisecond)),
			want: planSummary{Wanted: 1, SurplusSince: at(time.Second), RequeueAfter: 5*time.Minute + 700*time.Millisecond},
		},
		{
			name: "surplus within the cooldown keeps the clock",
			in:   withSince(withNow(input(0, 4, 1, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)), now.Add(4*time.Minute)), now),
			want: planSummary{Wanted: 1, SurplusSince: at(0), RequeueAfter: time.Minute},
		},
		{
			name: "one nanosecond before the cooldown ends nothing is retired",
			in:   withSince(withNow(input(0, 4, 1, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)), now.Add(5*time.Minute-1)), now),
			want: planSummary{Wanted: 1, SurplusSince: at(0), RequeueAfter: 1},
		},
		{
			name: "after the cooldown the newest idle instance is retired",
			in:   withSince(withNow(input(0, 4, 1, fixture.Instance("old", fixture.Ready), fixture.Instance("new", fixture.Ready, fixture.CreatedAt(time.Minute))), now.Add(5*time.Minute)), now),
			want: planSummary{Wanted: 1, Retire: []string{"new"}},
		},
		{
			name: "victim order: failed, then not ready, then newest idle",
			in: withRecycle(withSince(withNow(input(0, 0, 0,
				fixture.Instance("idle-old", fixture.Ready), fixture.Instance("idle-new", fixture.Ready, fixture.CreatedAt(time.Minute)),
				fixture.Instance("booting", fixture.Pod(corev1.PodPending)), fixture.Instance("failed", fixture.Online, fixture.Registered, fixture.Pod(corev1.PodFailed))), now.Add(time.Hour)), now),
				vtv1alpha1.RecycleInPlaceReuse),
			want: planSummary{Retire: []string{"failed", "booting", "idle-new"}, Standby: 1, RestPods: []string{"idle-old"}},
		},
		{
			name: "leased instances are never retired, even in surplus",
			in:   withSince(withNow(input(0, 4, 0, fixture.Instance("a", fixture.Ready, fixture.Leased("l1")), fixture.Instance("b", fixture.Ready, fixture.Leased("l2"))), now.Add(time.Hour)), now),
			want: planSummary{Wanted: 2},
		},
		{
			name: "surplus ends: the clock resets",
			in:   withSince(input(0, 4, 2, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)), now),
			want: planSummary{Wanted: 2},
		},
		{
			name: "excess over a lowered ceiling goes at once, without cooldown",
			in:   input(0, 1, 0, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready, fixture.CreatedAt(time.Minute)), fixture.Instance("c", fixture.Ready, fixture.Leased("l"))),
			want: planSummary{Wanted: 1, Retire: []string{"b", "a"}},
		},
		{
			name: "ceiling counts instances a person disabled: no replacement beyond max",
			in:   input(0, 2, 2, fixture.Instance("a", fixture.Ready, fixture.Disabled), fixture.Instance("b", fixture.Ready)),
			want: planSummary{Wanted: 2, Limited: false},
		},
		{
			name: "retiring unleased instance is removed; leased one waits",
			in:   input(0, 4, 0, fixture.Instance("a", fixture.Retiring), fixture.Instance("b", fixture.Retiring, fixture.Leased("l"))),
			want: planSummary{Remove: []string{"a"}, Create: 1, Standby: 1}, // none enabled: a standby for leases to wait on
		},
		{
			name: "rolling by surge: the new instance first, the outdated idle one stays, the leased one waits",
			in:   input(0, 4, 2, fixture.Instance("old-idle", fixture.Ready, fixture.Hash("h0")), fixture.Instance("old-busy", fixture.Ready, fixture.Hash("h0"), fixture.Leased("l")), fixture.Instance("new", fixture.Ready)),
			want: planSummary{Wanted: 3, Create: 1},
		},
		{
			name: "rolling: an outdated instance steps down once a new one is available in its place",
			in:   input(0, 4, 2, fixture.Instance("old", fixture.Ready, fixture.Hash("h0")), fixture.Instance("new1", fixture.Ready), fixture.Instance("new2", fixture.Ready)),
			want: planSummary{Wanted: 2, Retire: []string{"old"}},
		},
		{
			name: "rolling: an outdated instance that serves nobody goes at once",
			in:   input(0, 4, 1, fixture.Instance("old", fixture.Hash("h0"), fixture.Pod(corev1.PodPending)), fixture.Instance("new", fixture.Ready, fixture.Leased("l"))),
			want: planSummary{Wanted: 2, Create: 1, Retire: []string{"old"}},
		},
		{
			name: "rolling: the last enabled Exporter, outdated, stays until its successor exists",
			in:   input(0, 4, 1, fixture.Instance("old", fixture.Hash("h0"), fixture.Pod(corev1.PodPending))),
			want: planSummary{Wanted: 1, Create: 1, Bridge: "old"},
		},
		{
			name: "rolling at the ceiling: one at a time, retired before its replacement comes",
			in:   input(0, 2, 2, fixture.Instance("old1", fixture.Ready, fixture.Hash("h0"), fixture.CreatedAt(time.Second)), fixture.Instance("old2", fixture.Ready, fixture.Hash("h0"))),
			want: planSummary{Wanted: 2, Retire: []string{"old1"}},
		},
		{
			name: "rolling at the ceiling: the replacement is not available yet, wait",
			in:   input(0, 2, 2, fixture.Instance("old1", fixture.Ready, fixture.Hash("h0")), fixture.Instance("new", fixture.Pod(corev1.PodPending))),
			want: planSummary{Wanted: 2},
		},
		{
			name: "rolling at the ceiling: a retirement in flight, wait",
			in:   input(0, 2, 2, fixture.Instance("old1", fixture.Ready, fixture.Hash("h0")), fixture.Instance("old2", fixture.Retiring)),
			want: planSummary{Wanted: 2, Remove: []string{"old2"}, CreateAfterRemove: 1},
		},
		{
			name: "rolling: a lowered ceiling retires the outdated first",
			in:   input(0, 1, 1, fixture.Instance("old", fixture.Ready, fixture.Hash("h0")), fixture.Instance("new", fixture.Ready)),
			want: planSummary{Wanted: 1, Retire: []string{"old"}},
		},
		{
			name: "deleting instances serve nobody: replaced below the ceiling",
			in:   input(1, 4, 0, fixture.Instance("a", fixture.Deleting)),
			want: planSummary{Wanted: 1, Create: 1},
		},
		{
			name: "WaitForFirstConsumer: no pods without demand",
			in:   withBinding(input(2, 4, 0, fixture.Instance("a"), fixture.Instance("b")), vtv1alpha1.BindingWaitForFirstConsumer),
			want: planSummary{Wanted: 2},
		},
		{
			name: "WaitForFirstConsumer: one pod per waiting lease",
			in:   withDemand(withBinding(input(2, 4, 0, fixture.Instance("a"), fixture.Instance("b"), fixture.Instance("c")), vtv1alpha1.BindingWaitForFirstConsumer), 1),
			want: planSummary{Wanted: 2, StartPods: []string{"a"}, SurplusSince: at(0), RequeueAfter: 5 * time.Minute},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, summarize(pool.PlanScale(tc.in)), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("PlanScale (-want +got):\n%s", d)
			}
		})
	}
}

func withDemand(in pool.PlanInput, n int32) pool.PlanInput    { in.Demand = n; return in }
func withExpected(in pool.PlanInput, n int32) pool.PlanInput  { in.Expected = n; return in }
func withOthers(in pool.PlanInput, n int32) pool.PlanInput    { in.Others = n; return in }
func withNow(in pool.PlanInput, now time.Time) pool.PlanInput { in.Now = now; return in }
func withSince(in pool.PlanInput, since time.Time) pool.PlanInput {
	in.SurplusSince = &since
	return in
}
func withRecycle(in pool.PlanInput, r vtv1alpha1.RecycleStrategy) pool.PlanInput {
	in.Recycle = r
	return in
}
func withBinding(in pool.PlanInput, b vtv1alpha1.BindingMode) pool.PlanInput {
	in.Binding = b
	return in
}

// Invariants over many random pools: the plan never retires or removes a leased instance,
// and never creates beyond the ceiling.
func TestPlanScaleInvariants(t *testing.T) {
	for seed := int64(0); seed < 2000; seed++ {
		in := randomInput(seed)
		checkPlanInvariants(t, in, pool.PlanScale(in))
	}
}
