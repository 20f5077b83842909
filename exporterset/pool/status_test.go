package pool_test

import (
	"testing"

	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestComputeStatus(t *testing.T) {
	cases := []struct {
		name      string
		instances []*pool.Instance
		want      pool.Counts
	}{
		{name: "empty pool", want: pool.Counts{}},
		{
			name:      "exporter without pod: enabled, offline, unavailable, at rest",
			instances: []*pool.Instance{fixture.Instance("a")},
			want:      pool.Counts{Replicas: 1, UnavailableReplicas: 1, ExportersOffline: 1, RestingReplicas: 1},
		},
		{
			name:      "leased, disabled or being deleted without a pod: not at rest",
			instances: []*pool.Instance{fixture.Instance("a", fixture.Leased("l")), fixture.Instance("b", fixture.Retiring), fixture.Instance("c", fixture.Deleting)},
			want:      pool.Counts{Replicas: 3, LeasedReplicas: 1, UnavailableReplicas: 2, ExportersOffline: 2, ExportersDisabled: 1},
		},
		{
			name:      "ready idle instance is available",
			instances: []*pool.Instance{fixture.Instance("a", fixture.Ready)},
			want:      pool.Counts{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ExportersIdle: 1, PodsRunning: 1},
		},
		{
			name:      "online but not registered is not ready (the lease scheduler needs both)",
			instances: []*pool.Instance{fixture.Instance("a", fixture.Online, fixture.Pod(corev1.PodRunning))},
			want:      pool.Counts{Replicas: 1, UnavailableReplicas: 1, ExportersIdle: 1, PodsRunning: 1},
		},
		{
			name:      "registered but offline is not ready",
			instances: []*pool.Instance{fixture.Instance("a", fixture.Registered)},
			want:      pool.Counts{Replicas: 1, UnavailableReplicas: 1, ExportersOffline: 1, RestingReplicas: 1},
		},
		{
			name:      "leased online instance is active, not available",
			instances: []*pool.Instance{fixture.Instance("a", fixture.Ready, fixture.Leased("l1"))},
			want:      pool.Counts{Replicas: 1, ReadyReplicas: 1, LeasedReplicas: 1, ExportersActive: 1, PodsRunning: 1},
		},
		{
			name:      "leased offline exporter: leased, offline, not active",
			instances: []*pool.Instance{fixture.Instance("a", fixture.Registered, fixture.Leased("l1"))},
			want:      pool.Counts{Replicas: 1, LeasedReplicas: 1, UnavailableReplicas: 1, ExportersOffline: 1},
		},
		{
			name:      "disabled leased exporter: leased and active, disabled, not offline or unavailable",
			instances: []*pool.Instance{fixture.Instance("a", fixture.Ready, fixture.Leased("l1"), fixture.Disabled)},
			want:      pool.Counts{Replicas: 1, ReadyReplicas: 1, LeasedReplicas: 1, ExportersActive: 1, ExportersDisabled: 1, PodsRunning: 1},
		},
		{
			name:      "disabled ready idle exporter is neither available nor idle",
			instances: []*pool.Instance{fixture.Instance("a", fixture.Ready, fixture.Disabled)},
			want:      pool.Counts{Replicas: 1, ReadyReplicas: 1, ExportersDisabled: 1, PodsRunning: 1},
		},
		{
			name:      "two pods for one exporter are both counted",
			instances: []*pool.Instance{fixture.Instance("a", fixture.Online, fixture.Registered, fixture.Pod(corev1.PodFailed), fixture.Pod(corev1.PodRunning))},
			want:      pool.Counts{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ExportersIdle: 1, PodsRunning: 1, PodsFailed: 1},
		},
		{
			name: "every pod phase",
			instances: []*pool.Instance{
				fixture.Instance("a", fixture.Pod(corev1.PodPending)), fixture.Instance("b", fixture.Pod("")), fixture.Instance("c", fixture.Pod(corev1.PodSucceeded)),
				fixture.Instance("d", fixture.Pod(corev1.PodUnknown)), fixture.Instance("e", fixture.Pod(corev1.PodFailed)),
			},
			want: pool.Counts{Replicas: 5, UnavailableReplicas: 5, ExportersOffline: 5, PodsPending: 2, PodsUnknown: 2, PodsFailed: 1},
		},
		{
			name: "mixed pool",
			instances: []*pool.Instance{
				fixture.Instance("idle", fixture.Ready), fixture.Instance("busy", fixture.Ready, fixture.Leased("l")), fixture.Instance("boot", fixture.Pod(corev1.PodPending)),
				fixture.Instance("off", fixture.Disabled), fixture.Instance("gone", fixture.Ready, fixture.Retiring),
			},
			want: pool.Counts{Replicas: 5, ReadyReplicas: 3, AvailableReplicas: 1, LeasedReplicas: 1, UnavailableReplicas: 1,
				ExportersActive: 1, ExportersIdle: 1, ExportersDisabled: 2, ExportersOffline: 1, PodsRunning: 3, PodsPending: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, pool.ComputeStatus(tc.instances, fixture.ProblemsOf(tc.instances))); d != "" {
				t.Errorf("ComputeStatus (-want +got):\n%s", d)
			}
		})
	}
}
