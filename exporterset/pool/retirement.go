package pool

// RetirementReason is why an instance leaves the pool: the reason label of
// exporterset_retirements_total.
type RetirementReason string

// The reasons an instance is retired or removed.
const (
	// RetiredReleased: its exporter exited after its lease (ExitAndReplace) and it is removed.
	RetiredReleased RetirementReason = "released"
	// RetiredRolled: it was built from an older spec, or no longer matches the selector.
	RetiredRolled RetirementReason = "rolled"
	// RetiredScaledDown: the pool had a surplus or exceeded maxReplicas.
	RetiredScaledDown RetirementReason = "scaled-down"
	// RetiredQuarantined: it failed a lease hook and was quarantined.
	RetiredQuarantined RetirementReason = "quarantined"
	// RetiredMaxUse: it served the set's max-use-count leases (InPlaceReuse).
	RetiredMaxUse RetirementReason = "max-use"
	// RetiredIdleAge: it was idle for longer than the set's max-idle-age.
	RetiredIdleAge RetirementReason = "idle-age"
	// RetiredReclaimed: it was idle and a CapacityBudget took its place for another set's
	// waiting Leases (its set's budget ceiling fell below what it held).
	RetiredReclaimed RetirementReason = "reclaimed"
	// RetiredFailed: it failed (a crash loop, a lost node, its exporter exited without a
	// lease) and is replaced.
	RetiredFailed RetirementReason = "failed"
)

// RetirementReasons returns every reason, in the order the docs list them (a new slice: the
// list is not a variable anyone can change).
func RetirementReasons() []RetirementReason {
	return []RetirementReason{RetiredReleased, RetiredRolled, RetiredScaledDown, RetiredQuarantined, RetiredMaxUse, RetiredIdleAge, RetiredReclaimed, RetiredFailed}
}

// RetirementReason is why the plan retires in (one of Retire).
func (p *Plan) RetirementReason(in *Instance) RetirementReason {
	has := func(list []*Instance) bool {
		for _, i := range list {
			if i == in {
				return true
			}
		}
		return false
	}
	switch {
	case has(p.Replace):
		return RetiredFailed
	case has(p.UsedUp):
		return RetiredMaxUse
	case p.IdleAged != nil && p.IdleAged == in:
		return RetiredIdleAge
	case has(p.Rolled):
		return RetiredRolled
	case has(p.Reclaimed):
		return RetiredReclaimed
	}
	return RetiredScaledDown
}
