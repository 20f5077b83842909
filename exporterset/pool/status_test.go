package pool

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestComputeStatus(t *testing.T) {
	cases := []struct {
		name      string
		instances []*Instance
		want      Counts
	}{
		{name: "empty pool", want: Counts{}},
		{
			name:      "exporter without pod: enabled, offline, unavailable",
			instances: []*Instance{instance("a")},
			want:      Counts{Replicas: 1, UnavailableReplicas: 1, ExportersOffline: 1},
		},
		{
			name:      "ready idle instance is available",
			instances: []*Instance{instance("a", ready)},
			want:      Counts{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ExportersIdle: 1, PodsRunning: 1},
		},
		{
			name:      "online but not registered is not ready (the lease scheduler needs both)",
			instances: []*Instance{instance("a", online, pod(corev1.PodRunning))},
			want:      Counts{Replicas: 1, UnavailableReplicas: 1, ExportersIdle: 1, PodsRunning: 1},
		},
		{
			name:      "registered but offline is not ready",
			instances: []*Instance{instance("a", registered)},
			want:      Counts{Replicas: 1, UnavailableReplicas: 1, ExportersOffline: 1},
		},
		{
			name:      "leased online instance is active, not available",
			instances: []*Instance{instance("a", ready, leased("l1"))},
			want:      Counts{Replicas: 1, ReadyReplicas: 1, LeasedReplicas: 1, ExportersActive: 1, PodsRunning: 1},
		},
		{
			name:      "leased offline exporter: leased, offline, not active",
			instances: []*Instance{instance("a", registered, leased("l1"))},
			want:      Counts{Replicas: 1, LeasedReplicas: 1, UnavailableReplicas: 1, ExportersOffline: 1},
		},
		{
			name:      "disabled leased exporter: leased and active, disabled, not offline or unavailable",
			instances: []*Instance{instance("a", ready, leased("l1"), disabled)},
			want:      Counts{Replicas: 1, ReadyReplicas: 1, LeasedReplicas: 1, ExportersActive: 1, ExportersDisabled: 1, PodsRunning: 1},
		},
		{
			name:      "disabled ready idle exporter is neither available nor idle",
			instances: []*Instance{instance("a", ready, disabled)},
			want:      Counts{Replicas: 1, ReadyReplicas: 1, ExportersDisabled: 1, PodsRunning: 1},
		},
		{
			name:      "two pods for one exporter are both counted",
			instances: []*Instance{instance("a", online, registered, pod(corev1.PodFailed), pod(corev1.PodRunning))},
			want:      Counts{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ExportersIdle: 1, PodsRunning: 1, PodsFailed: 1},
		},
		{
			name: "every pod phase",
			instances: []*Instance{
				instance("a", pod(corev1.PodPending)), instance("b", pod("")), instance("c", pod(corev1.PodSucceeded)),
				instance("d", pod(corev1.PodUnknown)), instance("e", pod(corev1.PodFailed)),
			},
			want: Counts{Replicas: 5, UnavailableReplicas: 5, ExportersOffline: 5, PodsPending: 2, PodsUnknown: 2, PodsFailed: 1},
		},
		{
			name: "mixed pool",
			instances: []*Instance{
				instance("idle", ready), instance("busy", ready, leased("l")), instance("boot", pod(corev1.PodPending)),
				instance("off", disabled), instance("gone", ready, retiring),
			},
			want: Counts{Replicas: 5, ReadyReplicas: 3, AvailableReplicas: 1, LeasedReplicas: 1, UnavailableReplicas: 1,
				ExportersActive: 1, ExportersIdle: 1, ExportersDisabled: 2, ExportersOffline: 1, PodsRunning: 3, PodsPending: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, ComputeStatus(tc.instances, problemsOf(tc.instances))); d != "" {
				t.Errorf("ComputeStatus (-want +got):\n%s", d)
			}
		})
	}
}
