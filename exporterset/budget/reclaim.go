package budget

// reclaimFor reclaims idle instances from donors until one more instance of e fits, and
// tells whether it does. It reclaims nothing when even every donor's reclaimable instances
// would not make it fit (a resource no donor frees, say): donors are not stripped for
// nothing. Each step takes from the donor with the most left to reclaim (ties by name)
// among those that free something e still lacks.
func (b *book) reclaimFor(e *entry) bool {
	if !b.couldFit(e) {
		return false
	}
	for b.fitCount(e.per) < 1 {
		var d *entry
		for _, c := range b.sets {
			if c.reclaimable() <= 0 || !b.helps(c, e) {
				continue
			}
			if d == nil || c.reclaimable() > d.reclaimable() || c.reclaimable() == d.reclaimable() && before(c, d) < 0 {
				d = c
			}
		}
		if d == nil {
			return false // not reached: couldFit said the donors suffice
		}
		b.reclaimOne(d)
	}
	return true
}

// couldFit tells whether one more instance of e would fit if every donor gave up all it
// may.
func (b *book) couldFit(e *entry) bool {
	inst := b.freeInst
	free := append([]int64(nil), b.free...)
	for _, d := range b.sets {
		n := d.reclaimable()
		if n <= 0 {
			continue
		}
		inst += n
		for r := range free {
			free[r] = add(free[r], min(mul(n, d.per[r]), d.held[r]))
		}
	}
	if inst < 1 {
		return false
	}
	for r, p := range e.per {
		if free[r] < p {
			return false
		}
	}
	return true
}

// helps tells whether reclaiming one instance of d frees something e lacks to fit.
func (b *book) helps(d, e *entry) bool {
	if b.freeInst < 1 {
		return true
	}
	for r, p := range e.per {
		if b.free[r] < p && min(d.per[r], d.held[r]) > 0 {
			return true
		}
	}
	return false
}

// reclaimOne retires one idle instance of d: what it frees is one instance and its
// PerInstance, at most what d's live instances still hold.
func (b *book) reclaimOne(d *entry) {
	freed := make([]int64, len(d.per))
	for r, p := range d.per {
		freed[r] = min(p, d.held[r])
		d.held[r] -= freed[r]
		b.free[r] = add(b.free[r], freed[r])
	}
	d.freed = append(d.freed, freed)
	d.alloc--
	d.reclaim++
	b.freeInst++
}

// unreclaim cancels d's last reclaim: it keeps that instance.
func (b *book) unreclaim(d *entry) {
	freed := d.freed[len(d.freed)-1]
	d.freed = d.freed[:len(d.freed)-1]
	for r, f := range freed {
		d.held[r] += f
		b.free[r] = add(b.free[r], -f)
	}
	d.alloc++
	d.reclaim--
	b.freeInst--
}
