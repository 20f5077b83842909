package pool_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// benchPool is a realistic pool: a third leased, a third idle, the rest booting or retiring.
func benchPool(n int) []*pool.Instance {
	out := make([]*pool.Instance, n)
	for i := range out {
		name := fmt.Sprintf("i%05d", i)
		switch i % 6 {
		case 0, 1:
			out[i] = fixture.Instance(name, fixture.Ready, fixture.Leased("l"+name))
		case 2, 3:
			out[i] = fixture.Instance(name, fixture.Ready, fixture.CreatedAt(time.Duration(i)*time.Second))
		case 4:
			out[i] = fixture.Instance(name)
		default:
			out[i] = fixture.Instance(name, fixture.Ready, fixture.Retiring)
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
				pool.ComputeStatus(instances, nil)
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
				pool.PlanScale(in)
			}
		})
	}
}
