package metrics

import "github.com/prometheus/client_golang/prometheus"

// quarantineMetrics are the quarantine's series (issue 31).
type quarantineMetrics struct {
	kept *prometheus.GaugeVec
}

func newQuarantineMetrics() quarantineMetrics {
	return quarantineMetrics{
		kept: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "exporterset_instances_quarantined",
			Help: "Instances the set quarantined (disabled after failing their lease hook or exiting with an error after a lease) and keeps for inspection.",
		}, []string{"namespace", "exporterset"}),
	}
}

func (q quarantineMetrics) collectors() []prometheus.Collector { return []prometheus.Collector{q.kept} }

// ObserveQuarantined sets how many quarantined instances the set keeps.
func (m *Metrics) ObserveQuarantined(ns, name string, kept int) {
	if m != nil {
		m.quarantine.kept.WithLabelValues(ns, name).Set(float64(kept))
	}
}

func (m *Metrics) forgetQuarantine(ns, name string) { m.quarantine.kept.DeleteLabelValues(ns, name) }
