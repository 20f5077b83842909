package exporterset

import (
	"fmt"
	"time"

	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/pool"
	corev1 "k8s.io/api/core/v1"
)

// The lead time for bookings is learned from the set's own start-up times: how long an
// instance takes from being created until the lease scheduler can assign it (Registered and
// Online), or under WaitForFirstConsumer from its Pod's creation. The lead is a high
// percentile of the recent times plus a margin; before anything is measured a default
// applies, and an annotation on the set overrides both. The samples live in the reconciler's
// memory (memory.go): a restarted controller learns again from the next start-ups.

// AnnotationBookingLeadTime on an ExporterSet overrides its learned lead time for bookings:
// a Go duration such as "90s" or "5m".
const AnnotationBookingLeadTime = "virtualtarget.jumpstarter.dev/booking-lead-time"

// DefaultBookingLeadTime is the lead time of a set none of whose start-ups has been
// measured yet: long enough for a VM or a pulled image on most clusters.
const DefaultBookingLeadTime = 2 * time.Minute

// startupMemory is a set's measured start-ups, and the invalid lead-time override last
// reported, so that it is reported once.
type startupMemory struct {
	pool.StartupLog
	warned string
}

// bookingLead records the start-ups a pass sees and returns the set's lead time for
// bookings: the annotation's when set and valid, else the learned one, else the default.
func (r *Reconciler) bookingLead(p *pass, obs *observation) time.Duration {
	key := keyOf(p.set)
	log, _ := r.memory.startup.ForSet(key)
	log.StartupLog = log.Record(obs.Instances, p.binding(), p.now)
	defer func() { r.memory.startup.PutSet(key, log) }()
	lead, ok := log.LeadTime()
	if !ok {
		lead = DefaultBookingLeadTime
	}
	v, set := p.set.Annotations[AnnotationBookingLeadTime]
	if !set {
		return lead
	}
	d, err := time.ParseDuration(v)
	if err == nil && d < 0 {
		err = fmt.Errorf("negative")
	}
	if err == nil {
		log.warned = ""
		return d
	}
	if log.warned != v {
		log.warned = v
		r.Recorder.Eventf(p.set, nil, corev1.EventTypeWarning, string(eventlog.InvalidSpec), "BookingLeadTime",
			"annotation %s=%q is not a duration such as 90s or 5m (%v); using the lead time %s", AnnotationBookingLeadTime, v, err, lead)
	}
	return lead
}
