package budget

import (
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// maxCount bounds every count the allocation reads. A million Exporters in one set or
// budget is nonsense for a lab; bounding counts keeps Allocate's one-instance-at-a-time
// steps short and its arithmetic far from overflow on any input.
const maxCount = 1 << 20

// lim bounds every amount (milli-units of a resource) and every sum of them: amounts are
// added and multiplied saturating at ±lim, so no sequence of steps overflows int64. A
// quantity above lim/1000 units (over 2·10^15: petabytes of memory in bytes) counts as lim.
const lim = int64(1) << 61

// count clamps a count to [0, maxCount].
func count(v int32) int64 { return min(max(int64(v), 0), maxCount) }

// clean makes a set's counts consistent, the way Allocate reads them: every count is
// clamped to [0, maxCount] (a negative Max is 0, unbounded); Leaving to at most Instances;
// Leased to at most the live instances and Idle to at most the live unleased ones, so
// Idle never includes a leased instance. Quantities are cleaned where they are read
// (amount): a negative one counts as zero.
func clean(s Set) Set {
	s.Instances = int32(count(s.Instances))
	s.Leaving = int32(min(count(s.Leaving), int64(s.Instances)))
	live := s.Instances - s.Leaving
	s.Min, s.Max, s.Wanted = int32(count(s.Min)), int32(count(s.Max)), int32(count(s.Wanted))
	s.Leased = int32(min(count(s.Leased), int64(live)))
	s.Idle = int32(min(count(s.Idle), int64(live-s.Leased)))
	s.Waiting, s.BookedDue = int32(count(s.Waiting)), int32(count(s.BookedDue))
	return s
}

// amount is a quantity in milli-units, clamped to [0, lim] (MilliValue rounds a finer
// fraction up).
func amount(q resource.Quantity) int64 {
	if q.Sign() <= 0 {
		return 0
	}
	if q.CmpInt64(lim/1000) > 0 {
		return lim
	}
	return min(q.MilliValue(), lim)
}

// add is a+b clamped to [-lim, lim]; a and b are within it, so a+b does not overflow.
func add(a, b int64) int64 { return min(max(a+b, -lim), lim) }

// mul is n·v for n, v >= 0, saturating at lim.
func mul(n, v int64) int64 {
	if n <= 0 || v <= 0 {
		return 0
	}
	if v > lim/n {
		return lim
	}
	return n * v
}

// amounts is a resource list as amounts, one per limited resource (names' order).
func amounts(l corev1.ResourceList, names []corev1.ResourceName) []int64 {
	out := make([]int64, len(names))
	for i, n := range names {
		out[i] = amount(l[n])
	}
	return out
}

// limited are the names of the resources a budget limits, sorted.
func limited(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// toInt32 converts a non-negative sum for the result, saturating.
func toInt32(v int64) int32 { return int32(min(max(v, 0), math.MaxInt32)) }
