// Package budget is a CapacityBudget's allocation: how many Exporters each of the sets it
// governs may hold, when they share a limit on instances and on the sum of their Pods'
// requests. It is pure (no client, no clock): Allocate decides from a snapshot of the sets.
//
// The allocation plans in live terms: a set's live instances are those not on their way
// out (Instances - Leaving). What the leaving instances hold counts as free, since it is
// coming back; the controller's reservations keep the hard limit while it does.
//
//   - Every set keeps what it has (its own plan shrinks it if it wants fewer). It needs up
//     to Wanted (WantedOf), at most Max. One more instance fits when one instance and, for
//     each limited resource, its PerInstance are free.
//   - Floors: sets below Min, by name, get up to Min while it fits.
//   - Demand: sets with waiting Leases or bookings due beyond their idle instances, the
//     oldest waiting Lease first (booked-only demand after), get instances; when none is
//     free, an idle instance is reclaimed from a set without waiting or booked Leases,
//     the one with the most idle above its Min first. A leased instance is never
//     reclaimed, a set is never taken below Min, and nothing is reclaimed unless it makes
//     the instance fit.
//   - Spares: what is left refills warm buffers, one instance at a time to the set with
//     the largest shortfall. A set reclaimed from gets its instance back first, so a
//     reclaim that turned out unneeded is not made. Nothing is reclaimed for spares.
//
// A grant's Allowed is the set's ceiling, and a set's ceiling counts every Exporter that
// exists, its leaving ones too: a set whose Allowed its leaving instances still fill waits
// for them to be gone. Allowed is not raised by the leaving ones: a donor that was
// reclaimed from would otherwise replace what it gave up, once gone. A set that gets less than it wants is Limited; the budget is then Exhausted.
//
// PodRequests computes what a Pod counts against a budget's resources, as the scheduler
// counts it.
package budget
