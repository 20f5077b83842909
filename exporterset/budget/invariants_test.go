package budget

import (
	"slices"
	"testing"
)

// check asserts the allocation's invariants for any input.
func check(t *testing.T, in Input, a Allocation) {
	t.Helper()
	if len(a.Grants) != len(in.Sets) {
		t.Fatalf("%d grants for %d sets", len(a.Grants), len(in.Sets))
	}
	names := limited(in.Limits.Resources)
	limit := amounts(in.Limits.Resources, names)
	var sumAlloc, sumLive, reclaims int64
	sumHeld, planned := make([]int64, len(names)), make([]int64, len(names))
	var limitedNames, short []string
	served := false
	for i, s := range in.Sets {
		c, gr := clean(s), a.Grants[i]
		live := int64(c.Instances - c.Leaving)
		alloc := int64(gr.Allowed)
		need := max(0, int64(c.Wanted)-live)
		if c.Max > 0 {
			need = min(need, max(0, int64(c.Max)-live))
		}
		switch {
		case gr.Name != s.Name:
			t.Errorf("grant %d is %q, set %q", i, gr.Name, s.Name)
		case alloc < min(live, int64(c.Min)):
			t.Errorf("%s: allowed %d live, below min(live %d, Min %d)", s.Name, alloc, live, c.Min)
		case gr.Reclaim < 0 || gr.Reclaim > c.Idle || int64(gr.Reclaim) > max(0, live-int64(c.Min)):
			t.Errorf("%s: reclaim %d, idle %d, live %d, Min %d", s.Name, gr.Reclaim, c.Idle, live, c.Min)
		case gr.Reclaim > 0 && (c.Waiting > 0 || c.BookedDue > 0):
			t.Errorf("%s: reclaimed from a set with demand", s.Name)
		case gr.Reclaim > 0 && alloc != live-int64(gr.Reclaim), alloc < live-int64(gr.Reclaim):
			t.Errorf("%s: allowed %d, live %d, reclaim %d", s.Name, alloc, live, gr.Reclaim)
		case alloc > live+need:
			t.Errorf("%s: allowed %d live, beyond live %d + need %d", s.Name, alloc, live, need)
		case gr.Limited != (alloc < live+need):
			t.Errorf("%s: limited %v with allowed %d live, wanting %d", s.Name, gr.Limited, alloc, live+need)
		case gr.Demand && !gr.Limited:
			t.Errorf("%s: demand without limited", s.Name)
		}
		if gr.Limited {
			limitedNames = append(limitedNames, s.Name)
		}
		if alloc > live && (c.Waiting > 0 || c.BookedDue > 0) {
			served = true
		}
		sumAlloc += alloc
		sumLive += live
		reclaims += int64(gr.Reclaim)
		per, held := amounts(c.PerInstance, names), amounts(c.Used, names)
		for r := range names {
			held[r] = max(0, held[r]-mul(int64(c.Leaving), per[r]))
			sumHeld[r] = add(sumHeld[r], held[r])
			planned[r] = add(planned[r], held[r]-min(mul(int64(gr.Reclaim), per[r]), held[r])+mul(max(0, alloc-live), per[r]))
		}
	}
	if sumAlloc > max(count(in.Limits.Instances), sumLive) {
		t.Errorf("allowed %d live instances in all, limit %d, live %d", sumAlloc, in.Limits.Instances, sumLive)
	}
	for r, n := range names {
		if planned[r] < lim && planned[r] > max(limit[r], sumHeld[r]) {
			t.Errorf("%s: planned %dm, limit %dm, live %dm", n, planned[r], limit[r], sumHeld[r])
		}
	}
	if reclaims > 0 && !served {
		t.Errorf("%d reclaimed, but no set with demand got an instance", reclaims)
	}
	if int64(a.Reclaims) != reclaims || a.Exhausted != (len(limitedNames) > 0) {
		t.Errorf("reclaims %d (sum %d), exhausted %v", a.Reclaims, reclaims, a.Exhausted)
	}
	short = slices.Clone(a.Short)
	slices.Sort(short)
	slices.Sort(limitedNames)
	if !slices.Equal(short, limitedNames) {
		t.Errorf("short %v, limited %v", a.Short, limitedNames)
	}
	// Spares leave nothing that fits: a set short of what it wants and not reclaimed from
	// could not have one more.
	freeInst := count(in.Limits.Instances) - sumAlloc
	for i, s := range in.Sets {
		gr := a.Grants[i]
		if !gr.Limited || gr.Reclaim > 0 || len(names) > 0 && slices.Contains(planned, lim) {
			continue
		}
		per := amounts(clean(s).PerInstance, names)
		fits := freeInst >= 1
		for r := range names {
			fits = fits && limit[r]-planned[r] >= per[r]
		}
		if fits {
			t.Errorf("%s: limited, yet one more fits", s.Name)
		}
	}
	// Demand before spares: with instances only, a waiting set left short means the idle
	// spares above their floors, in sets without demand, could not have made room.
	if len(names) > 0 || !slices.ContainsFunc(a.Grants, func(g Grant) bool { return g.Demand }) {
		return
	}
	var spares int64
	for j, s := range in.Sets {
		c := clean(s)
		if live := int64(c.Instances - c.Leaving); c.Waiting == 0 && c.BookedDue == 0 {
			spares += max(0, min(int64(c.Idle), live-int64(c.Min))-int64(a.Grants[j].Reclaim))
		}
	}
	if spares > 0 && sumAlloc-spares < count(in.Limits.Instances) {
		t.Errorf("a set waits while %d idle spares could make room", spares)
	}
}
