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
	// FreeBoards is how many free physical boards (FreeBoards, hardware.go) serve the set's
	// Leases: they count toward MinAvailableReplicas, so the set's own instances hold only
	// the rest of the buffer. The floor, the ceiling, waiting Leases and bookings keep
	// their meaning.
	FreeBoards int32
	// CreateLimit paces creates: at most this many instances begun and not yet finished
	// (CreateRoom, pacing.go); 0 leaves creates unpaced.
	CreateLimit int32
	// TargetKept are the instances whose target is not rebuilt in place: an external
	// target that exists. Kept as the set's last place at the ceiling (leasewait.go), such an
	// instance serves on as it is, outdated or used up, until room allows a surge; only a
	// completed Pod of it is replaced.
	TargetKept map[*Instance]bool
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
	// StartNew is true when an instance of the current spec created from now on gets its Pod
	// as soon as it is configured, before a plan has seen it: under Immediate binding, while
	// the set keeps no standby (which rests without a Pod). With StartPods it is the one rule
	// of Pod starts; the failure backoff still holds them (BackoffUntil).
	StartNew bool
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
	s := &planState{in: in}
	s.classify()
	s.keepLastLeaving()
	s.want()
	s.roll()
	s.create()
	s.scaleDown()
	s.finish()
	s.pace()
	return s.p
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
