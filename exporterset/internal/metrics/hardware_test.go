package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// The free boards a set counts are a series of the set: set each pass, dropped with it.
func TestHardwareGaugeFollowsTheSet(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, fixture.Epoch)
	series := map[string]string{"namespace": "ns", "exporterset": "pool"}
	m.ObserveStatus("ns", "pool", &Set{}, pool.Counts{HardwareAvailableReplicas: 2}, nil, nil, fixture.Epoch)
	if got := counterOf(t, reg, "exporterset_hardware_available_replicas", series); got != 2 {
		t.Errorf("hardware gauge = %v, want 2", got)
	}
	m.ObserveStatus("ns", "pool", &Set{}, pool.Counts{HardwareAvailableReplicas: 1}, nil, nil, fixture.Epoch)
	if got := counterOf(t, reg, "exporterset_hardware_available_replicas", series); got != 1 {
		t.Errorf("hardware gauge after a board was taken = %v, want 1", got)
	}
	m.Forget("ns", "pool")
	if metricSample(t, reg, "exporterset_hardware_available_replicas", nil) != nil {
		t.Error("forget left the set's hardware series behind")
	}
}
