package budget

// WantedOf is how many live instances a set wants by its own rules: its floor (minReplicas),
// or its leased instances plus its warm buffer (minAvailableReplicas) plus its demand
// (waiting Leases and bookings due), if more; capped by maxReplicas when that is above 0.
// Negative arguments count as zero; the sum is computed in int64 and saturates, never wraps.
//
// It mirrors pool.PlanScale's Wanted with two differences: PlanScale's Plan.Wanted is before
// the maxReplicas cap (PlanScale caps a copy of it), while WantedOf is capped, since the
// budget never grants beyond maxReplicas; and PlanScale counts as leased ("busy") every
// leased instance it keeps, quarantined or disabled by a person included, so the caller
// passes that same count as leased.
func WantedOf(minReplicas, maxReplicas, minAvailable, leased, waiting, bookedDue int32) int32 {
	nn := func(v int32) int64 { return max(int64(v), 0) }
	w := max(nn(minReplicas), nn(leased)+nn(minAvailable)+nn(waiting)+nn(bookedDue))
	if c := nn(maxReplicas); c > 0 {
		w = min(w, c)
	}
	return toInt32(w)
}
