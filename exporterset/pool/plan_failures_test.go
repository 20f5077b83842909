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

// A failing instance in the plan: retired and replaced, or its Pod restarted, unless leased.
func TestPlanFailures(t *testing.T) {
	failing := func(replace bool) fixture.Trait {
		return fixture.WithProblem(&pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Replace: replace})
	}
	now := fixture.Epoch.Add(time.Hour)
	cases := []struct {
		name string
		in   pool.PlanInput
		want planSummary
	}{
		{
			name: "a crash-looping idle instance is retired and replaced",
			in:   input(0, 4, 1, fixture.Instance("a", fixture.Ready, failing(true)), fixture.Instance("b", fixture.Ready, fixture.Leased("l"))),
			want: planSummary{Wanted: 2, Create: 1, Retire: []string{"a"}},
		},
		{
			name: "a crash-looping last Exporter stays until its replacement exists",
			in:   input(0, 4, 1, fixture.Instance("a", fixture.Ready, failing(true))),
			want: planSummary{Wanted: 1, Create: 1, Bridge: "a"},
		},
		{
			name: "a crash-looping last Exporter at the ceiling is kept, its Pod replaced",
			in:   input(0, 1, 1, fixture.Instance("a", fixture.Ready, failing(true))),
			want: planSummary{Wanted: 1, RestartPods: []string{"a"}},
		},
		{
			name: "a crash-looping leased instance is kept: never break a lease",
			in:   input(0, 4, 0, fixture.Instance("a", fixture.Ready, fixture.Leased("l"), failing(true))),
			want: planSummary{Wanted: 1},
		},
		{
			name: "a problem that waiting may fix (pull back-off) keeps the instance",
			in:   input(0, 4, 1, fixture.Instance("a", fixture.Pod(corev1.PodPending), failing(false))),
			want: planSummary{Wanted: 1},
		},
		{
			name: "InPlaceReuse restarts a crash-looping idle instance's Pod instead of retiring it",
			in: func() pool.PlanInput {
				in := input(0, 4, 1, fixture.Instance("a", fixture.Ready, failing(true)))
				in.Recycle = vtv1alpha1.RecycleInPlaceReuse
				return in
			}(),
			want: planSummary{Wanted: 1, RestartPods: []string{"a"}},
		},
		{
			name: "backing off holds creates and Pod starts, and says when to look again",
			in: func() pool.PlanInput {
				in := input(0, 4, 2, fixture.Instance("a"), fixture.Instance("b", fixture.Ready, failing(true)))
				in.BackoffUntil = now.Add(8 * time.Second)
				return in
			}(),
			want: planSummary{Wanted: 2, Retire: []string{"b"}, RequeueAfter: 8 * time.Second},
		},
		{
			name: "a backoff in the past holds nothing",
			in: func() pool.PlanInput {
				in := input(0, 4, 1)
				in.BackoffUntil = now.Add(-time.Second)
				return in
			}(),
			want: planSummary{Wanted: 1, Create: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summarize(pool.PlanScale(tc.in)), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
