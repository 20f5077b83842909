package pool

import (
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// PlanInput is everything PlanScale decides from.
type PlanInput struct {
	// MinReplicas, MaxReplicas (0 = unbounded) and MinAvailableReplicas are the set's spec.
	MinReplicas, MaxReplicas, MinAvailableReplicas int32
	// Cooldown is the set's scaleDownCooldown.
	Cooldown time.Duration
	// Recycle is the set's recycleStrategy.
	Recycle vtv1alpha1.RecycleStrategy
	// Binding is the class's bindingMode.
	Binding vtv1alpha1.BindingMode
	// SpecHash is the hash of what instances are built from now.
	SpecHash string
	// Instances are the set's instances (Exporters being deleted included).
	Instances []*Instance
	// Problems are the instances' diagnosed failures (nil: none known).
	Problems Problems
	// Expected is the number of instances created but not yet seen in the cache.
	Expected int32
	// Others is the number of the set's Exporters outside Instances (strays: they no longer
	// match the selector). They still exist, so they count against maxReplicas.
	Others int32
	// Demand is the number of waiting Leases that would match the set's instances.
	Demand int32
	// Bookings are the Leases booked ahead for the set's instances (not begun, not yet
	// waiting), sorted by begin time (sortBookings).
	Bookings []Booking
	// LeadTime is how long before a booking's begin time the set has an instance started
	// for it (bookingLead).
	LeadTime time.Duration
	// Now is the current time.
	Now time.Time
	// SurplusSince is the cooldown clock from status; nil when there was no surplus.
	SurplusSince *time.Time
	// BackoffUntil is when the set may start instances and Pods again after consecutive
	// failures; zero (or past) when it is not backing off.
	BackoffUntil time.Time
	// RemoveQuarantined are the quarantined instances to remove now (PlanQuarantine); the
	// other quarantined ones are kept, counted against maxReplicas, not towards the buffer.
	RemoveQuarantined []*Instance
	// MaxUseCount retires an instance (InPlaceReuse) once unleased after that many leases
	// (usecount.go); 0: no limit.
	MaxUseCount int
	// MaxIdleAge rolls an instance idle for longer, by surge (idleage.go); 0: never.
	MaxIdleAge time.Duration
	// BudgetCeiling is how many Exporters a CapacityBudget lets the set hold now (its
	// Allowed), nil when no budget governs it. It caps the set as MaxReplicas does, 0
	// included: the lower of the two is the ceiling.
	BudgetCeiling *int32
}

// ceiling is the set's ceiling now, the lower of maxReplicas and the budget's; bounded is
// false when neither caps the set.
func (in PlanInput) ceiling() (c int32, bounded bool) {
	c, bounded = in.MaxReplicas, in.MaxReplicas > 0
	if b := in.BudgetCeiling; b != nil && (!bounded || *b < c) {
		c, bounded = max(0, *b), true
	}
	return c, bounded
}

// Plan is what one reconcile should do to move the pool towards its spec.
type Plan struct {
	// Wanted is how many serving-or-warm instances the set wants, before the ceiling.
	Wanted int32
	// Create is how many new instances to create now: every Exporter of the set that still
	// exists (Instances, Others, Expected) counts against maxReplicas, so Create alone never
	// takes the set over it.
	Create int32
	// CreateAfterRemove is how many more instances may be created once removals from Remove
	// are confirmed gone, one per removal (CreatesAfterRemoval): at the ceiling a
	// replacement waits for its predecessor's delete (act.go).
	CreateAfterRemove int32
	// RemoveBeforeCreate is how many Exporters of the set exist beyond maxReplicas (being
	// deleted, retiring, exited): that many removals must be gone before the first of
	// CreateAfterRemove.
	RemoveBeforeCreate int32
	// Retire are instances to disable now (surplus, excess over the ceiling, or outdated);
	// they are removed once unleased.
	Retire []*Instance
	// Remove are unleased instances to delete (or release, under Retain) now: retiring
	// ones and, under ExitAndReplace, those whose exporter exited.
	Remove []*Instance
	// RestartPods are instances (InPlaceReuse) whose terminal Pods are deleted so that a
	// fresh Pod is started for the same Exporter.
	RestartPods []*Instance
	// StartPods are instances that should get a Pod now and have none.
	StartPods []*Instance
	// Limited is true when the set wants more instances than its ceiling allows.
	Limited bool
	// BudgetLimited is true when the ceiling that limits the set is a CapacityBudget's,
	// lower than maxReplicas; Reclaimed are the instances among Retire that the budget's
	// lower ceiling retires (an excess over it).
	BudgetLimited bool
	Reclaimed     []*Instance
	// SurplusSince is the new cooldown clock: nil without surplus.
	SurplusSince *time.Time
	// RequeueAfter is when the plan changes by itself (the cooldown or a backoff ends); 0
	// for never.
	RequeueAfter time.Duration
	// Replace are the instances among Retire that are retired because they fail (their
	// Problem says so), not because the pool is too large or outdated.
	Replace []*Instance
	// Outdated counts the unleased instances of an older spec still in the pool (a roll is
	// under way while it is above 0).
	Outdated int32
	// Held is how many creates the failure backoff holds back (Create is 0 then).
	Held int32
	// BackingOff is true while the failure backoff holds creates and Pod starts.
	BackingOff bool
	// Booked are the bookings due: their begin time is within the lead time, and each
	// wants an instance on top of the warm buffer.
	Booked []Booking
	// BookedWaiting names the due bookings that maxReplicas leaves without an instance.
	BookedWaiting []string
	// BookingNote says what the set prepares for; empty without bookings due.
	BookingNote string
	// CeilingBlocked is how many of the instances wanted (within maxReplicas) neither
	// Create nor CreateAfterRemove makes, because Exporters on their way out or kept
	// (quarantined, disabled by a person) fill the ceiling.
	CeilingBlocked int32
	// UsedUp are the instances among Retire that served MaxUseCount leases.
	UsedUp []*Instance
	// Rolled are the outdated instances among Retire that the roll retires (roll.go).
	Rolled []*Instance
	// IdleAged is the instance rolled for its idle age (idleage.go), nil for none: it is
	// among Retire once its replacement is available.
	IdleAged *Instance
	// Standby is 1 when the set wants nothing (no lease, floor, buffer or booking) but keeps
	// one Exporter, without a Pod, for Leases to wait on (leasewait.go); 0 otherwise. While
	// it is 1 no instance gets a Pod unless the plan says so (StartPods).
	Standby int32
	// Bridge is the last enabled Exporter, which would have been removed or retired, kept
	// as it is for this pass while its successor is created beside it (leasewait.go); nil
	// for none.
	Bridge *Instance
	// Renewed are the instances kept in place as the set's last enabled Exporter at the
	// ceiling (leasewait.go): among RestartPods or RestPods, and Renew where outdated.
	Renewed []*Instance
	// Renew are the instances among Renewed to bring to the current spec in place: the
	// template's labels and annotations and the spec hash written on the Exporter, its use
	// count and idle clock dropped.
	Renew []*Instance
	// RestPods are idle instances whose running Pod is deleted while the Exporter stays
	// (the standby at rest, or an instance renewed in place).
	RestPods []*Instance
	// LeasesRefused is true when the set owes its Leases an enabled Exporter but has none
	// staying and creates none now: every one is disabled and the ceiling is full, or the
	// backoff holds the create (leasewait.go).
	LeasesRefused bool
}

// PlanScale decides what to create, retire, remove and (re)start. It is pure.
//
// The floor and the warm buffer count live instances: enabled, not retiring, not recycled,
// and built from the current spec. Leased instances are busy; the others, ready or still
// starting, are warm. Wanted = max(minReplicas, busy + minAvailableReplicas + demand),
// capped by maxReplicas. The ceiling counts every Exporter of the set that exists: live,
// retiring, exited and awaiting removal, being deleted (held by a finalizer), strays, and
// those created but not yet seen. An instance removed this pass makes room only once act has
// seen it gone (CreateAfterRemove), so a replacement at the ceiling follows its predecessor
// and never overlaps it; an excess over the ceiling, though, counts only the instances that
// stay, as those on their way out need no retiring. Each booking due (begin time within
// LeadTime) adds one to Wanted, and to the Pods started under WaitForFirstConsumer; a later
// one makes the plan requeue for when it falls due. A surplus of warm instances is retired only after the cooldown of continuous surplus; an
// excess over the ceiling is retired at once. A leased instance is never retired or removed.
// An unleased instance whose Problem asks for replacement is retired and replaced. While
// BackoffUntil is ahead, nothing new is created or started.
func PlanScale(in PlanInput) Plan {
	var p Plan
	var busy, occupied, retiring int32
	var warm, leasedLive, old []*Instance
	for _, i := range in.Instances {
		if i.Deleting() {
			continue
		}
		leased := i.Leased()
		switch {
		case i.Quarantined(): // kept for inspection (quarantine.go), never retired or restarted
			if !leased && removeQuarantined(in, i) {
				p.Remove = append(p.Remove, i)
				continue
			}
			occupied++
			if leased {
				busy++
			}
			continue
		case i.Retiring():
			if !leased {
				p.Remove = append(p.Remove, i)
				retiring++
			} else {
				occupied++ // a lease raced the retirement: it stays until the lease ends
			}
			continue
		case in.Recycle != vtv1alpha1.RecycleInPlaceReuse && i.Terminal():
			if !leased {
				p.Remove = append(p.Remove, i) // the exporter exited after its lease
				continue
			}
		case i.DisabledByPerson():
			occupied++
			if leased {
				busy++
			}
			continue
		case i.SpecHash() != in.SpecHash && !leased:
			old = append(old, i) // rolled to the new spec once idle, by surge (roll.go)
			occupied++
			continue
		case !leased && in.Problems.Replaces(i) && !i.Terminal() && !i.Failed() && in.Recycle != vtv1alpha1.RecycleInPlaceReuse:
			// Crash loop, lost node, startup deadline: waiting will not help. (A terminal
			// Pod is recycled below, as after a lease; InPlaceReuse restarts the Pod.)
			p.Retire = append(p.Retire, i)
			p.Replace = append(p.Replace, i)
			continue
		case !leased && in.Recycle == vtv1alpha1.RecycleInPlaceReuse && usedUp(i, in.MaxUseCount):
			p.Retire = append(p.Retire, i) // served its last lease: retired as ExitAndReplace would
			p.UsedUp = append(p.UsedUp, i)
			continue
		}
		occupied++
		if in.Recycle == vtv1alpha1.RecycleInPlaceReuse && (i.Terminal() || i.Failed() || !leased && in.Problems.Replaces(i)) {
			p.RestartPods = append(p.RestartPods, i)
		}
		if leased {
			busy++
			leasedLive = append(leasedLive, i)
		} else {
			warm = append(warm, i)
		}
	}

	if renewed := keepLastLeaving(in, &p); renewed != nil {
		occupied++
		warm = append(warm, renewed) // its Pod is replaced: it serves again
	} else if p.Bridge != nil {
		occupied++
	}

	due, wake := bookedDemand(in.Bookings, in.LeadTime, in.Now)
	p.Booked = due
	p.Wanted = max(in.MinReplicas, busy+in.MinAvailableReplicas+in.Demand+int32(len(due)))
	capped := p.Wanted
	ceiling, bounded := in.ceiling()
	budgetBinds := bounded && in.BudgetCeiling != nil && (in.MaxReplicas == 0 || ceiling < in.MaxReplicas)
	if bounded && capped > ceiling {
		capped = ceiling
		p.Limited = true
		p.BudgetLimited = budgetBinds
	}
	if capped == 0 && in.KeepsLeasesWaiting() {
		p.Standby = 1 // one Exporter rests, without a Pod, for Leases to wait on
	}
	target := max(capped, p.Standby)
	room := int32(1 << 30)
	if bounded {
		room = ceiling - occupied - in.Expected
	}
	idle, idleWake := idleRoll(in, warm, busy, room, len(old) > 0 || retiring > 0 || len(due) > 0 || in.Now.Before(in.BackoffUntil))
	if idle != nil {
		warm = without(warm, []*Instance{idle}) // no longer counted warm: its replacement is made first
		p.IdleAged = idle
	}
	live := busy + int32(len(warm)) + in.Expected
	holding := retiring > 0 || in.Now.Before(in.BackoffUntil)
	rolled := rollOutdated(in, old, warm, max(0, capped-live), room, busy, holding)
	p.Rolled = rolled
	if idle != nil {
		// Without the at-ceiling step (need 0): an idle instance never leaves before its
		// replacement is available, unless the pool can spare it.
		rolled = append(rolled, rollOutdated(in, []*Instance{idle}, warm, 0, room, busy, true)...)
	}
	p.Retire = append(p.Retire, rolled...)
	p.Outdated = int32(len(old))
	occupied -= int32(len(rolled)) // on their way out: not an excess to retire below
	old = without(old, rolled)
	if live < target {
		want := target - live
		p.Create = want
		if bounded {
			// Everything that exists counts, on its way out or not; what is removed this
			// pass makes room only once it is gone. A rolled instance is removed after its
			// retireGrace, by a later pass, which then creates its replacement.
			present := int32(len(in.Instances)) + in.Others + in.Expected
			p.Create = min(want, max(0, ceiling-present))
			p.RemoveBeforeCreate = max(0, present-ceiling)
			after := min(want-p.Create, int32(len(p.Remove))-p.RemoveBeforeCreate, ceiling-occupied-in.Expected-p.Create)
			p.CreateAfterRemove = max(0, after)
			p.CeilingBlocked = want - p.Create - p.CreateAfterRemove
		}
	}

	// Scale down: an excess over the ceiling goes at once, a surplus below it after the
	// cooldown. Candidates are warm (unleased) instances only.
	retireOrder(warm, in.Problems)
	excess := int32(0)
	if bounded {
		excess = max(0, occupied+in.Expected-ceiling)
	}
	surplus := max(0, int32(len(warm))+in.Expected-max(0, target-busy))
	var restPods []*Instance // the standby keeps no running Pod
	if p.Standby > 0 {
		restPods = runningPods(warm[min(int(surplus), len(warm)):])
	}
	if n := min(excess, int32(len(old))); n > 0 {
		p.Retire = append(p.Retire, old[:n]...) // over the ceiling: the outdated go first
		if budgetBinds {
			p.Reclaimed = append(p.Reclaimed, old[:n]...)
		}
		excess -= n
	}
	if excess > 0 {
		n := min(excess, int32(len(warm)))
		p.Retire = append(p.Retire, warm[:n]...)
		if budgetBinds {
			p.Reclaimed = append(p.Reclaimed, warm[:n]...)
		}
		warm = warm[n:]
		surplus = max(0, surplus-n)
	}
	if surplus > 0 || len(restPods) > 0 {
		since := in.Now
		if in.SurplusSince != nil {
			since = *in.SurplusSince
		} else {
			since = ceilSecond(since)
		}
		p.SurplusSince = &since
		if deadline := since.Add(in.Cooldown); !in.Now.Before(deadline) {
			n := min(surplus, int32(len(warm)))
			p.Retire = append(p.Retire, warm[:n]...)
			warm = warm[n:]
			p.RestPods = append(p.RestPods, restPods...)
			p.SurplusSince = nil
		} else {
			p.RequeueAfter = deadline.Sub(in.Now)
		}
	}

	if bounded {
		p.BookedWaiting = bookingsOverCeiling(due, ceiling-busy-in.Demand)
	}
	p.BookingNote = bookingNote(due, min(p.Create+p.CreateAfterRemove, int32(len(due))), in.LeadTime, p.BookedWaiting)
	keepLastRetired(in, &p)
	p.StartPods = podsToStart(in, without(warm, p.RestPods), leasedLive, max(0, capped-busy-in.Expected), int32(len(due)))
	p.RestartPods = without(p.RestartPods, p.Retire) // a retired instance needs no fresh Pod
	if in.Now.Before(in.BackoffUntil) {
		p.BackingOff, p.Held = true, p.Create+p.CreateAfterRemove
		p.Create, p.CreateAfterRemove, p.RemoveBeforeCreate, p.StartPods, p.RestartPods, p.RestPods = 0, 0, 0, nil, nil, nil
		if wait := in.BackoffUntil.Sub(in.Now); p.RequeueAfter == 0 || wait < p.RequeueAfter {
			p.RequeueAfter = wait
		}
	}
	p.LeasesRefused = in.KeepsLeasesWaiting() && p.Create == 0 && !enabledStays(in, &p)
	if wake > 0 && (p.RequeueAfter == 0 || wake < p.RequeueAfter) {
		p.RequeueAfter = wake // the next booking falls due
	}
	if idleWake > 0 && (p.RequeueAfter == 0 || idleWake < p.RequeueAfter) {
		p.RequeueAfter = idleWake // the next instance's idle age falls due
	}
	return p
}

// CreatesAfterRemoval is how many instances may be created once gone of the plan's removals
// are confirmed gone: one per removal beyond RemoveBeforeCreate, at most CreateAfterRemove.
// Each fills the place of one that no longer exists, so the set stays within maxReplicas.
func (p *Plan) CreatesAfterRemoval(gone int32) int32 {
	return min(p.CreateAfterRemove, max(0, gone-p.RemoveBeforeCreate))
}

// podsToStart picks the instances that should get a Pod and have none. A leased instance
// always does (its Pod failed and was restarted, or someone deleted it: the lease holder waits
// for it). Immediate: as many idle instances as the set wants running (want: the floor, the
// buffer and the waiting Leases beyond the leased instances and those being created), so the
// standby rests without one. WaitForFirstConsumer: only as many idle instances as Leases
// wait for or bookings are due. Both count the idle instances already running.
func podsToStart(in PlanInput, warm, leased []*Instance, want, booked int32) []*Instance {
	var out []*Instance
	for _, i := range leased {
		if !i.HasPod() {
			out = append(out, i)
		}
	}
	need := want
	if in.Binding == vtv1alpha1.BindingWaitForFirstConsumer {
		need = in.Demand + booked
	}
	for _, i := range warm {
		if i.ActivePod() != nil {
			need--
		}
	}
	// warm is in retirement order: start from its end, the instances kept longest.
	for k := len(warm) - 1; k >= 0 && need > 0; k-- {
		if !warm[k].HasPod() {
			out = append(out, warm[k])
			need--
		}
	}
	return out
}

// ceilSecond rounds t up to the whole second: status keeps times in whole seconds, and a
// clock stored rounded down would end the cooldown up to a second early.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}

// without returns the instances of in that are not in drop.
func without(in, drop []*Instance) []*Instance {
	if len(drop) == 0 {
		return in
	}
	gone := make(map[*Instance]bool, len(drop))
	for _, d := range drop {
		gone[d] = true
	}
	var out []*Instance
	for _, i := range in {
		if !gone[i] {
			out = append(out, i)
		}
	}
	return out
}
