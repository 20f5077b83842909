package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// The pool's service-level metrics: how long leases waited, whether they were served warm,
// whether bookings were met and how long capacity takes. The controller sees Leases only
// through its watch, so every "seen" below is the first reconcile pass of the set that shows
// it; docs/metrics.md states the precision.

// Values of the lease_assignments_total "start" label.
const (
	startWarm = "warm" // the instance was available when the lease was created
	startCold = "cold" // it became available only after
)

// sloMetrics are the SLO series.
type sloMetrics struct {
	leaseWait     *prometheus.HistogramVec
	assignments   *prometheus.CounterVec
	bookedDelay   *prometheus.HistogramVec
	timeAvailable *prometheus.HistogramVec
	outdated      *prometheus.GaugeVec
	condition     *prometheus.GaugeVec
}

func newSLOMetrics() sloMetrics {
	labels := []string{"namespace", "exporterset"}
	return sloMetrics{
		leaseWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "exporterset_lease_wait_seconds",
			Help:    "Time from a Lease's creationTimestamp to the first pass that sees it assigned to one of the set's instances (leases without spec.beginTime).",
			Buckets: []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800},
		}, labels),
		assignments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "exporterset_lease_assignments_total",
			Help: "Leases seen assigned to the set's instances, by start: warm (the instance was available when the lease was created, or at its beginTime if booked) or cold (it became available later).",
		}, append(labels, "start")),
		bookedDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "exporterset_booked_lease_delay_seconds",
			Help:    "Time from a booked Lease's spec.beginTime to the first pass that sees it assigned (0 when assigned by then).",
			Buckets: []float64{1, 5, 10, 30, 60, 120, 300, 600, 1800},
		}, labels),
		timeAvailable: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "exporterset_instance_time_to_available_seconds",
			Help:    "Time from an instance's creation (its Pod's, under WaitForFirstConsumer) to the first pass that sees it available.",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200},
		}, labels),
		outdated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "exporterset_outdated_replicas",
			Help: "Instances built from an older spec than the set's current one (a roll in progress).",
		}, labels),
		condition: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "exporterset_status_condition",
			Help: "1 while the set's status condition of this type is True, else 0 (Available, Progressing, Degraded, ScalingLimited).",
		}, append(labels, "type")),
	}
}

func (s sloMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.leaseWait, s.assignments, s.bookedDelay, s.timeAvailable, s.outdated, s.condition}
}

// sloMemory is what one set's SLO metrics remember between passes. Every entry is about an
// instance or a Lease the last pass saw, and goes with it.
type sloMemory struct {
	// availableSince is when each instance's current available streak was first seen; the
	// zero time for instances already available at the set's first pass (before we looked).
	availableSince map[types.UID]time.Time
	// untimed are the instances (or, under WaitForFirstConsumer, Pods) seen not yet
	// available: their first availability is timed. timed are those already timed or
	// never to be (available at first sight).
	untimed, timed map[types.UID]bool
	pendingSeen    map[string]bool // Leases seen waiting for one of the set's instances
	assigned       map[string]bool // Leases already counted as assigned
}

func newSLOMemory() *sloMemory {
	return &sloMemory{availableSince: map[types.UID]time.Time{}, untimed: map[types.UID]bool{}, timed: map[types.UID]bool{},
		pendingSeen: map[string]bool{}, assigned: map[string]bool{}}
}

// SLOInput is what a pass shows the SLO metrics: its instances (diagnosed), the namespace's
// not-ended Leases, the Leases waiting for the set, the binding mode and the current spec
// hash ("" when the set is blocked before it has one).
type SLOInput struct {
	Now       time.Time
	Instances []*pool.Instance
	Problems  pool.Problems
	Leases    []*jumpstarterv1alpha1.Lease
	Waiting   []*jumpstarterv1alpha1.Lease
	Binding   vtv1alpha1.BindingMode
	Hash      string
}

// ObserveSLO records the SLO metrics of one pass; set is the set's bookkeeping (metricsOf).
func (m *Metrics) ObserveSLO(ns, name string, set *Set, in SLOInput) {
	if m == nil {
		return
	}
	if in.Hash != "" {
		n := 0
		for _, i := range in.Instances {
			if i.SpecHash() != in.Hash {
				n++
			}
		}
		m.slo.outdated.WithLabelValues(ns, name).Set(float64(n))
	}

	first := set.slo == nil
	if first {
		set.slo = newSLOMemory()
		m.initSeries(ns, name)
	}
	mem := set.slo
	m.observeAssignments(ns, name, mem, in)
	m.observeAvailability(ns, name, mem, first, in)
}

// initSeries creates a set's counters and histograms at zero, so that they are exported
// (and rate() works) before the first event, failures by every reason diagnosis knows.
func (m *Metrics) initSeries(ns, name string) {
	for _, c := range []*prometheus.CounterVec{m.created, m.retired, m.recycled} {
		c.WithLabelValues(ns, name)
	}
	for _, reason := range pool.FailureReasons() {
		m.failures.WithLabelValues(ns, name, string(reason))
	}
	for _, reason := range pool.RetirementReasons() {
		m.retirements.WithLabelValues(ns, name, string(reason))
	}
	m.quarantine.initSeries(ns, name)
	m.slo.assignments.WithLabelValues(ns, name, startWarm)
	m.slo.assignments.WithLabelValues(ns, name, startCold)
	for _, h := range []*prometheus.HistogramVec{m.slo.leaseWait, m.slo.bookedDelay, m.slo.timeAvailable} {
		h.WithLabelValues(ns, name)
	}
}

// observeAssignments counts the Leases first seen assigned this pass. A Lease is measured
// only when this process could have seen it wait: it was created after the controller
// started, or a pass saw it waiting. One assigned before the controller started is not.
func (m *Metrics) observeAssignments(ns, name string, mem *sloMemory, in SLOInput) {
	byName := make(map[string]*jumpstarterv1alpha1.Lease, len(in.Leases))
	for _, l := range in.Leases {
		byName[l.Name] = l
	}
	// holder: lease -> the instance holding it, from either side of the assignment (the
	// Lease's status.exporterRef is written first, then the Exporter's status.leaseRef).
	holder := map[string]*pool.Instance{}
	exporters := make(map[string]*pool.Instance, len(in.Instances))
	for _, i := range in.Instances {
		exporters[i.Name()] = i
		if i.Leased() {
			holder[i.Exporter.Status.LeaseRef.Name] = i
		}
	}
	for _, l := range in.Leases {
		if r := l.Status.ExporterRef; r != nil && exporters[r.Name] != nil && holder[l.Name] == nil {
			holder[l.Name] = exporters[r.Name]
		}
	}

	for _, l := range in.Waiting {
		mem.pendingSeen[l.Name] = true
	}
	for leaseName, inst := range holder {
		l := byName[leaseName]
		if mem.assigned[leaseName] || l == nil {
			continue // counted already, or it ended before we looked
		}
		mem.assigned[leaseName] = true
		created := l.CreationTimestamp.Time
		if !mem.pendingSeen[leaseName] && created.Before(m.start) {
			continue
		}
		wanted := created // when the lease wanted an instance: a booked one from its beginTime
		if b := l.Spec.BeginTime; b != nil {
			m.slo.bookedDelay.WithLabelValues(ns, name).Observe(max(0, in.Now.Sub(b.Time).Seconds()))
			if b.After(created) {
				wanted = b.Time
			}
		} else {
			m.slo.leaseWait.WithLabelValues(ns, name).Observe(max(0, in.Now.Sub(created).Seconds()))
		}
		// Timestamps have a resolution of one second: an instance that became available
		// within the second the lease wanted one counts as warm.
		start := startCold
		if since, ok := mem.availableSince[inst.Exporter.UID]; ok && !since.After(wanted.Add(time.Second)) {
			start = startWarm
		}
		m.slo.assignments.WithLabelValues(ns, name, start).Inc()
	}
	for n := range mem.pendingSeen {
		if l := byName[n]; l == nil || holder[n] != nil {
			delete(mem.pendingSeen, n)
		}
	}
	for n := range mem.assigned {
		if byName[n] == nil {
			delete(mem.assigned, n)
		}
	}
}

// observeAvailability updates the available streaks and times each instance's first
// availability: from the Exporter's creation, or under WaitForFirstConsumer from its
// Pod's (each Pod is one start of the instance there).
func (m *Metrics) observeAvailability(ns, name string, mem *sloMemory, first bool, in SLOInput) {
	live := map[types.UID]bool{}
	for _, i := range in.Instances {
		uid := i.Exporter.UID
		live[uid] = true
		if !i.Available(in.Problems) {
			delete(mem.availableSince, uid)
		} else if _, ok := mem.availableSince[uid]; !ok {
			since := in.Now
			if first {
				since = time.Time{}
			}
			mem.availableSince[uid] = since
		}

		startKey, started := uid, i.Exporter.CreationTimestamp.Time
		if in.Binding == vtv1alpha1.BindingWaitForFirstConsumer {
			pod := i.ActivePod()
			if pod == nil {
				continue
			}
			startKey, started = pod.UID, pod.CreationTimestamp.Time
		}
		live[startKey] = true
		switch {
		case mem.timed[startKey]:
		case i.Available(in.Problems) && (mem.untimed[startKey] || !started.Before(m.start)):
			m.slo.timeAvailable.WithLabelValues(ns, name).Observe(max(0, in.Now.Sub(started).Seconds()))
			mem.timed[startKey] = true
			delete(mem.untimed, startKey)
		case i.Available(in.Problems):
			mem.timed[startKey] = true // available before we looked: its start is not ours to time
		default:
			mem.untimed[startKey] = true
		}
	}
	for _, mp := range []map[types.UID]bool{mem.untimed, mem.timed} {
		for uid := range mp {
			if !live[uid] {
				delete(mp, uid)
			}
		}
	}
	for uid := range mem.availableSince {
		if !live[uid] {
			delete(mem.availableSince, uid)
		}
	}
}

// ObserveConditions sets the condition gauges from the status conditions a pass computed.
func (m *Metrics) ObserveConditions(ns, name string, conds []metav1.Condition) {
	if m == nil {
		return
	}
	for _, c := range conds {
		v := 0.0
		if c.Status == metav1.ConditionTrue {
			v = 1
		}
		m.slo.condition.WithLabelValues(ns, name, c.Type).Set(v)
	}
}

// forgetSLO drops a deleted set's SLO series.
func (m *Metrics) forgetSLO(ns, name string) {
	sel := prometheus.Labels{"namespace": ns, "exporterset": name}
	m.slo.leaseWait.DeletePartialMatch(sel)
	m.slo.assignments.DeletePartialMatch(sel)
	m.slo.bookedDelay.DeletePartialMatch(sel)
	m.slo.timeAvailable.DeletePartialMatch(sel)
	m.slo.outdated.DeletePartialMatch(sel)
	m.slo.condition.DeletePartialMatch(sel)
}
