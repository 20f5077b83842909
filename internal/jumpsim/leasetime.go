package jumpsim

import (
	"time"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

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

// expiry is when an assigned lease ends by itself: the earlier of spec.endTime and
// status.beginTime + spec.duration. A lease with neither lasts until released.
func expiry(l *jsv1.Lease) (time.Time, bool) {
	var at time.Time
	ok := false
	if l.Spec.EndTime != nil {
		at, ok = l.Spec.EndTime.Time, true
	}
	if l.Status.BeginTime != nil && l.Spec.Duration != nil && l.Spec.Duration.Duration > 0 {
		if e := l.Status.BeginTime.Add(l.Spec.Duration.Duration); !ok || e.Before(at) {
			at, ok = e, true
		}
	}
	return at, ok
}

// requeueAt turns a deadline into a requeue delay a little past it, so the next pass sees
// the deadline as passed despite timer jitter.
func requeueAt(at, now time.Time) time.Duration {
	return max(at.Sub(now), 0) + 20*time.Millisecond
}
