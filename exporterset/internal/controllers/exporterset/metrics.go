package exporterset

import "github.com/exporterset/exporterset/exporterset/internal/metrics"

// metricsOf returns the set's metrics bookkeeping, nil when the reconciler has no metrics.
func (r *Reconciler) metricsOf(key string) *metrics.Set {
	if r.Metrics == nil {
		return nil
	}
	return r.memory.metrics.SetOrPut(key, func() *metrics.Set { return &metrics.Set{} })
}
