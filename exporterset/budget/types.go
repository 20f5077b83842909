package budget

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Limits are a budget's limits.
type Limits struct {
	// Instances is the most instances the governed sets may hold together.
	Instances int32
	// Resources caps the sum of the governed instances' Pod requests; a resource not named
	// is not limited (nil: only instances are).
	Resources corev1.ResourceList
}

// Set is one governed set as the allocation sees it. Counts are of the set's Exporters as
// observed, plus its reservations not yet seen as Exporters (they will be).
type Set struct {
	// Name is the set's name; the allocation orders ties by it.
	Name string
	// Min is the set's minReplicas: its guaranteed share, never reclaimed.
	Min int32
	// Max is the set's maxReplicas, 0 for unbounded.
	Max int32
	// Wanted is how many live instances the set wants by its own rules (WantedOf).
	Wanted int32
	// Instances is the number of its Exporters that exist (being deleted or retiring
	// included) plus its unseen reservations.
	Instances int32
	// Leaving is how many of Instances are on their way out (being deleted, retiring):
	// they hold their place until gone, but the set no longer counts on them.
	Leaving int32
	// Leased is how many of its live instances serve a lease.
	Leased int32
	// Idle is how many of its live instances are enabled, unleased and in service (ready
	// or starting; not quarantined, not disabled by a person): what may be reclaimed.
	Idle int32
	// Waiting is the number of Leases that wait for one of its instances.
	Waiting int32
	// OldestWaiting is when the oldest of them was created; zero without.
	OldestWaiting time.Time
	// BookedDue is the number of its bookings inside their lead time: demand, as Waiting.
	BookedDue int32
	// PerInstance is what one more instance of the set requests.
	PerInstance corev1.ResourceList
	// Used is what its Instances request now (Leaving included).
	Used corev1.ResourceList
}

// Live is how many of the set's instances stay: Instances - Leaving.
func (s Set) Live() int32 { return s.Instances - s.Leaving }

// Input is what Allocate decides from.
type Input struct {
	Limits Limits
	// Sets are the governed sets, in any order.
	Sets []Set
}

// Grant is the allocation's decision for one set.
type Grant struct {
	// Name is the set's name.
	Name string
	// Allowed is how many Exporters the set may hold now, those on their way out included:
	// its ceiling for this round. It never asks a set to give up a leased instance or to
	// go below Min (unless the set is below it already).
	Allowed int32
	// Reclaim is how many of the set's idle instances Allowed asks it to retire to make room
	// for another set's demand (0 for most sets).
	Reclaim int32
	// Limited is true when the set wants more than Allowed gives it.
	Limited bool
	// Demand is true when the set has waiting or booked Leases it cannot serve yet.
	Demand bool
}

// Allocation is Allocate's result.
type Allocation struct {
	// Grants are one per input set, in the input's order.
	Grants []Grant
	// UsedInstances and UsedResources are what the sets hold now (Instances, Used summed).
	UsedInstances int32
	UsedResources corev1.ResourceList
	// Exhausted is true when some set is Limited: it wants more than the budget lets it have.
	Exhausted bool
	// Short names the Limited sets, those with demand first (oldest waiting Lease first),
	// then the others by name.
	Short []string
	// Overcommitted is true when the sets' Min add up to more than Limits allow (instances,
	// or Min times PerInstance for a limited resource).
	Overcommitted bool
	// Reclaims is the sum of the grants' Reclaim.
	Reclaims int32
}
