package pool

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// planSummary is what a test compares: counts and names, not pointers.
type planSummary struct {
	Wanted, Create                         int32
	CreateAfterRemove, RemoveBeforeCreate  int32
	Retire, Remove, RestartPods, StartPods []string
	Limited                                bool
	SurplusSince                           *time.Time
	RequeueAfter                           time.Duration
}

func summarize(p Plan) planSummary {
	return planSummary{Wanted: p.Wanted, Create: p.Create, CreateAfterRemove: p.CreateAfterRemove, RemoveBeforeCreate: p.RemoveBeforeCreate, Retire: names(p.Retire), Remove: names(p.Remove),
		RestartPods: names(p.RestartPods), StartPods: names(p.StartPods), Limited: p.Limited,
		SurplusSince: p.SurplusSince, RequeueAfter: p.RequeueAfter}
}

func input(minR, maxR, minAvail int32, instances ...*Instance) PlanInput {
	return PlanInput{MinReplicas: minR, MaxReplicas: maxR, MinAvailableReplicas: minAvail, Cooldown: 5 * time.Minute,
		Recycle: vtv1alpha1.RecycleExitAndReplace, Binding: vtv1alpha1.BindingImmediate, SpecHash: "h1",
		Instances: instances, Problems: problemsOf(instances), Now: epoch.Add(time.Hour)}
}

func at(d time.Duration) *time.Time { t := epoch.Add(time.Hour + d); return &t }

func TestPlanScale(t *testing.T) {
	now := epoch.Add(time.Hour)
	cases := []struct {
		name string
		in   PlanInput
		want planSummary
	}{
		{name: "empty set at 0", in: input(0, 4, 0), want: planSummary{}},
		{name: "floor from zero: create all at once", in: input(3, 4, 0), want: planSummary{Wanted: 3, Create: 3}},
		{name: "warm buffer from zero", in: input(0, 4, 2), want: planSummary{Wanted: 2, Create: 2}},
		{
			name: "booting instances count toward the buffer; they get pods",
			in:   input(0, 4, 2, instance("a"), instance("b", pod(corev1.PodPending))),
			want: planSummary{Wanted: 2, StartPods: []string{"a"}},
		},
		{
			name: "a lease consumes a warm instance: refill",
			in:   input(0, 4, 1, instance("a", ready, leased("l"))),
			want: planSummary{Wanted: 2, Create: 1},
		},
		{
			name: "demand raises the target up to the ceiling",
			in:   withDemand(input(0, 3, 1, instance("a", ready)), 5),
			want: planSummary{Wanted: 6, Create: 2, Limited: true},
		},
		{
			name: "unbounded ceiling",
			in:   withDemand(input(0, 0, 1), 10),
			want: planSummary{Wanted: 11, Create: 11},
		},
		{
			name: "expected creates are not created again",
			in:   withExpected(input(3, 4, 0, instance("a")), 2),
			want: planSummary{Wanted: 3, StartPods: []string{"a"}},
		},
		{
			name: "ExitAndReplace: exited unleased instance is removed, replaced in the same pass once gone",
			in:   input(0, 2, 2, instance("a", ready), instance("b", pod(corev1.PodSucceeded))),
			want: planSummary{Wanted: 2, CreateAfterRemove: 1, Remove: []string{"b"}},
		},
		{
			name: "ExitAndReplace below the ceiling: the replacement need not wait",
			in:   input(0, 3, 2, instance("a", ready), instance("b", pod(corev1.PodSucceeded))),
			want: planSummary{Wanted: 2, Create: 1, Remove: []string{"b"}},
		},
		{
			name: "maxReplicas 1: the released instance goes before its replacement comes",
			in:   input(0, 1, 1, instance("a", pod(corev1.PodSucceeded))),
			want: planSummary{Wanted: 1, CreateAfterRemove: 1, Remove: []string{"a"}},
		},
		{
			name: "maxReplicas 1: an instance held by a finalizer holds its place",
			in:   input(0, 1, 1, instance("a", deleting)),
			want: planSummary{Wanted: 1},
		},
		{
			name: "maxReplicas 1: beside one held by a finalizer, a removal makes no room",
			in:   input(0, 1, 1, instance("a", deleting), instance("b", pod(corev1.PodSucceeded))),
			want: planSummary{Wanted: 1, RemoveBeforeCreate: 1, Remove: []string{"b"}},
		},
		{
			name: "strays count against the ceiling",
			in:   withOthers(input(0, 2, 2, instance("a", ready)), 1),
			want: planSummary{Wanted: 2},
		},
		{
			name: "ExitAndReplace: exited but still leased stays (never removed while leased)",
			in:   input(0, 2, 1, instance("b", pod(corev1.PodSucceeded), leased("l"))),
			want: planSummary{Wanted: 2, Create: 1},
		},
		{
			name: "InPlaceReuse: a failed pod is restarted, not the instance",
			in:   withRecycle(input(0, 4, 1, instance("a", pod(corev1.PodFailed))), vtv1alpha1.RecycleInPlaceReuse),
			want: planSummary{Wanted: 1, RestartPods: []string{"a"}},
		},
		{
			name: "a leased instance without a pod (restarted) gets one",
			in:   withRecycle(input(0, 4, 0, instance("a", online, registered, leased("l"))), vtv1alpha1.RecycleInPlaceReuse),
			want: planSummary{Wanted: 1, StartPods: []string{"a"}},
		},
		{
			name: "surplus starts the cooldown clock, rounded up to the second",
			in:   withNow(input(0, 4, 1, instance("a", ready), instance("b", ready)), now.Add(300*time.Millisecond)),
			want: planSummary{Wanted: 1, SurplusSince: at(time.Second), RequeueAfter: 5*time.Minute + 700*time.Millisecond},
		},
		{
			name: "surplus within the cooldown keeps the clock",
			in:   withSince(withNow(input(0, 4, 1, instance("a", ready), instance("b", ready)), now.Add(4*time.Minute)), now),
			want: planSummary{Wanted: 1, SurplusSince: at(0), RequeueAfter: time.Minute},
		},
		{
			name: "one nanosecond before the cooldown ends nothing is retired",
			in:   withSince(withNow(input(0, 4, 1, instance("a", ready), instance("b", ready)), now.Add(5*time.Minute-1)), now),
			want: planSummary{Wanted: 1, SurplusSince: at(0), RequeueAfter: 1},
		},
		{
			name: "after the cooldown the newest idle instance is retired",
			in:   withSince(withNow(input(0, 4, 1, instance("old", ready), instance("new", ready, createdAt(time.Minute))), now.Add(5*time.Minute)), now),
			want: planSummary{Wanted: 1, Retire: []string{"new"}},
		},
		{
			name: "victim order: failed, then not ready, then newest idle",
			in: withRecycle(withSince(withNow(input(0, 0, 0,
				instance("idle-old", ready), instance("idle-new", ready, createdAt(time.Minute)),
				instance("booting", pod(corev1.PodPending)), instance("failed", online, registered, pod(corev1.PodFailed))), now.Add(time.Hour)), now),
				vtv1alpha1.RecycleInPlaceReuse),
			want: planSummary{Retire: []string{"failed", "booting", "idle-new", "idle-old"}},
		},
		{
			name: "leased instances are never retired, even in surplus",
			in:   withSince(withNow(input(0, 4, 0, instance("a", ready, leased("l1")), instance("b", ready, leased("l2"))), now.Add(time.Hour)), now),
			want: planSummary{Wanted: 2},
		},
		{
			name: "surplus ends: the clock resets",
			in:   withSince(input(0, 4, 2, instance("a", ready), instance("b", ready)), now),
			want: planSummary{Wanted: 2},
		},
		{
			name: "excess over a lowered ceiling goes at once, without cooldown",
			in:   input(0, 1, 0, instance("a", ready), instance("b", ready, createdAt(time.Minute)), instance("c", ready, leased("l"))),
			want: planSummary{Wanted: 1, Retire: []string{"b", "a"}},
		},
		{
			name: "ceiling counts instances a person disabled: no replacement beyond max",
			in:   input(0, 2, 2, instance("a", ready, disabled), instance("b", ready)),
			want: planSummary{Wanted: 2, Limited: false},
		},
		{
			name: "retiring unleased instance is removed; leased one waits",
			in:   input(0, 4, 0, instance("a", retiring), instance("b", retiring, leased("l"))),
			want: planSummary{Remove: []string{"a"}},
		},
		{
			name: "rolling by surge: the new instance first, the outdated idle one stays, the leased one waits",
			in:   input(0, 4, 2, instance("old-idle", ready, hash("h0")), instance("old-busy", ready, hash("h0"), leased("l")), instance("new", ready)),
			want: planSummary{Wanted: 3, Create: 1},
		},
		{
			name: "rolling: an outdated instance steps down once a new one is available in its place",
			in:   input(0, 4, 2, instance("old", ready, hash("h0")), instance("new1", ready), instance("new2", ready)),
			want: planSummary{Wanted: 2, Retire: []string{"old"}},
		},
		{
			name: "rolling: an outdated instance that serves nobody goes at once",
			in:   input(0, 4, 1, instance("old", hash("h0"), pod(corev1.PodPending))),
			want: planSummary{Wanted: 1, Create: 1, Retire: []string{"old"}},
		},
		{
			name: "rolling at the ceiling: one at a time, retired before its replacement comes",
			in:   input(0, 2, 2, instance("old1", ready, hash("h0"), createdAt(time.Second)), instance("old2", ready, hash("h0"))),
			want: planSummary{Wanted: 2, Retire: []string{"old1"}},
		},
		{
			name: "rolling at the ceiling: the replacement is not available yet, wait",
			in:   input(0, 2, 2, instance("old1", ready, hash("h0")), instance("new", pod(corev1.PodPending))),
			want: planSummary{Wanted: 2},
		},
		{
			name: "rolling at the ceiling: a retirement in flight, wait",
			in:   input(0, 2, 2, instance("old1", ready, hash("h0")), instance("old2", retiring)),
			want: planSummary{Wanted: 2, Remove: []string{"old2"}, CreateAfterRemove: 1},
		},
		{
			name: "rolling: a lowered ceiling retires the outdated first",
			in:   input(0, 1, 1, instance("old", ready, hash("h0")), instance("new", ready)),
			want: planSummary{Wanted: 1, Retire: []string{"old"}},
		},
		{
			name: "deleting instances serve nobody: replaced below the ceiling",
			in:   input(1, 4, 0, instance("a", deleting)),
			want: planSummary{Wanted: 1, Create: 1},
		},
		{
			name: "WaitForFirstConsumer: no pods without demand",
			in:   withBinding(input(2, 4, 0, instance("a"), instance("b")), vtv1alpha1.BindingWaitForFirstConsumer),
			want: planSummary{Wanted: 2},
		},
		{
			name: "WaitForFirstConsumer: one pod per waiting lease",
			in:   withDemand(withBinding(input(2, 4, 0, instance("a"), instance("b"), instance("c")), vtv1alpha1.BindingWaitForFirstConsumer), 1),
			want: planSummary{Wanted: 2, StartPods: []string{"a"}, SurplusSince: at(0), RequeueAfter: 5 * time.Minute},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, summarize(PlanScale(tc.in)), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("PlanScale (-want +got):\n%s", d)
			}
		})
	}
}

func withDemand(in PlanInput, n int32) PlanInput                       { in.Demand = n; return in }
func withExpected(in PlanInput, n int32) PlanInput                     { in.Expected = n; return in }
func withOthers(in PlanInput, n int32) PlanInput                       { in.Others = n; return in }
func withNow(in PlanInput, now time.Time) PlanInput                    { in.Now = now; return in }
func withSince(in PlanInput, since time.Time) PlanInput                { in.SurplusSince = &since; return in }
func withRecycle(in PlanInput, r vtv1alpha1.RecycleStrategy) PlanInput { in.Recycle = r; return in }
func withBinding(in PlanInput, b vtv1alpha1.BindingMode) PlanInput     { in.Binding = b; return in }

// Invariants over many random pools: the plan never retires or removes a leased instance,
// and never creates beyond the ceiling.
func TestPlanScaleInvariants(t *testing.T) {
	for seed := int64(0); seed < 2000; seed++ {
		in := randomInput(seed)
		checkPlanInvariants(t, in, PlanScale(in))
	}
}
