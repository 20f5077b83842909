package soak

import (
	"context"
	"fmt"
	"sort"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
)

// Bookings in the soak: the walk books leases at random (begin time a few seconds to half a
// minute ahead), so that sets prepare instances for them amid every other fault; the
// safety invariants (ceiling, leased never deleted, ...) hold for those instances as for any.
// The final check adds one: once the walk has stopped and the faults are off, every booked
// lease is assigned once it has begun, where its set's ceiling allows. Its bound is the final
// settle deadline (a minute), which also waits for bookings that begin after the walk: a
// tighter one would need excuses for what the walk leaves behind (a failure backoff of up to
// five minutes, a roll), which the soak does not track per booking.

// bookLease books a lease for a set, as a Jumpstarter client booking ahead.
func (wk *Walk) bookLease(ctx context.Context) (string, bool, error) {
	p := wk.pickPool()
	if full, err := wk.leasesFull(ctx, p.set); err != nil || full {
		return "", full, err
	}
	begin := time.Now().Add(time.Duration(2+wk.rng.Intn(30)) * time.Second).Truncate(time.Second)
	duration := time.Duration(3+wk.rng.Intn(15)) * time.Second
	wk.leaseSeq++
	name := fmt.Sprintf("booking-%04d-%s", wk.leaseSeq, p.set)
	b := jumpsim.Booking{Selector: map[string]string{"board": p.set}, Begin: begin, Duration: duration}
	if _, err := wk.w.sim.BookLease(ctx, wk.w.ns, name, b); err != nil {
		return "", false, err
	}
	return fmt.Sprintf("%s for board=%s at %s for %s", name, p.set, begin.UTC().Format(time.TimeOnly), duration), false, nil
}

// bookingProblems names the booked leases that have begun and are still unassigned although
// their set's ceiling allows them: maxReplicas holds every lease of the set that is assigned
// or has begun, besides the instances disabled by hand.
//
// A set governed by a full CapacityBudget (budgetFull) is excused: its begun bookings wait
// for Leases as any other, and the starvation invariant judges whether they should.
func bookingProblems(leases []jumpstarterv1alpha1.Lease, sets []vtv1alpha1.ExporterSet, exporters []jumpstarterv1alpha1.Exporter, now time.Time, budgetFull map[string]bool) []string {
	type demand struct{ begun, assigned int32 }
	bySet := map[string]*demand{}
	var late []*jumpstarterv1alpha1.Lease
	var out []string
	for i := range leases {
		l := &leases[i]
		board := l.Spec.Selector.MatchLabels["board"]
		if l.Status.Ended || l.Spec.Release || board == "" {
			continue
		}
		d := bySet[board]
		if d == nil {
			d = &demand{}
			bySet[board] = d
		}
		switch {
		case l.Status.ExporterRef != nil:
			d.assigned++
		case l.Spec.BeginTime == nil || !now.Before(l.Spec.BeginTime.Time):
			d.begun++
			if l.Spec.BeginTime != nil {
				late = append(late, l)
			}
		default:
			// Not begun: the final state is not reached before it has, and been served.
			out = append(out, fmt.Sprintf("booked lease %s (set %s) begins in %s", l.Name, board, l.Spec.BeginTime.Sub(now).Round(time.Second)))
		}
	}
	for _, l := range late {
		board := l.Spec.Selector.MatchLabels["board"]
		var set *vtv1alpha1.ExporterSet
		for i := range sets {
			if sets[i].Name == board {
				set = &sets[i]
			}
		}
		if set == nil {
			continue // no pool for it: Unsatisfiable is the Jumpstarter controller's business
		}
		if budgetFull[set.Name] {
			continue // the budget holds it back
		}
		// Hand-disabled instances hold their places; quarantined ones do not: the set
		// removes them when the ceiling blocks a replacement that a waiting lease needs.
		var handDisabled int32
		for _, e := range ownedBy(exporters, set.UID) {
			if v := viewOf(e, nil); v.handDisabled() && !v.quarantined {
				handDisabled++
			}
		}
		d := bySet[board]
		if m := set.Spec.MaxReplicas; m != nil && *m > 0 && d.assigned+d.begun+handDisabled > *m {
			continue // the ceiling leaves some of them waiting
		}
		out = append(out, fmt.Sprintf("booked lease %s (set %s) began %s ago and has no exporter (%d leases assigned, %d begun and waiting, maxReplicas %v)",
			l.Name, board, now.Sub(l.Spec.BeginTime.Time).Round(time.Second), d.assigned, d.begun, ptrString(set.Spec.MaxReplicas)))
	}
	sort.Strings(out)
	return out
}

func ptrString(p *int32) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// listLeases reads the namespace's leases from r.
func listLeases(ctx context.Context, r client.Reader, ns string) ([]jumpstarterv1alpha1.Lease, error) {
	var list jumpstarterv1alpha1.LeaseList
	err := r.List(ctx, &list, client.InNamespace(ns))
	return list.Items, err
}
