package metrics

import "github.com/prometheus/client_golang/prometheus"

// quarantineMetrics are the quarantine's series (issue 31).
type quarantineMetrics struct {
	kept  *prometheus.GaugeVec
	total *prometheus.CounterVec
}

func newQuarantineMetrics() quarantineMetrics {
	labels := []string{"namespace", "exporterset"}
	return quarantineMetrics{
		kept: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "exporterset_instances_quarantined",
			Help: "Instances the set quarantined (disabled after failing their lease hook or exiting with an error after a lease) and keeps for inspection.",
		}, labels),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "exporterset_quarantines_total",
			Help: "Instances quarantined, by reason (AfterLeaseHookFailed, BeforeLeaseHookFailed, ExitedAfterLease).",
		}, append(labels, "reason")),
	}
}

// quarantineReasons are the reasons exporterset_quarantines_total is exported with from a
// set's first pass: the exporter's two hook failures, and an exit with an error after a lease.
var quarantineReasons = []string{"AfterLeaseHookFailed", "BeforeLeaseHookFailed", "ExitedAfterLease"}

// initSeries exports the set's quarantine series at zero, so that they (and rate()) exist
// before the first quarantine.
func (q quarantineMetrics) initSeries(ns, name string) {
	q.kept.WithLabelValues(ns, name)
	for _, reason := range quarantineReasons {
		q.total.WithLabelValues(ns, name, reason)
	}
}

func (q quarantineMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{q.kept, q.total}
}

// ObserveQuarantined sets how many quarantined instances the set keeps.
func (m *Metrics) ObserveQuarantined(ns, name string, kept int) {
	if m != nil {
		m.quarantine.kept.WithLabelValues(ns, name).Set(float64(kept))
	}
}

// CountQuarantined counts an instance quarantined for reason.
func (m *Metrics) CountQuarantined(ns, name, reason string) {
	if m != nil {
		m.quarantine.total.WithLabelValues(ns, name, reason).Inc()
	}
}

func (m *Metrics) forgetQuarantine(ns, name string) {
	m.quarantine.kept.DeleteLabelValues(ns, name)
	m.quarantine.total.DeletePartialMatch(prometheus.Labels{"namespace": ns, "exporterset": name})
}
