package main

import (
	"fmt"
	"io"
	"time"

	"github.com/exporterset/exporterset/exporterset/budget"
)

// twoSets is the budget: sets a and b, both minReplicas 0 and maxReplicas 4, share
// limit instances. a keeps a warm buffer of 3 and has 3 idle instances; b keeps a buffer of
// 1, has 1 instance serving a lease and waiting Leases, the oldest a minute old.
func twoSets(limit, waiting int32, now time.Time) budget.Input {
	a := budget.Set{Name: "a", Max: 4, Wanted: budget.WantedOf(0, 4, 3, 0, 0, 0), Instances: 3, Idle: 3}
	b := budget.Set{Name: "b", Max: 4, Wanted: budget.WantedOf(0, 4, 1, 1, waiting, 0), Instances: 1, Leased: 1, Waiting: waiting}
	if waiting > 0 {
		b.OldestWaiting = now.Add(-time.Minute)
	}
	return budget.Input{Limits: budget.Limits{Instances: limit}, Sets: []budget.Set{a, b}}
}

// budgetWhatIf prints the budget's decision: the budget's state, then one line per set.
func budgetWhatIf(w io.Writer, in budget.Input) {
	a := budget.Allocate(in)
	fmt.Fprintf(w, "budget: limit=%d used=%d exhausted=%v overcommitted=%v reclaims=%d short=%v\n",
		in.Limits.Instances, a.UsedInstances, a.Exhausted, a.Overcommitted, a.Reclaims, a.Short)
	for i, g := range a.Grants {
		s := in.Sets[i]
		fmt.Fprintf(w, "set %s: live=%d wanted=%d waiting=%d allowed=%d reclaim=%d limited=%v demand=%v\n",
			g.Name, s.Live(), s.Wanted, s.Waiting, g.Allowed, g.Reclaim, g.Limited, g.Demand)
	}
}
