package pool

import (
	"fmt"
	"sort"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Booked demand: Leases booked ahead (spec.beginTime) that the set's instances would serve.
// The Jumpstarter controller assigns nothing before a booking's begin time and sets no
// condition on it meanwhile, so a booking is not a waiting lease (waitingFor) until it has
// begun and found no exporter. The plan counts a booking once its begin time is within the
// set's lead time, so that an instance is available when it begins.

// Booking is a Lease booked ahead for the set's instances.
type Booking struct {
	// Name is the Lease's name.
	Name string
	// Begin is when the lease may begin: spec.beginTime, else spec.endTime - duration.
	Begin time.Time
}

// BookedFor reports whether l is a booking the set's instances (with these labels) would
// serve: not started, not ended or released, not pinned to an exporter by name, with a begin
// time, and not yet waiting (Pending) for an exporter, when it counts as walk-in demand.
func BookedFor(l *jumpstarterv1alpha1.Lease, exporterLabels labels.Set) (Booking, bool) {
	if l.Status.Ended || l.Spec.Release || l.Status.ExporterRef != nil || l.DeletionTimestamp != nil {
		return Booking{}, false
	}
	if l.Spec.ExporterRef != nil && l.Spec.ExporterRef.Name != "" {
		return Booking{}, false
	}
	if apimeta.IsStatusConditionTrue(l.Status.Conditions, jumpstarterv1alpha1.LeaseConditionPending) {
		return Booking{}, false
	}
	var begin time.Time
	switch {
	case l.Spec.BeginTime != nil:
		begin = l.Spec.BeginTime.Time
	case l.Spec.EndTime != nil && l.Spec.Duration != nil && l.Spec.Duration.Duration > 0:
		begin = l.Spec.EndTime.Add(-l.Spec.Duration.Duration)
	default:
		return Booking{}, false
	}
	sel, err := metav1.LabelSelectorAsSelector(&l.Spec.Selector)
	if err != nil || sel.Empty() {
		return Booking{}, false
	}
	if !sel.Matches(exporterLabels) {
		return Booking{}, false
	}
	return Booking{Name: l.Name, Begin: begin}, true
}

// SortBookings orders bookings by begin time, then name: the order in which the ceiling
// serves them.
func SortBookings(b []Booking) {
	sort.Slice(b, func(i, j int) bool {
		if !b[i].Begin.Equal(b[j].Begin) {
			return b[i].Begin.Before(b[j].Begin)
		}
		return b[i].Name < b[j].Name
	})
}

// bookedDemand splits bookings (sorted) at the lead time: those due are the ones to have
// an instance for now; wake is when the next one falls due (0: none later).
func bookedDemand(bookings []Booking, lead time.Duration, now time.Time) (due []Booking, wake time.Duration) {
	for _, b := range bookings {
		if start := b.Begin.Add(-lead); !now.Before(start) {
			due = append(due, b)
		} else if d := start.Sub(now); wake == 0 || d < wake {
			wake = d
		}
	}
	return due, wake
}

// bookingsOverCeiling names the due bookings (in begin order) beyond room, the instances
// the ceiling leaves for bookings once the leased and waiting leases have theirs. A booking
// may take a warm buffer instance when it begins, so the buffer does not count against it.
func bookingsOverCeiling(due []Booking, room int32) []string {
	var out []string
	for k := max(0, int(room)); k < len(due); k++ {
		out = append(out, due[k].Name)
	}
	return out
}

// bookingNote says what a set prepares for, e.g. "3 leases begin at 02:00:00; instances
// for them start from 01:58:40 (lead time 1m20s), 2 starting now". It is empty without
// bookings due.
func bookingNote(due []Booking, creating int32, lead time.Duration, waiting []string) string {
	if len(due) == 0 {
		return ""
	}
	byBegin := map[time.Time]int{}
	var begins []time.Time
	for _, b := range due {
		if byBegin[b.Begin] == 0 {
			begins = append(begins, b.Begin)
		}
		byBegin[b.Begin]++
	}
	var parts []string
	for _, t := range begins {
		parts = append(parts, fmt.Sprintf("%d %s at %s", byBegin[t], plural(byBegin[t], "lease begins", "leases begin"), t.UTC().Format(time.TimeOnly)))
	}
	msg := strings.Join(parts, ", ")
	msg += fmt.Sprintf("; instances for them start from %s (lead time %s)", begins[0].Add(-lead).UTC().Format(time.TimeOnly), lead)
	if creating > 0 {
		msg += fmt.Sprintf(", %d starting now", creating)
	}
	if len(waiting) > 0 {
		msg += fmt.Sprintf("; maxReplicas leaves %s waiting", strings.Join(waiting, ", "))
	}
	return msg
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
