package budget

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// rl builds a resource list from name, quantity pairs.
func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

var t0 = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// g is a grant for the tables: Allowed, Reclaim, Limited, Demand.
func g(name string, allowed, reclaim int32, limited, demand bool) Grant {
	return Grant{Name: name, Allowed: allowed, Reclaim: reclaim, Limited: limited, Demand: demand}
}

func TestAllocate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     Input
		grants []Grant
		short  []string
		over   bool
	}{
		{
			// The check: A settled at 3 idle, B at 1 leased; two more Leases for B.
			name: "waiting leases reclaim idle spares",
			in: Input{Limits: Limits{Instances: 4}, Sets: []Set{
				{Name: "a", Max: 4, Wanted: 3, Instances: 3, Idle: 3},
				{Name: "b", Max: 4, Wanted: WantedOf(0, 4, 1, 1, 2, 0), Instances: 1, Leased: 1, Waiting: 2, OldestWaiting: t0},
			}},
			grants: []Grant{g("a", 1, 2, true, false), g("b", 3, 0, true, false)},
			short:  []string{"a", "b"},
		},
		{
			// The next round: A's two are retiring (they hold their place until gone), B's
			// two new instances exist and serve the Leases. Nothing more is reclaimed.
			name: "the round after: reclaimed instances leaving",
			in: Input{Limits: Limits{Instances: 4}, Sets: []Set{
				{Name: "a", Max: 4, Wanted: 3, Instances: 3, Leaving: 2, Idle: 1},
				{Name: "b", Max: 4, Wanted: WantedOf(0, 4, 1, 3, 0, 0), Instances: 3, Leased: 3},
			}},
			// A's ceiling stays 1: its leaving two fill it until gone, and are not replaced.
			grants: []Grant{g("a", 1, 0, true, false), g("b", 3, 0, true, false)},
			short:  []string{"a", "b"},
		},
		{
			// B's leases released (ExitAndReplace): its three leave; A refills its buffer
			// first (largest shortfall), B gets the last instance.
			name: "leases released: buffers refill",
			in: Input{Limits: Limits{Instances: 4}, Sets: []Set{
				{Name: "a", Max: 4, Wanted: 3, Instances: 1, Idle: 1},
				{Name: "b", Max: 4, Wanted: 1, Instances: 3, Leaving: 3},
			}},
			// B's leaving three fill its ceiling of 1 until gone: its replacement follows them.
			grants: []Grant{g("a", 3, 0, false, false), g("b", 1, 0, false, false)},
		},
		{
			name: "floors by name, then spares; Min over the limit is overcommitted",
			in: Input{Limits: Limits{Instances: 3}, Sets: []Set{
				{Name: "c", Wanted: 3},
				{Name: "b", Min: 2, Wanted: 2},
				{Name: "a", Min: 2, Wanted: 2},
			}},
			grants: []Grant{g("c", 0, 0, true, false), g("b", 1, 0, true, false), g("a", 2, 0, false, false)},
			short:  []string{"b", "c"},
			over:   true,
		},
		{
			name: "Min is never reclaimed",
			in: Input{Limits: Limits{Instances: 3}, Sets: []Set{
				{Name: "a", Min: 2, Wanted: 2, Instances: 3, Idle: 3},
				{Name: "b", Wanted: 3, Waiting: 3, OldestWaiting: t0},
			}},
			grants: []Grant{g("a", 2, 1, true, false), g("b", 1, 0, true, true)},
			short:  []string{"b", "a"},
		},
		{
			// Idle above the unleased instances is nonsense: a leased one is never idle.
			name: "a leased instance is never reclaimed",
			in: Input{Limits: Limits{Instances: 3}, Sets: []Set{
				{Name: "a", Wanted: 3, Instances: 3, Leased: 2, Idle: 3},
				{Name: "b", Wanted: 2, Waiting: 2, OldestWaiting: t0},
			}},
			grants: []Grant{g("a", 2, 1, true, false), g("b", 1, 0, true, true)},
			short:  []string{"b", "a"},
		},
		{
			name: "the oldest waiting Lease first, booked-only demand after",
			in: Input{Limits: Limits{Instances: 1}, Sets: []Set{
				{Name: "a", Wanted: 1, BookedDue: 1},
				{Name: "b", Wanted: 1, Waiting: 1, OldestWaiting: t0.Add(time.Minute)},
				{Name: "c", Wanted: 1, Waiting: 1, OldestWaiting: t0},
				{Name: "d", Wanted: 2},
			}},
			grants: []Grant{g("a", 0, 0, true, true), g("b", 0, 0, true, true), g("c", 1, 0, false, false), g("d", 0, 0, true, false)},
			short:  []string{"b", "a", "d"},
		},
		{
			name: "a booking due is demand: it reclaims; a set with demand is no donor",
			in: Input{Limits: Limits{Instances: 5}, Sets: []Set{
				{Name: "a", Wanted: 2, Instances: 2, Idle: 2},
				{Name: "b", Wanted: 2, BookedDue: 1},
				{Name: "c", Wanted: 3, Instances: 3, Idle: 3, Waiting: 1, OldestWaiting: t0},
			}},
			grants: []Grant{g("a", 1, 1, true, false), g("b", 1, 0, true, false), g("c", 3, 0, false, false)},
			short:  []string{"a", "b"},
		},
		{
			name: "the largest idle surplus is reclaimed first",
			in: Input{Limits: Limits{Instances: 6}, Sets: []Set{
				{Name: "a", Wanted: 2, Instances: 2, Idle: 2},
				{Name: "b", Wanted: 3, Instances: 3, Idle: 3, Min: 1},
				{Name: "c", Wanted: 1, Instances: 1, Idle: 1},
				{Name: "d", Wanted: 3, Waiting: 3, OldestWaiting: t0},
			}},
			// reclaimable a 2, b 2, c 1: a (name), b, then a and b at 1 with c: a.
			grants: []Grant{g("a", 0, 2, true, false), g("b", 2, 1, true, false), g("c", 1, 0, false, false), g("d", 3, 0, false, false)},
			short:  []string{"a", "b"},
		},
		{
			name: "idle instances of the set itself cover its waiting Leases: no reclaim",
			in: Input{Limits: Limits{Instances: 3}, Sets: []Set{
				{Name: "a", Wanted: 2, Instances: 2, Idle: 2},
				{Name: "b", Wanted: 2, Instances: 1, Idle: 1, Waiting: 1, OldestWaiting: t0},
			}},
			grants: []Grant{g("a", 2, 0, false, false), g("b", 1, 0, true, false)},
			short:  []string{"b"},
		},
		{
			// Instances its floor just gave it serve the Leases: what is left is its warm
			// buffer, and a buffer reclaims nothing.
			name: "floor instances count against demand",
			in: Input{Limits: Limits{Instances: 5}, Sets: []Set{
				{Name: "a", Wanted: 2, Instances: 2, Idle: 2},
				{Name: "b", Min: 2, Wanted: WantedOf(2, 0, 2, 0, 2, 0), Waiting: 2, OldestWaiting: t0},
			}},
			grants: []Grant{g("a", 2, 0, false, false), g("b", 3, 0, true, false)},
			short:  []string{"b"},
		},
		{
			name: "Max caps what a set needs",
			in: Input{Limits: Limits{Instances: 10}, Sets: []Set{
				{Name: "a", Max: 2, Wanted: 5, Waiting: 5, OldestWaiting: t0},
			}},
			grants: []Grant{g("a", 2, 0, false, false)},
		},
		{
			name: "spares go to the largest shortfall, ties by name",
			in: Input{Limits: Limits{Instances: 3}, Sets: []Set{
				{Name: "b", Wanted: 2},
				{Name: "a", Wanted: 3},
			}},
			grants: []Grant{g("b", 1, 0, true, false), g("a", 2, 0, true, false)},
			short:  []string{"a", "b"},
		},
		{
			name: "a set above its Wanted keeps its instances; nothing is free",
			in: Input{Limits: Limits{Instances: 3}, Sets: []Set{
				{Name: "a", Wanted: 1, Instances: 3, Idle: 3},
				{Name: "b", Wanted: 1},
			}},
			grants: []Grant{g("a", 3, 0, false, false), g("b", 0, 0, true, false)},
			short:  []string{"b"},
		},
		{
			name: "a resource limits grants; reclaim frees it",
			in: Input{Limits: Limits{Instances: 10, Resources: rl("cpu", "4")}, Sets: []Set{
				{Name: "a", Wanted: 2, Instances: 2, Idle: 2, PerInstance: rl("cpu", "1"), Used: rl("cpu", "2")},
				{Name: "b", Wanted: 2, Waiting: 2, OldestWaiting: t0, PerInstance: rl("cpu", "2")},
			}},
			grants: []Grant{g("a", 0, 2, true, false), g("b", 2, 0, false, false)},
			short:  []string{"a"},
		},
		{
			name: "no reclaim when no donor frees what is missing",
			in: Input{Limits: Limits{Instances: 3, Resources: rl("memory", "4Gi")}, Sets: []Set{
				{Name: "a", Wanted: 2, Instances: 2, Idle: 2, PerInstance: rl("cpu", "1")},
				{Name: "b", Wanted: 1, Instances: 1, Leased: 1, PerInstance: rl("memory", "4Gi"), Used: rl("memory", "4Gi")},
				{Name: "c", Wanted: 1, Waiting: 1, OldestWaiting: t0, PerInstance: rl("memory", "1Gi")},
			}},
			grants: []Grant{g("a", 2, 0, false, false), g("b", 1, 0, false, false), g("c", 0, 0, true, true)},
			short:  []string{"c"},
		},
		{
			// a has the larger surplus and is reclaimed first for the instance slot; the
			// memory needs b's; a's then turns out unneeded and a keeps it.
			name: "a reclaim found unneeded is cancelled",
			in: Input{Limits: Limits{Instances: 3, Resources: rl("memory", "2Gi")}, Sets: []Set{
				{Name: "a", Wanted: 2, Instances: 2, Idle: 2},
				{Name: "b", Wanted: 1, Instances: 1, Idle: 1, PerInstance: rl("memory", "2Gi"), Used: rl("memory", "2Gi")},
				{Name: "c", Wanted: 1, Waiting: 1, OldestWaiting: t0, PerInstance: rl("memory", "2Gi")},
			}},
			grants: []Grant{g("a", 2, 0, false, false), g("b", 0, 1, true, false), g("c", 1, 0, false, false)},
			short:  []string{"b"},
		},
		{
			name: "a resource the budget does not name is not limited",
			in: Input{Limits: Limits{Instances: 2, Resources: rl("cpu", "2")}, Sets: []Set{
				{Name: "a", Wanted: 2, PerInstance: rl("cpu", "1", "memory", "1Ti")},
			}},
			grants: []Grant{g("a", 2, 0, false, false)},
		},
		{
			name: "Min times a resource over its limit is overcommitted",
			in: Input{Limits: Limits{Instances: 10, Resources: rl("cpu", "2")}, Sets: []Set{
				{Name: "a", Min: 2, Wanted: 2, Instances: 2, PerInstance: rl("cpu", "1"), Used: rl("cpu", "2")},
				{Name: "b", Min: 1, Wanted: 1, PerInstance: rl("cpu", "1")},
			}},
			grants: []Grant{g("a", 2, 0, false, false), g("b", 0, 0, true, false)},
			short:  []string{"b"},
			over:   true,
		},
		{
			name: "leaving instances count as coming back",
			in: Input{Limits: Limits{Instances: 2}, Sets: []Set{
				{Name: "a", Instances: 2, Leaving: 2},
				{Name: "b", Wanted: 2},
			}},
			grants: []Grant{g("a", 0, 0, false, false), g("b", 2, 0, false, false)},
		},
		{
			// Negative counts are zero, Leaving at most Instances, Idle at most the live
			// unleased instances; duplicate names are kept apart by their place.
			name: "nonsense is clamped",
			in: Input{Limits: Limits{Instances: -3, Resources: rl("cpu", "-1")}, Sets: []Set{
				{Name: "a", Min: -1, Max: -1, Wanted: 5, Instances: 2, Leaving: 7, Idle: 9, Leased: -2, Waiting: -1, PerInstance: rl("cpu", "-2")},
				{Name: "a", Wanted: -4, Instances: -1, BookedDue: 3},
				{},
			}},
			grants: []Grant{g("a", 0, 0, true, false), g("a", 0, 0, false, false), g("", 0, 0, false, false)},
			short:  []string{"a"},
		},
		{
			name:   "no limit at all",
			in:     Input{Sets: []Set{{Name: "a", Wanted: 1, Waiting: 1}}},
			grants: []Grant{g("a", 0, 0, true, true)},
			short:  []string{"a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Allocate(tc.in)
			if d := cmp.Diff(tc.grants, a.Grants); d != "" {
				t.Errorf("grants (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.short, a.Short); d != "" {
				t.Errorf("short (-want +got):\n%s", d)
			}
			if a.Exhausted != (len(tc.short) > 0) || a.Overcommitted != tc.over {
				t.Errorf("exhausted %v overcommitted %v, want %v %v", a.Exhausted, a.Overcommitted, len(tc.short) > 0, tc.over)
			}
			var reclaims int32
			for _, g := range tc.grants {
				reclaims += g.Reclaim
			}
			if a.Reclaims != reclaims {
				t.Errorf("reclaims %d, want %d", a.Reclaims, reclaims)
			}
			check(t, tc.in, a)
		})
	}
}

func TestAllocateUsed(t *testing.T) {
	sets := []Set{
		{Name: "a", Instances: 2, Leaving: 1, Used: rl("cpu", "1500m", "memory", "2Gi", "nvidia.com/gpu", "1")},
		{Name: "b", Instances: 3, Used: rl("cpu", "1", "memory", "-1Gi")},
	}
	if a := Allocate(Input{Limits: Limits{Instances: 10}, Sets: sets}); a.UsedInstances != 5 || a.UsedResources != nil {
		t.Errorf("instances only: used %d %v, want 5 and no resources", a.UsedInstances, a.UsedResources)
	}
	a := Allocate(Input{Limits: Limits{Instances: 10, Resources: rl("cpu", "8", "memory", "16Gi", "devices.kubevirt.io/kvm", "4")}, Sets: sets})
	want := rl("cpu", "2500m", "memory", "2Gi", "devices.kubevirt.io/kvm", "0")
	if len(a.UsedResources) != len(want) {
		t.Fatalf("used %v, want %v", a.UsedResources, want)
	}
	for n, q := range want {
		if got := a.UsedResources[n]; got.Cmp(q) != 0 {
			t.Errorf("used %s = %s, want %s", n, got.String(), q.String())
		}
	}
}

// Counts far beyond any lab still give an answer, and quickly: counts are bounded, and the
// allocation grants in runs rather than one instance at a time.
func TestAllocateHuge(t *testing.T) {
	huge := Set{Name: "a", Min: math.MaxInt32, Max: math.MaxInt32, Wanted: math.MaxInt32, Instances: math.MaxInt32, Idle: math.MaxInt32,
		PerInstance: rl("cpu", "1e18"), Used: rl("cpu", "9e18")}
	in := Input{Limits: Limits{Instances: math.MaxInt32 - 1, Resources: rl("cpu", "1e30")}, Sets: []Set{huge,
		{Name: "b", Wanted: math.MaxInt32, Waiting: math.MaxInt32, OldestWaiting: t0},
		{Name: "c", Wanted: math.MaxInt32}, {Name: "d", Wanted: math.MaxInt32}}}
	start := time.Now()
	a := Allocate(in)
	if !a.Overcommitted || a.UsedInstances != math.MaxInt32 {
		t.Errorf("overcommitted %v used %d", a.Overcommitted, a.UsedInstances)
	}
	check(t, in, a)
	// Without the full set, the sets share the bounded limit: b's 10 waiting first, then
	// the rest evenly (one at a time while they tie): 2^18 each.
	in.Sets[0] = Set{Name: "a", Wanted: math.MaxInt32, Idle: math.MaxInt32}
	in.Sets[1].Waiting = 10
	a = Allocate(in)
	check(t, in, a)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	for _, g := range a.Grants {
		if g.Allowed != maxCount/4 {
			t.Errorf("grants %+v", a.Grants)
		}
	}
}
