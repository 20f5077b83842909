package budget

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// decode turns fuzz bytes into an Input: small counts, some negative (nonsense the
// allocation must survive), names from a few letters (so some repeat), cpu and memory
// amounts that a budget may or may not limit.
func decode(data []byte) Input {
	next := func() int32 {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int32(b%16) - 2 // -2..13
	}
	qty := func(unit string) resource.Quantity {
		v := next()
		if v < 0 {
			return resource.MustParse("-1" + unit)
		}
		return resource.MustParse(resource.NewQuantity(int64(v), resource.DecimalSI).String() + unit)
	}
	var in Input
	in.Limits.Instances = next()
	switch mode := next(); {
	case mode%3 == 1:
		in.Limits.Resources = corev1.ResourceList{corev1.ResourceCPU: qty("")}
	case mode%3 == 2:
		in.Limits.Resources = corev1.ResourceList{corev1.ResourceCPU: qty(""), corev1.ResourceMemory: qty("Gi")}
	}
	for n := max(next(), 0) % 6; n > 0; n-- {
		s := Set{Name: string(rune('a' + max(next(), 0)%4))}
		s.Min, s.Max, s.Wanted = next(), next(), next()
		s.Instances, s.Leaving, s.Leased, s.Idle = next(), next(), next(), next()
		s.Waiting, s.BookedDue = next(), next()
		if w := next(); w > 0 {
			s.OldestWaiting = t0.Add(time.Duration(w%4) * time.Minute)
		}
		s.PerInstance = corev1.ResourceList{corev1.ResourceCPU: qty("")}
		s.Used = corev1.ResourceList{corev1.ResourceCPU: qty("")}
		if next()%2 == 0 {
			s.PerInstance[corev1.ResourceMemory] = qty("Gi")
			s.Used[corev1.ResourceMemory] = qty("Gi")
		}
		in.Sets = append(in.Sets, s)
	}
	return in
}

// FuzzAllocate checks the allocation's invariants (check) on any input: no panic, the
// limit kept (or not made worse), Min never reclaimed, leased instances and sets with demand
// never reclaimed from, nothing that fits left unused, demand served before spares.
func FuzzAllocate(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		// the issue's: limit 4; a wants 3, has 3 idle; b wants 4, has 1 leased, 2 waiting
		{6, 0, 4, 2, 2, 6, 5, 5, 2, 2, 5, 2, 2, 2, 2, 2, 3, 3, 2, 6, 6, 3, 2, 3, 2, 4, 2, 3, 2, 2, 3},
		{5, 1, 5, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		{8, 2, 6, 7, 9, 4, 3, 15, 1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
		{0, 0, 7, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		{15, 4, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := decode(data)
		check(t, in, Allocate(in))
	})
}
