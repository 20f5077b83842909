package soak

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// CeilingOptions are the tolerances of the checker's timed invariants (the ceiling, the live
// Available cross-check and the churn bound). The checker sees the cluster
// through its own watches, which lag the reconciler's by a little, and a walk step (a lower
// maxReplicas, a deleted Pod bringing a recycled instance back) makes an excess the
// reconciler can only remove afterwards; these bound how long that may take.
type CeilingOptions struct {
	// Confirm is how long an excess beyond the instances being recycled may last before it
	// is a violation: only the checker's view lagging, or a failed step redone at once,
	// explains one.
	Confirm time.Duration
	// Recent is how long a lowered maxReplicas, and an instance that was being recycled,
	// still count: the reconciler needs a pass to act on either.
	Recent time.Duration
	// StayGrace is how long a set may stay above maxReplicas at all (recycled instances
	// included) while it is not excused (class deleted, controller down, plugin killed).
	StayGrace time.Duration
	// AvailableGrace is how long a status may keep saying Available=True while the objects
	// show the floor or the buffer broken: the controller's watch and pass take a moment.
	AvailableGrace time.Duration
	// ChurnWindow is the window over which creations of a failing set are counted.
	ChurnWindow time.Duration
	// ResetSlack lengthens each backoff span of the churn bound: the controller sees a reset
	// (a spec change, a ready instance) a little after or before the checker does.
	ResetSlack time.Duration
	// Starve is how long a Lease may wait for a governed set while the CapacityBudget is
	// full and another governed set without demand holds idle instances above its floor
	// (budgetstarve.go): the budget's pass, the donor's retirement and the watches' lag.
	Starve time.Duration
	// RefuseGrace is how long after the soak itself changed a set (created it, changed its
	// class name, selector or template labels, deleted or re-created its class, gave a
	// budget over it no room, disabled one of its Exporters by hand) a Lease for it may be
	// refused: the controller's pass, its create and the Jumpstarter core's watch
	// (refusewatch.go).
	RefuseGrace time.Duration
	// BackoffBase and BackoffCap are the failure backoff the soak's reconciler runs with;
	// the churn bound is derived from them.
	BackoffBase, BackoffCap time.Duration
}

// The soak reconciler's failure backoff: shorter than the defaults (2s doubling to 5m), so
// that a set repaired at the end of the walk tries again well within the settle time. The
// churn invariant's bound is derived from these.
const (
	soakBackoffBase = 2 * time.Second
	soakBackoffCap  = 20 * time.Second
)

// DefaultCeilingOptions are generous enough for a loaded 2-core machine.
func DefaultCeilingOptions() CeilingOptions {
	return CeilingOptions{Confirm: 5 * time.Second, Recent: 10 * time.Second, StayGrace: 15 * time.Second,
		AvailableGrace: 15 * time.Second, ChurnWindow: time.Minute, ResetSlack: 2 * time.Second, Starve: 20 * time.Second,
		RefuseGrace: 10 * time.Second,
		BackoffBase: soakBackoffBase, BackoffCap: soakBackoffCap}
}

type maxChange struct {
	at  time.Time
	max int64 // math.MaxInt64 for 0 (unbounded)
}

// ceilingTracker is one set's memory between two checks of the ceiling invariants.
type ceilingTracker struct {
	maxes      []maxChange
	overSince  time.Time // excess beyond recycling first seen; zero when none
	aboveSince time.Time // above the ceiling (not excused) first seen; zero when not
	recycledAt map[types.UID]time.Time
}

func newCeilingTracker() *ceilingTracker {
	return &ceilingTracker{recycledAt: map[types.UID]time.Time{}}
}

func unbounded(m int32) int64 {
	if m == 0 {
		return math.MaxInt64
	}
	return int64(m)
}

// noteMax records the set's current maxReplicas.
func (t *ceilingTracker) noteMax(now time.Time, m int32, recent time.Duration) {
	v := unbounded(m)
	if n := len(t.maxes); n == 0 || t.maxes[n-1].max != v {
		t.maxes = append(t.maxes, maxChange{at: now, max: v})
	}
	// Keep the last value that was in effect at the start of the window, and what follows.
	for len(t.maxes) > 1 && now.Sub(t.maxes[1].at) > recent {
		t.maxes = t.maxes[1:]
	}
}

// recentMax is the highest maxReplicas in effect during the last window.
func (t *ceilingTracker) recentMax() int64 {
	var m int64
	for _, c := range t.maxes {
		m = max(m, c.max)
	}
	return m
}

// check evaluates the two ceiling invariants for one set and returns the broken one, if any.
//
//   - InvOverCeiling: instances not being recycled (nor recently) exceed the highest recent
//     maxReplicas, unless leased or hand-disabled ones alone explain it, for longer than
//     Confirm. The reconciler never creates past the ceiling, so only a bug breaks this.
//   - InvStaysAbove: all instances exceed maxReplicas (unless leased or hand-disabled ones,
//     which cannot be retired, explain it) for longer than StayGrace while not excused: an
//     excess must be retired, and recycling must finish.
func (t *ceilingTracker) check(now time.Time, set *vtv1alpha1.ExporterSet, views []instanceView, excused bool, o CeilingOptions) (inv, detail string) {
	var curMax int32
	if set.Spec.MaxReplicas != nil {
		curMax = *set.Spec.MaxReplicas
	}
	t.noteMax(now, curMax, o.Recent)
	strategy := set.Spec.RecycleStrategy

	seen := map[types.UID]bool{}
	var total, live, recycling, unretirableLive, unretirableAll int64
	for _, v := range views {
		seen[v.uid] = true
		total++
		rec := v.recycling(strategy)
		if rec {
			t.recycledAt[v.uid] = now
			recycling++
		} else if at, ok := t.recycledAt[v.uid]; ok && now.Sub(at) < o.Recent {
			rec = true // it came back (its exited Pod was deleted): count it out a little longer
		}
		// Leased instances (a lease may also have raced a retirement) stay until the lease
		// ends; hand-disabled ones stay until a person enables them, unless they exited.
		stuck := v.leased || (v.handDisabled() && !v.recycling(strategy))
		if stuck {
			unretirableAll++
		}
		if !rec {
			live++
			if stuck {
				unretirableLive++
			}
		}
	}
	for uid := range t.recycledAt {
		if !seen[uid] {
			delete(t.recycledAt, uid)
		}
	}

	if curMax == 0 {
		t.overSince, t.aboveSince = time.Time{}, time.Time{}
		return "", ""
	}
	effMax := max(t.recentMax(), unretirableLive)
	if live > effMax {
		if t.overSince.IsZero() {
			t.overSince = now
		}
		if now.Sub(t.overSince) > o.Confirm {
			since := t.overSince
			t.overSince = now // report a lasting excess once per window, not every check
			return InvOverCeiling, fmt.Sprintf("set %s has %d instances not being recycled (%d in all, %d recycling, %d leased or disabled by hand) for %s, over maxReplicas %d (highest in the last %s: %s)",
				set.Name, live, total, recycling, unretirableLive, now.Sub(since).Round(time.Millisecond), curMax, o.Recent, fmtMax(t.recentMax()))
		}
	} else {
		t.overSince = time.Time{}
	}

	if total > max(int64(curMax), unretirableAll) && !excused {
		if t.aboveSince.IsZero() {
			t.aboveSince = now
		}
		if now.Sub(t.aboveSince) > o.StayGrace {
			since := t.aboveSince
			t.aboveSince = now
			return InvStaysAbove, fmt.Sprintf("set %s has stayed above maxReplicas %d for %s: %d instances, %d recycling, %d leased or disabled by hand",
				set.Name, curMax, now.Sub(since).Round(time.Millisecond), total, recycling, unretirableAll)
		}
	} else {
		t.aboveSince = time.Time{}
	}
	return "", ""
}

func fmtMax(m int64) string {
	if m == math.MaxInt64 {
		return "unbounded"
	}
	return fmt.Sprint(m)
}
