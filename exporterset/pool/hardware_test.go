package pool_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// board is a physical Exporter labelled board=rpi4 (no set label, no owner), with traits.
func board(name string, traits ...fixture.Trait) *jumpstarterv1alpha1.Exporter {
	in := fixture.Instance(name, traits...)
	in.Exporter.Labels = map[string]string{"board": "rpi4"}
	return in.Exporter
}

func TestFreeBoards(t *testing.T) {
	ready := []fixture.Trait{fixture.Online, fixture.Registered}
	with := func(e *jumpstarterv1alpha1.Exporter, f func(*jumpstarterv1alpha1.Exporter)) *jumpstarterv1alpha1.Exporter {
		f(e)
		return e
	}
	boards := []*jumpstarterv1alpha1.Exporter{
		board("free-b", ready...),
		board("free-a", ready...),
		with(board("status-available", ready...), func(e *jumpstarterv1alpha1.Exporter) {
			e.Status.ExporterStatusValue = jumpstarterv1alpha1.ExporterStatusAvailable
		}),
		board("offline", fixture.Registered),
		board("unregistered", fixture.Online),
		board("disabled", append(ready, fixture.Disabled)...),
		board("leased", append(ready, fixture.Leased("l1"))...),
		board("deleting", append(ready, fixture.Deleting)...),
		with(board("in-a-hook", ready...), func(e *jumpstarterv1alpha1.Exporter) {
			e.Status.ExporterStatusValue = jumpstarterv1alpha1.ExporterStatusBeforeLeaseHook
		}),
		with(board("owned", ready...), func(e *jumpstarterv1alpha1.Exporter) {
			e.OwnerReferences = []metav1.OwnerReference{{Kind: "ExporterSet", Name: "s", UID: "u", Controller: ptr.To(true)}}
		}),
		with(board("set-labelled", ready...), func(e *jumpstarterv1alpha1.Exporter) { e.Labels[pool.LabelSet] = "s" }),
		with(board("other-kind", ready...), func(e *jumpstarterv1alpha1.Exporter) { e.Labels["board"] = "jetson" }),
	}
	var exporters []jumpstarterv1alpha1.Exporter
	for _, b := range boards {
		exporters = append(exporters, *b)
	}
	sel := labels.SelectorFromSet(labels.Set{"board": "rpi4"})
	want := []string{"free-a", "free-b", "status-available"}
	if diff := cmp.Diff(want, pool.FreeBoards(exporters, sel)); diff != "" {
		t.Errorf("free boards (-want +got):\n%s", diff)
	}
	if got := pool.FreeBoards(exporters, labels.Everything()); got != nil {
		t.Errorf("an empty selector names boards: %v", got)
	}
	if got := pool.FreeBoards(exporters, nil); got != nil {
		t.Errorf("no selector names boards: %v", got)
	}
}

// Free boards count toward the warm buffer: the set's own instances hold only the rest, and
// the floor, the ceiling, waiting Leases and the lease-wait rule keep their meaning.
func TestPlanCountsFreeBoards(t *testing.T) {
	boards := func(in pool.PlanInput, n int32) pool.PlanInput { in.FreeBoards = n; return in }
	cases := []struct {
		name string
		in   pool.PlanInput
		want planSummary
	}{
		{
			name: "two free boards fill a buffer of 2: nothing runs, one Exporter rests for Leases to wait on",
			in:   boards(input(0, 5, 2), 2),
			want: planSummary{Standby: 1, Create: 1},
		},
		{
			name: "one board free of two: one instance for the rest of the buffer",
			in:   boards(input(0, 5, 2), 1),
			want: planSummary{Wanted: 1, Create: 1},
		},
		{
			name: "no board free: the whole buffer",
			in:   boards(input(0, 5, 2), 0),
			want: planSummary{Wanted: 2, Create: 2},
		},
		{
			name: "more boards than the buffer: never below 0, the floor holds",
			in:   boards(input(1, 5, 2, fixture.Instance("a", fixture.Ready)), 4),
			want: planSummary{Wanted: 1},
		},
		{
			name: "boards free again: the surplus waits for the cooldown",
			in:   boards(input(0, 5, 2, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)), 2),
			want: planSummary{Standby: 1, SurplusSince: at(0), RequeueAfter: input(0, 5, 2).Cooldown},
		},
		{
			name: "waiting Leases still grow the set beside free boards",
			in:   withDemand(boards(input(0, 5, 2), 2), 1),
			want: planSummary{Wanted: 1, Create: 1},
		},
		{
			name: "busy instances and boards: the buffer on top of the busy",
			in:   boards(input(0, 5, 2, fixture.Instance("a", fixture.Ready, fixture.Leased("l"))), 1),
			want: planSummary{Wanted: 2, Create: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(pool.PlanScale(tc.in))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuffer(t *testing.T) {
	for _, c := range []struct{ minAvail, boards, want int32 }{{2, 0, 2}, {2, 1, 1}, {2, 2, 0}, {2, 5, 0}, {0, 3, 0}} {
		if got := pool.Buffer(c.minAvail, c.boards); got != c.want {
			t.Errorf("Buffer(%d, %d) = %d, want %d", c.minAvail, c.boards, got, c.want)
		}
	}
}
