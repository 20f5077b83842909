package soak

import (
	"fmt"
	"time"
)

// The churn invariant: while the walk keeps a set failing (an image of it cannot be pulled,
// or crashes), the set creates no more instances per window than its failure backoff
// allows. The bound is derived from the backoff the soak's reconciler runs with (base
// doubling to a cap, CeilingOptions.BackoffBase/BackoffCap):
//
//   - from a fresh start the backoff allows one attempt at once and one more after each
//     delay base, 2*base, ... (capped), because every attempt's instances fail and the
//     count only grows: attempts(L) in a span of length L;
//   - the count starts afresh whenever the reconciler resets it: a change of the set's
//     generation or of its class, a controller restart (the count lives in memory), an
//     instance becoming ready, and a node fault (instances that lose their node are
//     replaced without counting as failures). The window is cut at each reset and the
//     attempts of the pieces are added, each piece lengthened by ResetSlack for the
//     controller's view lagging the checker's;
//   - an attempt creates at most a batch: maxReplicas, or without a ceiling what the
//     floor, the leases and the buffer can ask for;
//   - plus one batch of slack (the ceiling) and one instance per disruption the set
//     suffered (a lease ended, a Pod failed, deleted or evicted by the walk): each may be
//     replaced between two attempts.

// churnTracker is one set's record for the churn invariant.
type churnTracker struct {
	failingSince time.Time // zero while not failing
	reported     bool      // once per failing interval
	creations    []time.Time
	resets       []time.Time
	disruptions  []time.Time
	batches      []maxChange // the batch size in effect, over time
}

// trim forgets what is older than keep before now.
func (t *churnTracker) trim(now time.Time, keep time.Duration) {
	cut := func(ts []time.Time) []time.Time {
		i := 0
		for i < len(ts) && now.Sub(ts[i]) > keep {
			i++
		}
		return ts[i:]
	}
	t.creations, t.resets, t.disruptions = cut(t.creations), cut(t.resets), cut(t.disruptions)
	for len(t.batches) > 1 && now.Sub(t.batches[1].at) > keep {
		t.batches = t.batches[1:]
	}
}

// noteBatch records the set's batch size now.
func (t *churnTracker) noteBatch(now time.Time, b int64) {
	if n := len(t.batches); n == 0 || t.batches[n-1].max != b {
		t.batches = append(t.batches, maxChange{at: now, max: b})
	}
}

// batchSince is the largest batch in effect since from.
func (t *churnTracker) batchSince(from time.Time) int64 {
	var b int64
	for i, c := range t.batches {
		if i+1 < len(t.batches) && t.batches[i+1].at.Before(from) {
			continue // superseded before the window began
		}
		b = max(b, c.max)
	}
	return b
}

// batchOf is how many instances one attempt of a set can create: its ceiling, or without
// one the most its floor or its leases plus buffer plus waiting leases can want.
func batchOf(minReplicas, maxReplicas, minAvailable int32) int64 {
	if maxReplicas > 0 {
		return int64(maxReplicas)
	}
	return int64(max(minReplicas, 2*maxLeasesPerSet+minAvailable))
}

// attempts is how many creation attempts the backoff allows within l from a fresh count.
func attempts(l, base, limit time.Duration) int64 {
	n, sum, d := int64(1), time.Duration(0), base
	for {
		sum += d
		if sum > l {
			return n
		}
		n++
		d = min(2*d, limit)
	}
}

// churnBound is the most creations the backoff allows in [from, now] given the resets.
func churnBound(from, now time.Time, resets []time.Time, batch int64, disruptions int, o CeilingOptions) (bound, tries int64) {
	start := from
	for _, r := range resets {
		if r.After(start) && r.Before(now) {
			tries += attempts(r.Sub(start)+o.ResetSlack, o.BackoffBase, o.BackoffCap)
			start = r
		}
	}
	tries += attempts(now.Sub(start)+o.ResetSlack, o.BackoffBase, o.BackoffCap)
	return tries*batch + batch + int64(disruptions), tries
}

func countSince(ts []time.Time, from time.Time) int {
	n := 0
	for _, t := range ts {
		if !t.Before(from) {
			n++
		}
	}
	return n
}

// check judges the set at now; it returns a violation's detail, "" when none, and the
// creations counted and the bound (0, 0 when the set is not judged).
func (t *churnTracker) check(now time.Time, set string, o CeilingOptions) (detail string, created, bound int64) {
	t.trim(now, o.ChurnWindow+o.ResetSlack)
	if t.failingSince.IsZero() || t.reported {
		return "", 0, 0
	}
	from := t.failingSince
	if now.Sub(from) > o.ChurnWindow {
		from = now.Add(-o.ChurnWindow)
	}
	created = int64(countSince(t.creations, from))
	// Resets and disruptions shortly before the window still shape it.
	disruptions := countSince(t.disruptions, from.Add(-o.ResetSlack))
	var resets []time.Time
	for _, r := range t.resets {
		if !r.Before(from.Add(-o.ResetSlack)) {
			resets = append(resets, r)
		}
	}
	batch := t.batchSince(from)
	bound, tries := churnBound(from, now, resets, batch, disruptions, o)
	if created <= bound {
		return "", created, bound
	}
	t.reported = true
	return fmt.Sprintf("set %s created %d instances in the %s since %s while failing; its backoff (base %s, cap %s) allows %d: %d attempts of at most %d (%d resets), one batch of slack and %d disruptions",
		set, created, now.Sub(from).Round(time.Millisecond), from.Format("15:04:05.000"), o.BackoffBase, o.BackoffCap, bound, tries, batch, len(resets), disruptions), created, bound
}
