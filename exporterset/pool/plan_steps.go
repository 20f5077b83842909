package pool

import (
	"slices"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// planState is PlanScale's working state: the input, the plan being built, and what each
// step hands the next. The steps run in the order PlanScale lists; each reads what the
// steps before it left and adds to the plan.
type planState struct {
	in PlanInput
	p  Plan

	// classify: the live instances, unleased (warm) and leased; outdated idle ones (old);
	// how many are busy, occupy a place under the ceiling, or retire unleased.
	busy, occupied, retiring int32
	warm, leasedLive, old    []*Instance

	// want: the bookings due and when the next falls due; the ceiling and whether a budget's
	// binds; the wanted count capped by it, the target with the standby, and the room left.
	due                  []Booking
	wake                 time.Duration
	ceiling              int32
	bounded, budgetBinds bool
	capped, target, room int32

	// roll: the live count after the idle roll, and when the next idle age falls due.
	live     int32
	idleWake time.Duration
}

// classify sorts the instances: quarantined, retiring, exited, disabled by a person,
// outdated, failing beyond repair and used up ones are set aside (removed, retired or held);
// the rest are live, leased (busy) or warm, and get their Pods restarted under InPlaceReuse
// when those ended or fail.
func (s *planState) classify() {
	in, p := s.in, &s.p
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
			s.hold(leased)
			continue
		case i.Retiring():
			if !leased {
				p.Remove = append(p.Remove, i)
				s.retiring++
			} else {
				s.occupied++ // a lease raced the retirement: it stays until the lease ends
			}
			continue
		case in.Recycle != vtv1alpha1.RecycleInPlaceReuse && i.Terminal():
			if !leased {
				p.Remove = append(p.Remove, i) // the exporter exited after its lease
				continue
			}
		case i.DisabledByPerson():
			s.hold(leased)
			continue
		case i.SpecHash() != in.SpecHash && !leased:
			s.old = append(s.old, i) // rolled to the new spec once idle, by surge (roll.go)
			s.occupied++
			continue
		case !leased && in.Problems.Replaces(i) && !i.Terminal() && !i.Failed() && !i.Renewing() && in.Recycle != vtv1alpha1.RecycleInPlaceReuse:
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
		s.occupied++
		switch {
		case in.Recycle == vtv1alpha1.RecycleInPlaceReuse && (i.Terminal() || i.Failed() || !leased && in.Problems.Replaces(i)):
			p.RestartPods = append(p.RestartPods, i)
		case i.Renewing() && !leased:
			p.RestartPods = append(p.RestartPods, i) // a renewal's restart is owed until done (leasewait.go)
		}
		if leased {
			s.busy++
			s.leasedLive = append(s.leasedLive, i)
		} else {
			s.warm = append(s.warm, i)
		}
	}
}

// hold counts an instance kept in its place but not live (quarantined, or disabled by a
// person): it occupies the ceiling, and is busy while leased.
func (s *planState) hold(leased bool) {
	s.occupied++
	if leased {
		s.busy++
	}
}

// keepLastLeaving applies the lease-wait rule's first step (leasewait.go): the last enabled
// Exporter, leaving, stays; renewed at the ceiling it is counted warm again.
func (s *planState) keepLastLeaving() {
	if renewed := keepLastLeaving(s.in, &s.p); renewed != nil {
		s.occupied++
		s.warm = append(s.warm, renewed) // its Pod is replaced: it serves again
	} else if s.p.Bridge != nil {
		s.occupied++
	}
}

// want computes Wanted (the floor, or the busy instances plus the buffer, the waiting Leases
// and the bookings due), caps it by the ceiling, and decides the standby.
func (s *planState) want() {
	in, p := s.in, &s.p
	s.due, s.wake = bookedDemand(in.Bookings, in.LeadTime, in.Now)
	p.Booked = s.due
	p.Wanted = max(in.MinReplicas, s.busy+in.buffer()+in.Demand+int32(len(s.due)))
	s.capped = p.Wanted
	s.ceiling, s.bounded = in.ceiling()
	s.budgetBinds = s.bounded && in.BudgetCeiling != nil && (in.MaxReplicas == 0 || s.ceiling < in.MaxReplicas)
	if s.bounded && s.capped > s.ceiling {
		s.capped = s.ceiling
		p.Limited = true
		p.BudgetLimited = s.budgetBinds
	}
	if s.capped == 0 && in.KeepsLeasesWaiting() {
		p.Standby = 1 // one Exporter rests, without a Pod, for Leases to wait on
	}
	s.target = max(s.capped, p.Standby)
	s.room = int32(1 << 30)
	if s.bounded {
		s.room = s.ceiling - s.occupied - in.Expected
	}
}

// roll picks the instance rolled for its idle age and the outdated instances the roll
// retires now (roll.go, idleage.go).
func (s *planState) roll() {
	in, p := s.in, &s.p
	idle, idleWake := idleRoll(in, s.warm, s.busy, s.room, len(s.old) > 0 || s.retiring > 0 || len(s.due) > 0 || in.Now.Before(in.BackoffUntil))
	s.idleWake = idleWake
	if idle != nil {
		s.warm = without(s.warm, []*Instance{idle}) // no longer counted warm: its replacement is made first
		p.IdleAged = idle
	}
	s.live = s.busy + int32(len(s.warm)) + in.Expected
	holding := s.retiring > 0 || in.Now.Before(in.BackoffUntil)
	rolled := rollOutdated(in, s.old, s.warm, max(0, s.capped-s.live), s.room, s.busy, holding)
	p.Rolled = rolled
	if idle != nil {
		// Without the at-ceiling step (need 0): an idle instance never leaves before its
		// replacement is available, unless the pool can spare it.
		rolled = append(rolled, rollOutdated(in, []*Instance{idle}, s.warm, 0, s.room, s.busy, true)...)
	}
	p.Retire = append(p.Retire, rolled...)
	p.Outdated = int32(len(s.old))
	s.occupied -= int32(len(rolled)) // on their way out: not an excess to retire below
	s.old = without(s.old, rolled)
}

// create decides the creates: what the target lacks, within the ceiling. Everything that
// exists counts, on its way out or not; what is removed this pass makes room only once it is
// gone. A rolled instance is removed after its retireGrace, by a later pass, which then
// creates its replacement.
func (s *planState) create() {
	in, p := s.in, &s.p
	if s.live >= s.target {
		return
	}
	want := s.target - s.live
	p.Create = want
	if !s.bounded {
		return
	}
	present := int32(len(in.Instances)) + in.Others + in.Expected
	p.Create = min(want, max(0, s.ceiling-present))
	p.RemoveBeforeCreate = max(0, present-s.ceiling)
	after := min(want-p.Create, int32(len(p.Remove))-p.RemoveBeforeCreate, s.ceiling-s.occupied-in.Expected-p.Create)
	p.CreateAfterRemove = max(0, after)
	p.CeilingBlocked = want - p.Create - p.CreateAfterRemove
}

// scaleDown retires what the pool holds beyond its ceiling at once (the outdated first) and a
// surplus of warm instances below it after the cooldown of continuous surplus. Candidates are
// warm (unleased) instances only, in retirement order. The standby's running Pod rests after
// the same cooldown.
func (s *planState) scaleDown() {
	in, p := s.in, &s.p
	retireOrder(s.warm, in.Problems)
	excess := int32(0)
	if s.bounded {
		excess = max(0, s.occupied+in.Expected-s.ceiling)
	}
	surplus := max(0, int32(len(s.warm))+in.Expected-max(0, s.target-s.busy))
	var restPods []*Instance // the standby keeps no running Pod
	if p.Standby > 0 {
		restPods = runningPods(s.warm[min(int(surplus), len(s.warm)):])
	}
	if n := min(excess, int32(len(s.old))); n > 0 {
		s.retireExcess(s.old[:n]) // over the ceiling: the outdated go first
		excess -= n
	}
	if excess > 0 {
		n := min(excess, int32(len(s.warm)))
		s.retireExcess(s.warm[:n])
		s.warm = s.warm[n:]
		surplus = max(0, surplus-n)
	}
	if surplus == 0 && len(restPods) == 0 {
		return
	}
	since := in.Now
	if in.SurplusSince != nil {
		since = *in.SurplusSince
	} else {
		since = ceilSecond(since)
	}
	p.SurplusSince = &since
	if deadline := since.Add(in.Cooldown); in.Now.Before(deadline) {
		p.RequeueAfter = deadline.Sub(in.Now)
		return
	}
	n := min(surplus, int32(len(s.warm)))
	p.Retire = append(p.Retire, s.warm[:n]...)
	s.warm = s.warm[n:]
	p.RestPods = append(p.RestPods, restPods...)
	p.SurplusSince = nil
}

// retireExcess retires instances over the ceiling; those a budget's lower ceiling retires
// are its reclaims.
func (s *planState) retireExcess(over []*Instance) {
	s.p.Retire = append(s.p.Retire, over...)
	if s.budgetBinds {
		s.p.Reclaimed = append(s.p.Reclaimed, over...)
	}
}

// finish decides the bookings' note, the lease-wait rule's second step (leasewait.go), the
// Pods to start, what the failure backoff holds back, whether Leases would be refused, and
// when the plan changes by itself.
func (s *planState) finish() {
	in, p := s.in, &s.p
	if s.bounded {
		p.BookedWaiting = bookingsOverCeiling(s.due, s.ceiling-s.busy-in.Demand)
	}
	p.BookingNote = bookingNote(s.due, min(p.Create+p.CreateAfterRemove, int32(len(s.due))), in.LeadTime, p.BookedWaiting)
	warm := s.warm
	if renewed := keepLastRetired(in, p); renewed != nil {
		warm = append(slices.Clip(warm), renewed) // kept longest: started first
	}
	p.StartPods = podsToStart(in, without(warm, p.RestPods), s.leasedLive, max(0, s.capped-s.busy-in.Expected), int32(len(s.due)))
	p.StartNew = in.Binding != vtv1alpha1.BindingWaitForFirstConsumer && p.Standby == 0
	p.RestartPods = without(p.RestartPods, p.Retire) // a retired instance needs no fresh Pod
	if in.Now.Before(in.BackoffUntil) {
		p.BackingOff, p.Held = true, p.Create+p.CreateAfterRemove
		p.Create, p.CreateAfterRemove, p.RemoveBeforeCreate, p.StartPods, p.RestartPods, p.RestPods = 0, 0, 0, nil, nil, nil
		// A renewal whose Pod is not replaced now waits as well: relabelled alone, the
		// instance would count as current while its Pod still runs the old spec (a Pod
		// that cannot be scheduled stayed so after its class was fixed), and no later pass
		// would replace it.
		p.Renew, p.Renewed = withoutPodded(p.Renew), withoutPodded(p.Renewed)
		p.wakeAt(in.BackoffUntil.Sub(in.Now))
	}
	p.LeasesRefused = in.KeepsLeasesWaiting() && p.Create == 0 && !enabledStays(in, p)
	p.wakeAt(s.wake)     // the next booking falls due
	p.wakeAt(s.idleWake) // the next instance's idle age falls due
}

// wakeAt makes the plan requeue after d (> 0) if that is sooner than it would.
func (p *Plan) wakeAt(d time.Duration) {
	if d > 0 && (p.RequeueAfter == 0 || d < p.RequeueAfter) {
		p.RequeueAfter = d
	}
}

// pace lets the plan begin only as many instances as the create window allows (CreateRoom):
// the instances begun are finished first. It wakes the set when a place in the window lapses.
func (s *planState) pace() {
	if s.in.CreateLimit <= 0 {
		return
	}
	room, wake := CreateRoom(s.in.Instances, s.in.Expected, s.in.Now, s.in.CreateLimit)
	if p := &s.p; p.Create+p.CreateAfterRemove > room {
		p.Create = min(p.Create, room)
		p.CreateAfterRemove = min(p.CreateAfterRemove, room-p.Create)
		p.wakeAt(wake)
	}
}
