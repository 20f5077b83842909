package jumpsim

import (
	"time"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// A lease's times, by upstream's rules (lease_controller.go at b1f2bb41): a booked lease
// (spec.beginTime) is assigned nothing before its begin time, and it ends at spec.endTime
// when set, else at spec.beginTime + duration, even if it was assigned late. Only a lease
// without a booked begin runs for its duration from when it actually began.

// requestedBegin is when a lease may start: spec.beginTime, else spec.endTime - duration
// when both are set (a "finish by" lease), else now.
func requestedBegin(l *jsv1.Lease) (time.Time, bool) {
	if l.Spec.BeginTime != nil {
		return l.Spec.BeginTime.Time, true
	}
	if l.Spec.EndTime != nil && l.Spec.Duration != nil && l.Spec.Duration.Duration > 0 {
		return l.Spec.EndTime.Add(-l.Spec.Duration.Duration), true
	}
	return time.Time{}, false
}

// plannedEnd is when a lease ends whether or not it was ever assigned: spec.endTime, else
// spec.beginTime + duration. A lease with neither has no end fixed in advance.
func plannedEnd(l *jsv1.Lease) (time.Time, bool) {
	if l.Spec.EndTime != nil {
		return l.Spec.EndTime.Time, true
	}
	if l.Spec.BeginTime != nil && l.Spec.Duration != nil && l.Spec.Duration.Duration > 0 {
		return l.Spec.BeginTime.Add(l.Spec.Duration.Duration), true
	}
	return time.Time{}, false
}

// expiry is when an assigned lease ends by itself: its planned end, else status.beginTime +
// duration. A lease with none of these lasts until released.
func expiry(l *jsv1.Lease) (time.Time, bool) {
	if at, ok := plannedEnd(l); ok {
		return at, true
	}
	if l.Status.BeginTime != nil && l.Spec.Duration != nil && l.Spec.Duration.Duration > 0 {
		return l.Status.BeginTime.Add(l.Spec.Duration.Duration), true
	}
	return time.Time{}, false
}

// waitingRequeue is when a lease that waits for an exporter is looked at again without an
// event: at its planned end if that comes first, to expire it on time.
func waitingRequeue(l *jsv1.Lease, now time.Time) time.Duration {
	if end, ok := plannedEnd(l); ok && end.Sub(now) < pendingSafetyRequeue {
		return requeueAt(end, now)
	}
	return pendingSafetyRequeue
}

// requeueAt turns a deadline into a requeue delay a little past it, so the next pass sees
// the deadline as passed despite timer jitter.
func requeueAt(at, now time.Time) time.Duration {
	return max(at.Sub(now), 0) + 20*time.Millisecond
}
