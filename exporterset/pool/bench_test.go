package pool

import (
	"fmt"
	"testing"
	"time"
)

// benchPool is a realistic pool: a third leased, a third idle, the rest booting or retiring.
func benchPool(n int) []*Instance {
	out := make([]*Instance, n)
	for i := range out {
		name := fmt.Sprintf("i%05d", i)
		switch i % 6 {
		case 0, 1:
			out[i] = instance(name, ready, leased("l"+name))
		case 2, 3:
			out[i] = instance(name, ready, createdAt(time.Duration(i)*time.Second))
		case 4:
			out[i] = instance(name)
		default:
			out[i] = instance(name, ready, retiring)
		}
	}
	return out
}

func BenchmarkComputeStatus(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		instances := benchPool(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ComputeStatus(instances, nil)
			}
		})
	}
}

func BenchmarkPlanScale(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		instances := benchPool(n)
		in := input(int32(n/2), 0, int32(n/10), instances...)
		since := in.Now.Add(-time.Hour)
		in.SurplusSince = &since
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				PlanScale(in)
			}
		})
	}
}
