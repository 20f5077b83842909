package soak

import (
	"context"
	"math/rand"
	"sort"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// action is one kind of step of the walk. run does it and says what it did; it returns
// skip=true when there was nothing to do it to (no lease to release...), so the walk picks
// again instead of idling.
type action struct {
	name   string
	weight int
	run    func(ctx context.Context) (what string, skip bool, err error)
}

// Walk is a seeded random walk over a world: at every step it picks a weighted action with
// its math/rand source and carries it out. The seed fixes the sequence of choices, not the
// cluster's timing, so a replay takes the same kinds of steps in the same order but may pick
// other objects to apply them to.
type Walk struct {
	rng     *rand.Rand
	w       *world
	actions []action
	total   int

	steps  int
	counts map[string]int

	leaseSeq int
	rev      int
	offline  map[string]bool                           // Exporters set offline by the walk
	broken   map[string]bool                           // classes given invalid parameters
	deleted  map[string]*vtv1alpha1.VirtualTargetClass // classes to re-create, by name
	hooked   map[string]bool                           // sets whose (class's) hooks the walk has yet to take away
	idleAged map[string]bool                           // sets whose max-idle-age the walk has yet to take away
	chained  map[string]bool                           // sets with a back-to-back chain of leases under way
	deferred []deferredStep
	f        *failureState // the simulator faults in force (failure_actions.go)
}

// deferredStep undoes a fault after a while (re-create a class, clear a provisioner failure).
type deferredStep struct {
	at   time.Time
	what string
	run  func(ctx context.Context) error
}

// newWalk builds the walk of w from seed.
func newWalk(seed int64, w *world) *Walk {
	wk := &Walk{
		rng:      rand.New(rand.NewSource(seed)),
		w:        w,
		counts:   map[string]int{},
		offline:  map[string]bool{},
		broken:   map[string]bool{},
		deleted:  map[string]*vtv1alpha1.VirtualTargetClass{},
		hooked:   map[string]bool{},
		idleAged: map[string]bool{},
		chained:  map[string]bool{},
		f:        newFailureState(),
	}
	wk.actions = append(append(append(append(wk.catalogue(), wk.failureCatalogue()...), wk.rollCatalogue()...), wk.externalCatalogue()...), wk.hookCatalogue()...)
	wk.actions = append(wk.actions, wk.budgetCatalogue()...)
	wk.actions = append(wk.actions, wk.onDemandCatalogue()...)
	wk.actions = append(wk.actions, wk.boardCatalogue()...)
	for _, a := range wk.actions {
		wk.total += a.weight
	}
	return wk
}

// pickAction draws an action by weight.
func (wk *Walk) pickAction() action {
	n := wk.rng.Intn(wk.total)
	for _, a := range wk.actions {
		if n < a.weight {
			return a
		}
		n -= a.weight
	}
	return wk.actions[len(wk.actions)-1]
}

// run walks until the deadline, ctx ends or stop is closed (the checker's first violation).
func (wk *Walk) run(ctx context.Context, deadline time.Time, stop <-chan struct{}) {
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			wk.w.history.Record(KindNote, "walk: stopped by a violation after %d steps", wk.steps)
			return
		default:
		}
		wk.runDeferred(ctx, false)
		for tries := 0; tries < 5; tries++ {
			a := wk.pickAction()
			what, skip, err := a.run(ctx)
			if skip {
				continue
			}
			wk.steps++
			wk.counts[a.name]++
			switch {
			case err != nil && ctx.Err() == nil:
				wk.w.history.Record(KindNote, "%s failed: %v", a.name, err)
			case err == nil:
				wk.w.history.Record(KindAction, "%s: %s", a.name, what)
			}
			break
		}
		pause := time.Duration(100+wk.rng.Intn(400)) * time.Millisecond
		select {
		case <-ctx.Done():
			return
		case <-stop:
		case <-time.After(pause):
		}
	}
}

// runDeferred runs the deferred steps that are due, or all of them.
func (wk *Walk) runDeferred(ctx context.Context, all bool) {
	now := time.Now()
	var rest []deferredStep
	for _, d := range wk.deferred {
		if !all && now.Before(d.at) {
			rest = append(rest, d)
			continue
		}
		if err := d.run(ctx); err != nil {
			wk.w.history.Record(KindNote, "%s failed, will retry: %v", d.what, err)
			d.at = now.Add(500 * time.Millisecond)
			rest = append(rest, d)
			continue
		}
		wk.w.history.Record(KindAction, "%s", d.what)
	}
	wk.deferred = rest
}

func (wk *Walk) later(d time.Duration, what string, run func(ctx context.Context) error) {
	wk.deferred = append(wk.deferred, deferredStep{at: time.Now().Add(d), what: what, run: run})
}

// quiesce ends every fault the walk introduced, so that the pool can converge: no more API
// errors or provisioner failures, classes back, no lease hooks left (the deferred steps take
// them away), exporters back online, no image, crash,
// node, registration or slow-start fault left in the simulator, the controller (and the
// plugin, restarted on its next call) running. Leases and hand-disabled Exporters stay:
// the final invariants account for them.
func (wk *Walk) quiesce(ctx context.Context) error {
	w := wk.w
	w.faults.SetRates(0, 0)
	w.history.Record(KindFault, "quiesce: API error injection off")
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; {
		wk.runDeferred(ctx, true)
		if len(wk.deferred) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, m := range provisionerMethods {
		w.fake.Fail(m, nil)
	}
	if e := wk.clearFailures(ctx); e != nil {
		err = e
	}
	names := make([]string, 0, len(wk.offline))
	for name := range wk.offline {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if e := w.sim.SetOnline(ctx, w.ns, name); e != nil {
			err = e
		}
		delete(wk.offline, name)
	}
	if !w.ctrl.running() {
		if e := w.ctrl.start(ctx); e != nil {
			err = e
		}
	}
	w.history.Record(KindNote, "quiesce: faults off (simulator failures included), classes restored, %d exporters back online, controller running", len(names))
	return err
}
