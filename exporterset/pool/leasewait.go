package pool

// Leases wait; they are never refused while the set has room. Upstream's Jumpstarter core
// ends a Lease at once (Unsatisfiable) when no Exporter matches its selector (NoAccess) or
// every match is disabled (AllDisabled); it keeps the Lease Pending only while an enabled
// match exists, offline or busy. So a set whose ceiling admits an instance
// (KeepsLeasesWaiting) keeps at least one enabled Exporter, not being deleted, at every
// moment:
//   - with nothing wanted (no lease, no floor, no buffer, no booking), one instance rests
//     without a Pod (Plan.Standby); its Pod starts when a Lease waits for it;
//   - the last enabled Exporter is never disabled or deleted while no other enabled one
//     exists. Where the ceiling has room beside everything present, it stays as it is for
//     this pass (Plan.Bridge) while its successor is created, and goes in a later pass; at the
//     ceiling it is renewed in place: the Exporter, its name and its credential stay, its
//     Pod is replaced by a fresh one (RestartPods, RestPods), and where it is outdated or
//     used up it is first brought to the current spec (Plan.Renew). Under ExitAndReplace a
//     target still serves one lease only: each lease gets a fresh Pod.

// KeepsLeasesWaiting reports whether the set owes its Leases an enabled Exporter: its
// ceiling (maxReplicas, 0 being unbounded, or a CapacityBudget's) admits an instance.
func (in PlanInput) KeepsLeasesWaiting() bool {
	c, bounded := in.ceiling()
	return !bounded || c > 0
}

// enabledStays reports whether an Exporter stays enabled through the plan as it stands: not
// being deleted, enabled, neither retired nor removed by it, or created but not yet seen.
// Creates of this pass do not count: they run beside its removals. It stops at the first
// found (on every pass of a large pool, the first instance normally is one).
func enabledStays(in PlanInput, p *Plan) bool {
	if in.Expected > 0 {
		return true
	}
	for _, i := range in.Instances {
		if i.Leased() && i.Enabled() && !i.Deleting() {
			return true // the plan never retires or removes a leased instance
		}
	}
	if len(p.Retire)+len(p.Remove) == 0 {
		for _, i := range in.Instances {
			if i.Enabled() && !i.Deleting() {
				return true
			}
		}
		return false
	}
	leaving := make(map[*Instance]bool, len(p.Retire)+len(p.Remove))
	for _, l := range p.Retire {
		leaving[l] = true
	}
	for _, l := range p.Remove {
		leaving[l] = true
	}
	for _, i := range in.Instances {
		if i.Enabled() && !i.Deleting() && !leaving[i] {
			return true
		}
	}
	return false
}

// heldFill reports whether the instances a person disabled, which the plan holds in their
// places (plan_steps.go), fill the ceiling with the set's strays: the last enabled Exporter
// then has no place to stay in. The ceiling holds; Leases are refused until a person enables
// one, and LeasesWait says so (NoEnabledExporter). Keeping it anyway left a set at a ceiling
// of 1 with two instances for as long as the person's disable lasted (a soak sweep found it).
func heldFill(in PlanInput) bool {
	c, bounded := in.ceiling()
	if !bounded {
		return false
	}
	held := in.Others
	for _, i := range in.Instances {
		if !i.Deleting() && i.DisabledByPerson() {
			held++
		}
	}
	return held >= c
}

// roomBeside reports whether the ceiling admits one more Exporter beside every one that
// exists (the instances, strays and those expected).
func roomBeside(in PlanInput) bool {
	c, bounded := in.ceiling()
	return !bounded || int32(len(in.Instances))+in.Others+in.Expected < c
}

// keepLastLeaving is the rule's first step, before creates are counted: when every enabled
// Exporter is leaving because its exporter exited after a lease or it fails beyond repair,
// one of them stays. With room it is held for this pass (its successor is created now); at
// the ceiling its Pod is replaced and it is returned, to be counted warm.
func keepLastLeaving(in PlanInput, p *Plan) (renewed *Instance) {
	if !in.KeepsLeasesWaiting() || enabledStays(in, p) || heldFill(in) {
		return nil
	}
	var cand *Instance
	for _, i := range p.Remove {
		if i.Enabled() && !i.Retiring() && !i.Quarantined() { // exited after its lease
			cand = i
			break
		}
	}
	if cand == nil && len(p.Replace) > 0 {
		cand = p.Replace[0]
	}
	if cand == nil || cand.Foreign() && !roomBeside(in) {
		return nil // upstream's instance gets no Pod of ours: it is replaced as before (adopt.go)
	}
	one := []*Instance{cand}
	p.Remove, p.Retire, p.Replace = without(p.Remove, one), without(p.Retire, one), without(p.Replace, one)
	if roomBeside(in) {
		p.Bridge = cand
		return nil
	}
	p.RestartPods = append(p.RestartPods, cand) // its terminal or broken Pod goes; a fresh one follows
	p.Renewed = append(p.Renewed, cand)
	return cand
}

// keepLastRetired is the rule's second step, after rolls, retirement by use and idle age
// and scale-down have chosen: if they would disable every enabled Exporter, one of them
// stays (the one the retirement order keeps longest). With room it is held for this pass
// (a create of this pass or the next takes its place first); at the ceiling it is renewed
// in place: brought to the current spec (Renew) and its Pod replaced. The renewed instance
// is returned, to be counted warm: one at rest gets its Pod in this pass where a Pod is
// wanted, whether or not its relabelling lands, so the last place never waits for room that
// cannot come. An instance whose target is kept (an external target that exists, renew.go)
// is not renewed: it serves on as it is.
func keepLastRetired(in PlanInput, p *Plan) (renewed *Instance) {
	if !in.KeepsLeasesWaiting() || enabledStays(in, p) || heldFill(in) {
		return nil
	}
	var cand *Instance
	for k := len(p.Retire) - 1; k >= 0; k-- {
		if i := p.Retire[k]; i.Enabled() && !i.Leased() {
			cand = i
			break
		}
	}
	if cand == nil || cand.Foreign() && !roomBeside(in) {
		return nil // upstream's instance is never renewed: it is replaced as before (adopt.go)
	}
	one := []*Instance{cand}
	p.Retire, p.Rolled, p.UsedUp = without(p.Retire, one), without(p.Rolled, one), without(p.UsedUp, one)
	p.Reclaimed, p.Replace = without(p.Reclaimed, one), without(p.Replace, one)
	if p.IdleAged == cand {
		p.IdleAged = nil
	}
	if roomBeside(in) {
		p.Bridge = cand
		return nil
	}
	if in.TargetKept[cand] {
		// Renewing it in place would rest its Pod on every pass without ever relabelling it:
		// the target stays, and so does the Pod serving on it.
		if cand.ActivePod() == nil && cand.HasPod() {
			p.Renewed = append(p.Renewed, cand)
			p.RestartPods = append(p.RestartPods, cand)
		}
		return cand
	}
	if cand.SpecHash() != in.SpecHash || usedUp(cand, in.MaxUseCount) || idleAged(in, cand) {
		p.Renew = append(p.Renew, cand)
	}
	p.Renewed = append(p.Renewed, cand)
	if cand.ActivePod() != nil {
		p.RestPods = append(p.RestPods, cand)
	} else if cand.HasPod() {
		p.RestartPods = append(p.RestartPods, cand)
	}
	return cand
}

// idleAged reports whether i is due for replacement by its idle age.
func idleAged(in PlanInput, i *Instance) bool {
	at, ok := IdleDeadline(i, in.MaxIdleAge)
	return ok && !in.Now.Before(at)
}

// runningPods are the instances of warm that keep a running Pod: once the cooldown allows
// it, the standby rests without one.
func runningPods(warm []*Instance) []*Instance {
	var out []*Instance
	for _, i := range warm {
		if i.ActivePod() != nil {
			out = append(out, i)
		}
	}
	return out
}

// withoutPodded are the instances of list that have no Pod.
func withoutPodded(list []*Instance) []*Instance {
	var out []*Instance
	for _, i := range list {
		if !i.HasPod() {
			out = append(out, i)
		}
	}
	return out
}
