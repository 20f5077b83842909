package pool

// rollOutdated decides which idle instances of an older spec to retire this pass. A change
// of template, parameters, images or class must not empty the warm pool, so the roll works
// by surge: instances of the new spec are created first (within the ceiling, by the
// caller), and an outdated instance goes only when the pool can spare it:
//   - an outdated instance that is not available (booting, failing) serves nobody: it goes
//     at once;
//   - available outdated instances go only while the available instances of both specs
//     stay at or above the level: min(what is available now, the warm buffer or the floor's
//     unleased share, whichever is higher). As new instances become available, old ones
//     step down;
//   - at the ceiling (no room for a new instance) one outdated instance is retired to make
//     room, one at a time: only while no retirement is in flight, the set is not backing
//     off, and every new-spec instance is available. Its replacement is created once it is
//     gone (after retireGrace), never beside it: the surge stays within maxReplicas. A new spec that fails therefore stops
//     the roll with the old pool serving (at most one instance short at a full ceiling).
//
// need is how many new-spec instances the pool lacks, room how many the ceiling still
// admits, busy the leased instances. It returns the instances to retire, in retirement order.
func rollOutdated(in PlanInput, old, fresh []*Instance, need, room, busy int32, holding bool) []*Instance {
	if len(old) == 0 {
		return nil
	}
	retireOrder(old, in.Problems) // not ready or failing first
	var out, spare []*Instance
	var availOld, availNew int32
	for _, i := range old {
		if !i.Available(in.Problems) {
			out = append(out, i)
			continue
		}
		availOld++
		spare = append(spare, i)
	}
	settled := true // every new-spec instance is available
	for _, i := range fresh {
		if i.Available(in.Problems) {
			availNew++
		} else {
			settled = false
		}
	}
	level := min(max(in.buffer(), in.MinReplicas-busy), availOld+availNew)
	n := min(availOld, max(0, availOld+availNew-level))
	out = append(out, spare[:n]...)
	spare = spare[n:]
	if need > 0 && room+int32(len(out)) <= 0 && len(spare) > 0 && !holding && settled {
		out = append(out, spare[0])
	}
	return out
}

// Outdated reports whether any of instances was built from a spec other than hash: the set
// is rolling.
func Outdated(instances []*Instance, hash string) bool {
	for _, i := range instances {
		if i.SpecHash() != hash {
			return true
		}
	}
	return false
}
