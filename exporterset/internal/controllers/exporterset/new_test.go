package exporterset

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/exporterset/exporterset/exporterset/internal/cabundle"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/metrics"
	"github.com/exporterset/exporterset/exporterset/internal/state"
)

// newTestReconciler is a set controller without a client, its shared parts made as the
// front makes them (but the instance controller's), for the pure tests.
func newTestReconciler(mods ...func(*Config)) *Reconciler {
	cfg := DefaultConfig()
	for _, m := range mods {
		m(&cfg)
	}
	mem := state.NewMemory()
	return New(nil, nil, nil, cfg, Shared{
		Memory: mem, Board: contract.NewBoard(mem), CA: cabundle.New(mem, nil, cfg.Clock),
		InstanceRetired: func(string, types.UID) {},
	})
}

// withMetrics registers the metrics with reg.
func withMetrics(reg prometheus.Registerer) func(*Config) {
	return func(c *Config) { c.Metrics = metrics.New(reg, c.Clock.Now()) }
}
