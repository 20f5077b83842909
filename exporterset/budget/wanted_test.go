package budget

import (
	"math"
	"testing"
)

func TestWantedOf(t *testing.T) {
	for _, tc := range []struct {
		name                                                    string
		minR, maxR, minAvailable, leased, waiting, booked, want int32
	}{
		{"the floor", 3, 0, 1, 0, 0, 0, 3},
		{"leased plus buffer plus demand", 1, 0, 2, 3, 4, 5, 14},
		{"capped by max", 0, 4, 1, 1, 2, 1, 4},
		{"max 0 is unbounded", 0, 0, 1, 1, 2, 1, 5},
		{"the floor capped by max", 5, 3, 0, 0, 0, 0, 3},
		{"negatives are zero", -5, -1, -2, 2, -7, 1, 3},
		{"saturates, never wraps", 0, 0, math.MaxInt32, math.MaxInt32, 1, 0, math.MaxInt32},
	} {
		if got := WantedOf(tc.minR, tc.maxR, tc.minAvailable, tc.leased, tc.waiting, tc.booked); got != tc.want {
			t.Errorf("%s: WantedOf = %d, want %d", tc.name, got, tc.want)
		}
	}
}
