package main

import (
	"strings"
	"testing"
	"time"

	"github.com/exporterset/exporterset/exporterset/pool"
)

// The example's answers are the library's: a warm buffer of 2 with one idle instance and one
// leased creates one more; a lease storm of 20 under a ceiling of 10 is limited.
func TestWhatIf(t *testing.T) {
	anHourAgo := time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name                    string
		in                      pool.PlanInput
		ready, leased, starting int
		want                    []string
	}{
		{name: "buffer short by one", in: pool.PlanInput{MinAvailableReplicas: 2}, ready: 1, leased: 1,
			want: []string{"status: replicas=2 available=1 leased=1 unavailable=0", "plan: want=3 create=1 retire=0 limited=false"}},
		{name: "storm under a ceiling", in: pool.PlanInput{MinAvailableReplicas: 2, MaxReplicas: 10, Demand: 20}, ready: 2,
			want: []string{"plan: want=22 create=8 retire=0 limited=true"}},
		{name: "surplus: the first pass starts the cooldown clock", in: pool.PlanInput{MinAvailableReplicas: 1}, ready: 4,
			want: []string{"status: replicas=4 available=4", "plan: want=1 create=0 retire=0"}},
		{name: "surplus past its cooldown is retired", in: pool.PlanInput{MinAvailableReplicas: 1, Cooldown: time.Minute, SurplusSince: &anHourAgo}, ready: 4,
			want: []string{"plan: want=1 create=0 retire=3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			whatIf(&out, tc.in, tc.ready, tc.leased, tc.starting)
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// The budget scenario prints budget.Allocate's decision: with two Leases waiting for b and
// the budget full, two of a's idle instances are reclaimed for b; for b's warm buffer alone,
// nothing is.
func TestBudgetWhatIf(t *testing.T) {
	for _, tc := range []struct {
		name           string
		limit, waiting int32
		want           []string
	}{
		{name: "waiting leases reclaim a's spares", limit: 4, waiting: 2, want: []string{
			"budget: limit=4 used=4 exhausted=true overcommitted=false reclaims=2 short=[a b]",
			"set a: live=3 wanted=3 waiting=0 allowed=1 reclaim=2 limited=true demand=false",
			"set b: live=1 wanted=4 waiting=2 allowed=3 reclaim=0 limited=true demand=false"}},
		{name: "no Lease waits: b's buffer waits for room, nothing is reclaimed for it", limit: 4, waiting: 0, want: []string{
			"budget: limit=4 used=4 exhausted=true overcommitted=false reclaims=0 short=[b]",
			"set a: live=3 wanted=3 waiting=0 allowed=3 reclaim=0 limited=false",
			"set b: live=1 wanted=2 waiting=0 allowed=1 reclaim=0 limited=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			budgetWhatIf(&out, twoSets(tc.limit, tc.waiting, time.Now()))
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
