package soak

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The walk's steps for the sets whose users the Jumpstarter core refuses when they hold no
// enabled Exporter (issue 38; world.go's shapes): the on-demand set (no floor, no warm
// buffer) and the set at a ceiling of 1 (one instance, recycled after each lease). Their
// users come as a lab's do: one after the other, each the moment the previous one is done,
// which is when a recycled instance at the ceiling is between its lease and its
// replacement. The refusal invariant (refusewatch.go) judges every refused lease; a lease for
// a board no set serves is no pool's user, refused and only counted.

// b2bMaxLeases bounds a back-to-back chain.
const b2bMaxLeases = 4

// onDemandCatalogue lists the steps.
func (wk *Walk) onDemandCatalogue() []action {
	return []action{
		{"lease-back-to-back", 4, wk.leaseBackToBack},
		{"lease-no-pool", 1, wk.leaseNoPool},
	}
}

// leaseBackToBack starts a chain of 2 to b2bMaxLeases leases for a set of a kept shape: each
// is held for 1-4 s (assigned or still waiting), then released and the next one created in
// the same step, back to back. One chain per set at a time.
func (wk *Walk) leaseBackToBack(ctx context.Context) (string, bool, error) {
	var names []string
	for _, p := range wk.w.pools {
		if p.shape != "" && !wk.chained[p.set] {
			names = append(names, p.set)
		}
	}
	if len(names) == 0 {
		return "", true, nil
	}
	set := wk.pickName(names)
	holds := make([]time.Duration, 2+wk.rng.Intn(b2bMaxLeases-1))
	for i := range holds {
		holds[i] = time.Duration(1000+wk.rng.Intn(3000)) * time.Millisecond
	}
	if full, err := wk.leasesFull(ctx, set); err != nil || full {
		return "", full, err
	}
	first, err := wk.takeChained(ctx, set)
	if err != nil {
		return "", false, err
	}
	wk.chained[set] = true
	wk.chainStep(set, first, holds, 1)
	parts := make([]string, len(holds))
	for i, h := range holds {
		parts[i] = h.String()
	}
	return fmt.Sprintf("%s for board=%s, the first of %d back to back, held %s", first, set, len(holds), strings.Join(parts, ", ")), false, nil
}

// takeChained creates the next lease of a chain for set.
func (wk *Walk) takeChained(ctx context.Context, set string) (string, error) {
	wk.leaseSeq++
	name := fmt.Sprintf("lease-%04d-%s-b2b", wk.leaseSeq, set)
	_, err := wk.w.sim.TakeLease(ctx, wk.w.ns, name, map[string]string{"board": set}, 0)
	return name, err
}

// chainStep releases held after holds[next-1] and, in the same step, takes lease number next
// of the chain (none after the last).
func (wk *Walk) chainStep(set, held string, holds []time.Duration, next int) {
	what := fmt.Sprintf("back to back: release %s", held)
	if next < len(holds) {
		what += " and take the next lease for board=" + set + " at once"
	}
	wk.later(holds[next-1], what, func(ctx context.Context) error {
		// A lease already gone (garbage collected with its Exporter) is released.
		if err := wk.w.sim.ReleaseLease(ctx, wk.w.ns, held); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if next == len(holds) {
			delete(wk.chained, set)
			return nil
		}
		name, err := wk.takeChained(ctx, set)
		if err != nil {
			// The chain ends here: the release is done, and a retry would release again.
			wk.w.history.Record(KindNote, "lease-back-to-back: the next lease for board=%s: %v", set, err)
			delete(wk.chained, set)
			return nil
		}
		wk.w.history.Record(KindAction, "lease-back-to-back: %s for board=%s, right after %s", name, set, held)
		wk.chainStep(set, name, holds, next+1)
		return nil
	})
}

// leaseNoPool takes a lease for a board no set serves: the core refuses it at once, and the
// refusal invariant must leave it alone.
func (wk *Walk) leaseNoPool(ctx context.Context) (string, bool, error) {
	wk.leaseSeq++
	name := fmt.Sprintf("lease-%04d-nopool", wk.leaseSeq)
	if _, err := wk.w.sim.TakeLease(ctx, wk.w.ns, name, map[string]string{"board": "nopool"}, 0); err != nil {
		return "", false, err
	}
	return name + " for board=nopool (no set serves it)", false, nil
}
