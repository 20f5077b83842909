package budget

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// entry is one set's state while Allocate works on it.
type entry struct {
	Set // cleaned (clean)
	// idx is the set's place in the input: the last tie-break, after the name.
	idx int
	// live, need and alloc are the set's live instances, what it needs beyond them
	// (capped by Max) and what the allocation gives it so far.
	live, need, alloc int64
	// per is one instance's amounts; held is the set's live amounts not reclaimed yet.
	per, held []int64
	// reclaim counts the instances reclaimed from it; freed is what each gave back, in
	// order, so that spares can hand the last one back (unreclaim).
	reclaim int64
	freed   [][]int64
	// floor is what the floors phase gave it, demand what the demand phase owes it and
	// demandLeft what of that is not met yet.
	floor, demand, demandLeft int64
}

// shortfall is how many more instances the set wants than it gets so far.
func (e *entry) shortfall() int64 { return e.live + e.need - e.alloc }

// reclaimable is how many of its idle instances may still be reclaimed: never a leased one
// (Idle excludes them), never below Min, never from a set with demand of its own.
func (e *entry) reclaimable() int64 {
	if e.Waiting > 0 || e.BookedDue > 0 {
		return 0
	}
	return max(0, min(int64(e.Idle), e.live-int64(e.Min))-e.reclaim)
}

// before orders entries by name, then by their place in the input.
func before(a, b *entry) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.idx, b.idx))
}

// book is the free capacity and the sets' state during one Allocate.
type book struct {
	names    []corev1.ResourceName // limited resources
	freeInst int64
	free     []int64
	sets     []*entry // input order
}

// Allocate decides how many Exporters each governed set may hold (the package doc has the
// rules). It is pure and total: any input, nonsense included, gives an answer. Counts are
// read as clean says (negative ones as zero, each at most 2^20, Leaving at most Instances,
// Idle at most the live unleased instances); quantities below zero count as zero, and
// amounts saturate far above any real budget (lim). Duplicate names are allowed: ties
// between them go by their place in the input.
func Allocate(in Input) Allocation {
	b := newBook(in)
	b.floors()
	order := b.demands()
	b.spares()
	return b.result(in, order)
}

// newBook reads the input: each set's live instances and amounts, and what is free.
func newBook(in Input) *book {
	b := &book{names: limited(in.Limits.Resources), freeInst: count(in.Limits.Instances)}
	b.free = amounts(in.Limits.Resources, b.names)
	for i, s := range in.Sets {
		c := clean(s)
		e := &entry{Set: c, idx: i, live: int64(c.Instances - c.Leaving)}
		e.alloc = e.live
		e.need = max(0, int64(c.Wanted)-e.live)
		if c.Max > 0 {
			e.need = min(e.need, max(0, int64(c.Max)-e.live))
		}
		e.per = amounts(c.PerInstance, b.names)
		e.held = amounts(c.Used, b.names)
		for r := range e.held {
			// Live amounts: Used minus what the leaving instances hold, at least zero.
			e.held[r] = max(0, e.held[r]-mul(int64(c.Leaving), e.per[r]))
			b.free[r] = add(b.free[r], -e.held[r])
		}
		b.freeInst -= e.live
		b.sets = append(b.sets, e)
	}
	return b
}

// fitCount is how many instances costing per fit in the free capacity: one fits when an
// instance and, for each limited resource, per of it are free (a resource already over its
// limit fits nothing, even an instance that needs none of it).
func (b *book) fitCount(per []int64) int64 {
	n := b.freeInst
	for r, p := range per {
		switch {
		case b.free[r] < p:
			return 0
		case p > 0:
			n = min(n, b.free[r]/p)
		}
	}
	return max(n, 0)
}

// grant gives the set k more instances.
func (b *book) grant(e *entry, k int64) {
	e.alloc += k
	e.demandLeft = max(0, e.demandLeft-k)
	b.freeInst -= k
	for r, p := range e.per {
		b.free[r] = add(b.free[r], -mul(k, p))
	}
}

// floors is phase 1: sets below Min, by name, get up to Min while it fits. No reclaim.
func (b *book) floors() {
	for _, e := range sortedBy(b.sets, before) {
		if e.live >= int64(e.Min) {
			continue
		}
		e.floor = min(int64(e.Min)-e.live, e.need, b.fitCount(e.per))
		b.grant(e, e.floor)
	}
}

// demands is phase 2: sets with waiting or booked Leases that their idle instances do not
// cover, oldest waiting Lease first, get instances, reclaimed from idle sets if need be. It
// returns the sets with demand in that order.
//
// A set's demand is Waiting + BookedDue beyond its Idle instances and beyond what the floors
// phase just gave it (those new instances serve Leases as idle ones do), at most what it
// still needs.
func (b *book) demands() []*entry {
	var order []*entry
	for _, e := range b.sets {
		e.demand = min(e.need-e.floor, max(0, int64(e.Waiting)+int64(e.BookedDue)-int64(e.Idle)-e.floor))
		e.demandLeft = e.demand
		if e.demand > 0 {
			order = append(order, e)
		}
	}
	slices.SortStableFunc(order, func(x, y *entry) int {
		xz, yz := x.OldestWaiting.IsZero(), y.OldestWaiting.IsZero()
		switch {
		case xz != yz: // booked only (or no time known) after every waiting Lease
			if xz {
				return 1
			}
			return -1
		case !xz && !x.OldestWaiting.Equal(y.OldestWaiting):
			return x.OldestWaiting.Compare(y.OldestWaiting)
		}
		return before(x, y)
	})
	for _, e := range order {
		for e.demandLeft > 0 {
			if k := min(e.demandLeft, b.fitCount(e.per)); k > 0 {
				b.grant(e, k)
				continue
			}
			if !b.reclaimFor(e) {
				break // no donor can make room: e stays Limited, with Demand
			}
		}
	}
	return order
}

// spares is phase 3: what is left goes, one instance at a time, to the set with the
// largest shortfall (ties by name) among those it fits, so warm buffers refill evenly. An
// instance for a set reclaimed from earlier first cancels one of its reclaims (it keeps
// that instance), so a reclaim that turned out not to be needed is not made. No reclaim.
func (b *book) spares() {
	for {
		var best, second *entry
		for _, e := range b.sets {
			if e.shortfall() <= 0 || !b.canAdd(e) {
				continue
			}
			switch {
			case best == nil || e.shortfall() > best.shortfall() || e.shortfall() == best.shortfall() && before(e, best) < 0:
				best, second = e, best
			case second == nil || e.shortfall() > second.shortfall() || e.shortfall() == second.shortfall() && before(e, second) < 0:
				second = e
			}
		}
		switch {
		case best == nil:
			return
		case best.reclaim > 0:
			b.unreclaim(best)
		default:
			// As many at once as one at a time would give it before second's turn.
			k := best.shortfall()
			if second != nil {
				k -= second.shortfall()
				if before(best, second) < 0 {
					k++
				}
			}
			b.grant(best, max(1, min(k, b.fitCount(best.per))))
		}
	}
}

// canAdd tells whether one more instance for e fits (for a set reclaimed from: whether its
// last reclaim can be cancelled).
func (b *book) canAdd(e *entry) bool {
	if e.reclaim == 0 {
		return b.fitCount(e.per) > 0
	}
	if b.freeInst < 1 {
		return false
	}
	for r, f := range e.freed[len(e.freed)-1] {
		if b.free[r] < f {
			return false
		}
	}
	return true
}

// result builds the Allocation; order is the demand phase's order.
func (b *book) result(in Input, order []*entry) Allocation {
	var a Allocation
	var minInst int64
	minRes := make([]int64, len(b.names))
	for _, e := range b.sets {
		g := Grant{Name: e.Name, Allowed: toInt32(e.alloc), Reclaim: toInt32(e.reclaim),
			Limited: e.alloc < e.live+e.need, Demand: e.demandLeft > 0}
		a.Grants = append(a.Grants, g)
		// What is used and the floors' sum are reported as given (negatives as zero), not
		// bounded by maxCount as the planning's counts are.
		raw := in.Sets[e.idx]
		a.UsedInstances = toInt32(int64(a.UsedInstances) + max(0, int64(raw.Instances)))
		a.Reclaims = toInt32(int64(a.Reclaims) + e.reclaim)
		a.Exhausted = a.Exhausted || g.Limited
		minInst += max(0, int64(raw.Min))
		for r, p := range e.per {
			minRes[r] = add(minRes[r], mul(max(0, int64(raw.Min)), p))
		}
	}
	a.Overcommitted = minInst > max(0, int64(in.Limits.Instances))
	for r, n := range b.names {
		a.Overcommitted = a.Overcommitted || minRes[r] > amount(in.Limits.Resources[n])
	}
	for _, e := range order {
		if a.Grants[e.idx].Limited && a.Grants[e.idx].Demand {
			a.Short = append(a.Short, e.Name)
		}
	}
	for _, e := range sortedBy(b.sets, before) {
		if g := a.Grants[e.idx]; g.Limited && !g.Demand {
			a.Short = append(a.Short, e.Name)
		}
	}
	if len(b.names) > 0 {
		a.UsedResources = corev1.ResourceList{}
		for _, n := range b.names {
			sum := resource.Quantity{Format: in.Limits.Resources[n].Format}
			for _, e := range b.sets {
				if q := e.Used[n]; q.Sign() > 0 {
					sum.Add(q)
				}
			}
			a.UsedResources[n] = sum
		}
	}
	return a
}

// sortedBy returns a sorted copy.
func sortedBy(sets []*entry, f func(a, b *entry) int) []*entry {
	out := slices.Clone(sets)
	slices.SortFunc(out, f)
	return out
}
