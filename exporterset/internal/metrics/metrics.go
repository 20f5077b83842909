package metrics

import (
	"time"

	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the reconciler's Prometheus series. A nil *Metrics records nothing, so the
// reconciler works without a registry.
type Metrics struct {
	replicas, available, leased, resting *prometheus.GaugeVec
	hardware                             *prometheus.GaugeVec
	created, retired, recycled           *prometheus.CounterVec
	retirements                          *prometheus.CounterVec
	replacement                          prometheus.Histogram
	failures                             *prometheus.CounterVec
	backingOff                           *prometheus.GaugeVec
	slo                                  sloMetrics
	quarantine                           quarantineMetrics
	budget                               budgetMetrics
	start                                time.Time // when the process began to look (slo.go)
}

// Set is what the metrics remember of one set between passes. It is kept in the
// set's record in memory (memory.go), so it goes with the set, and only the set's pass
// touches it.
type Set struct {
	// exporters seen leased last time, exporters seen available, and release times
	// waiting for an instance to become available again.
	leasedLast, availableLast map[string]bool
	releases                  []time.Time
	slo                       *sloMemory // nil until the set's first pass (slo.go)
}

// New makes the series and registers them with reg (none when nil). start is when the
// process began to look: a lease assigned before it is not counted (slo.go).
func New(reg prometheus.Registerer, start time.Time) *Metrics {
	labels := []string{"namespace", "exporterset"}
	m := &Metrics{
		replicas:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "exporterset_replicas", Help: "Exporters owned by the set."}, labels),
		available: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "exporterset_available_replicas", Help: "Ready, enabled and unleased exporters (the warm pool)."}, labels),
		leased:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "exporterset_leased_replicas", Help: "Exporters holding a lease."}, labels),
		resting:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "exporterset_resting_replicas", Help: "Enabled, unleased exporters without a Pod, started when a lease waits."}, labels),
		hardware:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "exporterset_hardware_available_replicas", Help: "Free physical boards the set's hardware selector names, counted toward its warm buffer."}, labels),
		created:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "exporterset_instances_created_total", Help: "Instances created."}, labels),
		retired:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "exporterset_instances_retired_total", Help: "Instances retired (disabled to be removed); by reason in exporterset_retirements_total."}, labels),
		recycled:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "exporterset_instances_recycled_total", Help: "Instances removed after their exporter exited at lease end."}, labels),
		retirements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "exporterset_retirements_total",
			Help: "Instances retired or removed, by reason: released, rolled, scaled-down, quarantined, max-use, idle-age, failed.",
		}, append(labels, "reason")),
		replacement: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "exporterset_lease_release_to_available_seconds",
			Help:    "Time from a lease release to the pool having one more available instance.",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 12),
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "exporterset_instance_failures_total",
			Help: "Instance failures seen, by reason (ImagePullFailed, TargetCrashing, Unschedulable, ...): each instance counts once per reason it shows.",
		}, append(labels, "reason")),
		backingOff: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "exporterset_backing_off", Help: "1 while the set holds back new instances after consecutive failures, else 0."}, labels),
		slo:        newSLOMetrics(),
		quarantine: newQuarantineMetrics(),
		budget:     newBudgetMetrics(),
		start:      start.Truncate(time.Second), // creationTimestamps have whole seconds
	}
	if reg != nil {
		reg.MustRegister(m.replicas, m.available, m.leased, m.resting, m.hardware, m.created, m.retired, m.recycled, m.retirements, m.replacement, m.failures, m.backingOff)
		reg.MustRegister(m.slo.collectors()...)
		reg.MustRegister(m.quarantine.collectors()...)
		reg.MustRegister(m.budget.collectors()...)
	}
	return m
}

// ObserveStatus sets the set's gauges and times replacements: mem is the set's bookkeeping
// (metricsOf).
func (m *Metrics) ObserveStatus(ns, name string, mem *Set, c pool.Counts, instances []*pool.Instance, problems pool.Problems, now time.Time) {
	if m == nil {
		return
	}
	m.replicas.WithLabelValues(ns, name).Set(float64(c.Replicas))
	m.available.WithLabelValues(ns, name).Set(float64(c.AvailableReplicas))
	m.leased.WithLabelValues(ns, name).Set(float64(c.LeasedReplicas))
	m.resting.WithLabelValues(ns, name).Set(float64(c.RestingReplicas))
	m.hardware.WithLabelValues(ns, name).Set(float64(c.HardwareAvailableReplicas))

	leased, available := map[string]bool{}, map[string]bool{}
	for _, in := range instances {
		if in.Leased() {
			leased[in.Name()] = true
		}
		if in.Available(problems) {
			available[in.Name()] = true
		}
	}
	for n := range mem.leasedLast {
		if !leased[n] {
			mem.releases = append(mem.releases, now)
		}
	}
	for n := range available {
		if !mem.availableLast[n] && len(mem.releases) > 0 {
			m.replacement.Observe(now.Sub(mem.releases[0]).Seconds())
			mem.releases = mem.releases[1:]
		}
	}
	mem.leasedLast, mem.availableLast = leased, available
}

// ObserveFailures counts the problems new this pass and whether the set backs off.
func (m *Metrics) ObserveFailures(ns, name string, b pool.Backoff, now time.Time) {
	if m == nil {
		return
	}
	for _, pr := range b.New {
		m.failures.WithLabelValues(ns, name, string(pr.Reason)).Inc()
	}
	v := 0.0
	if b.Active(now) {
		v = 1
	}
	m.backingOff.WithLabelValues(ns, name).Set(v)
}

// CountCreated, countRetired and countRecycled add n to the counters (nil-safe).
func (m *Metrics) CountCreated(ns, name string, n int) {
	if m != nil && n > 0 {
		m.created.WithLabelValues(ns, name).Add(float64(n))
	}
}

func (m *Metrics) CountRetired(ns, name string, n int) {
	if m != nil && n > 0 {
		m.retired.WithLabelValues(ns, name).Add(float64(n))
	}
}

func (m *Metrics) CountRecycled(ns, name string, n int) {
	if m != nil && n > 0 {
		m.recycled.WithLabelValues(ns, name).Add(float64(n))
	}
}

// CountRetirement counts one instance retired (or removed) for reason, one of
// pool.RetirementReasons (nil-safe).
func (m *Metrics) CountRetirement(ns, name, reason string) {
	if m != nil {
		m.retirements.WithLabelValues(ns, name, reason).Inc()
	}
}

// Forget drops a deleted set's series; its bookkeeping goes with its record in memory.
func (m *Metrics) Forget(ns, name string) {
	if m == nil {
		return
	}
	for _, g := range []*prometheus.GaugeVec{m.replicas, m.available, m.leased, m.resting, m.hardware, m.backingOff} {
		g.DeleteLabelValues(ns, name)
	}
	for _, c := range []*prometheus.CounterVec{m.created, m.retired, m.recycled} {
		c.DeleteLabelValues(ns, name)
	}
	m.failures.DeletePartialMatch(prometheus.Labels{"namespace": ns, "exporterset": name})
	m.retirements.DeletePartialMatch(prometheus.Labels{"namespace": ns, "exporterset": name})
	m.forgetSLO(ns, name)
	m.forgetQuarantine(ns, name)
	m.budget.reclaims.DeletePartialMatch(prometheus.Labels{"namespace": ns, "set": name}) // in every budget
}
