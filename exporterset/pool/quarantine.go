package pool

import (
	"sort"
	"strings"
	"time"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// AnnotationQuarantined is set on an Exporter the set took out of service because it failed
// the check between two leases (a lease hook, or its exporter exiting with an error after a
// lease). Its value is QuarantineMark's: the reason and the RFC 3339 time. The instance is
// disabled, kept for inspection and removed by PlanQuarantine's rules; it counts against
// maxReplicas but not towards the warm buffer.
const AnnotationQuarantined = "virtualtarget.jumpstarter.dev/quarantined"

// QuarantineMark is the value of AnnotationQuarantined: "<reason> at <RFC 3339 time>".
func QuarantineMark(reason string, at time.Time) string {
	return reason + " at " + at.UTC().Format(time.RFC3339)
}

// Quarantined reports whether the set has quarantined the instance: marked and disabled.
// One a person enabled again is back in service, whatever its mark says; and one the set
// retired since (its old mark left on it) is on its way out, to be removed as retired, not
// kept for inspection (the soak found it kept, stuck, after a person's enable and a retire).
func (i *Instance) Quarantined() bool {
	_, ok := i.Exporter.Annotations[AnnotationQuarantined]
	return ok && !i.Enabled() && !i.Retiring()
}

// QuarantinedAt is when the instance was quarantined, read from its annotation; the zero
// time when the value holds none (a hand-written one): such an instance counts as the
// oldest, so it goes first.
func (i *Instance) QuarantinedAt() time.Time {
	v := i.Exporter.Annotations[AnnotationQuarantined]
	at, err := time.Parse(time.RFC3339, v[strings.LastIndex(v, " ")+1:])
	if err != nil {
		return time.Time{}
	}
	return at
}

// HookFailed reports an exporter that reports a failed lease hook (upstream's
// AfterLeaseHookFailed or BeforeLeaseHookFailed). With onFailure endLease the report is
// transient: the exporter takes the next lease a moment later.
func (i *Instance) HookFailed() bool {
	switch i.Exporter.Status.ExporterStatusValue {
	case jumpstarterv1alpha1.ExporterStatusAfterLeaseHookFailed, jumpstarterv1alpha1.ExporterStatusBeforeLeaseHookFailed:
		return true
	}
	return false
}

// QuarantineInput is what PlanQuarantine decides from.
type QuarantineInput struct {
	// Scale is the pass's PlanScale input; its RemoveQuarantined is ignored.
	Scale PlanInput
	// TTL is how long a quarantined instance is kept; MaxKept how many are kept at most.
	TTL     time.Duration
	MaxKept int
	// Grace is how long after being disabled a quarantined instance may be removed: the
	// lease scheduler may have assigned it just before its cache showed it disabled.
	Grace time.Duration
}

// QuarantinePlan is which quarantined instances go now, and why.
type QuarantinePlan struct {
	// Remove are the quarantined instances to delete now, oldest first (PlanInput's
	// RemoveQuarantined).
	Remove []*Instance
	// Expired, OverCap and ForLeases count them by reason: the TTL ran out, more than
	// MaxKept are kept, the ceiling blocks a replacement that waiting leases need.
	Expired, OverCap, ForLeases int32
	// Kept is how many quarantined instances remain (not being deleted, not removed now).
	Kept int32
	// RequeueAfter is when the decision changes by time alone (a TTL or a grace ends); 0
	// for never.
	RequeueAfter time.Duration
}

// PlanQuarantine decides which quarantined instances are removed now. It is pure. A leased
// quarantined instance (a person inspecting it with allowDisabled) is never removed, nor one
// within Grace of being quarantined. The others go when their TTL has run out; then the
// oldest beyond MaxKept (0: every one, once its grace has passed); then, while leases wait
// and the ceiling blocks the creates they need (PlanScale's CeilingBlocked), the oldest
// left, one per blocked create.
func PlanQuarantine(in QuarantineInput) QuarantinePlan {
	var out QuarantinePlan
	now := in.Scale.Now
	var kept []*Instance
	for _, i := range in.Scale.Instances {
		if i.Quarantined() && !i.Deleting() {
			kept = append(kept, i)
		}
	}
	sort.SliceStable(kept, func(a, b int) bool {
		ta, tb := kept[a].QuarantinedAt(), kept[b].QuarantinedAt()
		if !ta.Equal(tb) {
			return ta.Before(tb)
		}
		return kept[a].Name() < kept[b].Name()
	})
	wake := func(at time.Time) {
		if d := at.Sub(now); d > 0 && (out.RequeueAfter == 0 || d < out.RequeueAfter) {
			out.RequeueAfter = d
		}
	}
	removable := func(i *Instance) bool {
		return !i.Leased() && !now.Before(i.QuarantinedAt().Add(in.Grace))
	}
	take := func(k int) {
		out.Remove = append(out.Remove, kept[k])
		kept = append(kept[:k:k], kept[k+1:]...)
	}
	for k := 0; k < len(kept); {
		i := kept[k]
		if !now.Before(i.QuarantinedAt().Add(in.TTL)) && removable(i) {
			take(k)
			out.Expired++
			continue
		}
		k++
	}
	for k := 0; len(kept) > max(0, in.MaxKept) && k < len(kept); {
		if removable(kept[k]) {
			take(k)
			out.OverCap++
			continue
		}
		k++
	}
	if in.Scale.Demand > 0 && len(kept) > 0 {
		trial := in.Scale
		trial.RemoveQuarantined = out.Remove
		if p := PlanScale(trial); !p.BackingOff && p.CeilingBlocked > 0 {
			need := min(p.CeilingBlocked, in.Scale.Demand)
			for k := 0; need > 0 && k < len(kept); {
				if removable(kept[k]) {
					take(k)
					out.ForLeases++
					need--
					continue
				}
				k++
			}
		}
	}
	out.Kept = int32(len(kept))
	for k, i := range kept {
		if i.Leased() {
			continue // its lease's end wakes the set
		}
		wake(i.QuarantinedAt().Add(in.TTL))
		if k < len(kept)-max(0, in.MaxKept) || in.Scale.Demand > 0 {
			wake(i.QuarantinedAt().Add(in.Grace)) // over the cap, or maybe wanted for a lease
		}
	}
	return out
}

// removeQuarantined reports whether i is among the quarantined instances to remove now.
func removeQuarantined(in PlanInput, i *Instance) bool {
	for _, r := range in.RemoveQuarantined {
		if r == i {
			return true
		}
	}
	return false
}
