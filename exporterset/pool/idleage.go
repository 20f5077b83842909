package pool

import (
	"hash/fnv"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Retirement by idle age (the set's max-idle-age): an instance ready and unleased for longer
// than the age is rolled like an outdated one, by surge (roll.go): its replacement is
// created first and the old one is retired once the pool can spare it, so the warm buffer
// never drops because of it.

// IdleSince is when the instance became idle, from what the API shows: the later of its
// becoming ready (the last transition of Online and of Registered) and its last lease's
// end (AnnotationIdleSince, which the set writes when it first sees the lease gone). ok is
// false for an instance that is not idle: not ready, disabled, leased, or whose last lease's
// end is not recorded yet.
func (i *Instance) IdleSince() (since time.Time, ok bool) {
	if !i.Ready() || !i.Enabled() || i.Leased() {
		return time.Time{}, false
	}
	for _, typ := range []string{jumpstarterv1alpha1.ExporterConditionOnline, jumpstarterv1alpha1.ExporterConditionRegistered} {
		if c := apimeta.FindStatusCondition(i.Exporter.Status.Conditions, typ); c != nil && c.LastTransitionTime.After(since) {
			since = c.LastTransitionTime.Time
		}
	}
	a := i.Exporter.Annotations
	if a[AnnotationLastLease] != "" {
		ended, err := time.Parse(time.RFC3339, a[AnnotationIdleSince])
		if err != nil {
			return time.Time{}, false // its lease's end is not recorded yet: the set writes it
		}
		if ended.After(since) {
			since = ended
		}
	}
	return since, true
}

// IdleDeadline is when the idle instance is due for replacement: maxIdle after IdleSince,
// jittered by ±10 % (idleJitter), so that instances made together are not rolled together.
func IdleDeadline(i *Instance, maxIdle time.Duration) (time.Time, bool) {
	since, ok := i.IdleSince()
	if !ok || maxIdle <= 0 {
		return time.Time{}, false
	}
	return since.Add(maxIdle + idleJitter(string(i.Exporter.UID)+"/"+i.Name(), maxIdle)), true
}

// idleJitter is a fixed offset in [-d/10, +d/10] drawn from a hash of key: the same for an
// instance on every pass and after a restart, different between instances.
func idleJitter(key string, d time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	span := int64(d / 5) // -10 % .. +10 %
	if span <= 0 {
		return 0
	}
	return time.Duration(int64(h.Sum64()%uint64(span+1)) - span/2)
}

// idleRoll picks the warm instance to roll for its idle age this pass: at most one per set,
// the one overdue longest, and none while anything else changes the pool (hold: a roll to a
// new spec, a retirement in flight, a booking due within the lead time, which counts on the
// warm instances). The pick is available, so the roll retires it only once the pool can
// spare it. Above the level the pool must keep (the warm buffer, or the floor's unleased
// share) it goes at once; at the level its replacement is created first, which needs room
// under maxReplicas (room): at the ceiling it waits, for a lease to end or the ceiling to
// free, rather than leave the buffer short. wake is how long until the next deadline (0:
// none), so the set is looked at when it falls.
func idleRoll(in PlanInput, warm []*Instance, busy, room int32, hold bool) (pick *Instance, wake time.Duration) {
	if in.MaxIdleAge <= 0 {
		return nil, 0
	}
	var avail int32
	var first time.Time
	for _, i := range warm {
		if !i.Available(in.Problems) {
			continue
		}
		avail++
		due, ok := IdleDeadline(i, in.MaxIdleAge)
		if !ok {
			continue
		}
		if in.Now.Before(due) {
			if d := due.Sub(in.Now); wake == 0 || d < wake {
				wake = d
			}
			continue
		}
		if pick == nil || due.Before(first) || due.Equal(first) && i.Name() < pick.Name() {
			pick, first = i, due
		}
	}
	level := max(in.buffer(), in.MinReplicas-busy)
	if pick == nil || hold || room <= 0 && avail <= level {
		return nil, wake
	}
	return pick, wake
}
