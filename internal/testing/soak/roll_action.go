package soak

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// Rolls started on purpose. The edit-set and edit-class actions already change what
// instances are built from now and then; start-roll does it on purpose with a harmless
// change (a template annotation, or class parameters the provisioner accepts), so that
// rolls happen often, on full and on partly leased pools, under every other disruption of
// the walk. Every such edit is told to the checker (Checker.RollStarted), which then knows
// which spec hashes are outdated and judges the controller's roll retirements against the
// availability floor (rollfloor.go).

// Who started a roll, as the summary counts them.
const (
	RollByAction   = "start-roll"
	RollByTemplate = "edit-set-template"
	RollByClass    = "edit-class-parameters"
)

// rollCatalogue lists the roll action and its weight: about one step in eighteen.
func (wk *Walk) rollCatalogue() []action {
	return []action{{"start-roll", 4, wk.startRoll}}
}

// startRoll changes a set's template annotation (most of the time) or its class's
// parameters to a new revision: both change the spec hash and nothing else, so the set
// rolls every idle instance to an equivalent one. It picks a set that has a warm pool to
// keep (Immediate binding, an available instance): there the floor is at stake. The edit
// actions roll the others.
func (wk *Walk) startRoll(ctx context.Context) (string, bool, error) {
	p, err := wk.pickServingPool(ctx)
	if p == nil || err != nil {
		return "", err == nil, err
	}
	byClass := wk.rng.Intn(6) == 0 && wk.deleted[p.class] == nil && !wk.broken[p.class]
	wk.rev++
	rev := wk.rev
	start := time.Now()
	if byClass {
		err := wk.updateClass(ctx, p.class, func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.Parameters = classParameters(p, rev) })
		if apierrors.IsNotFound(err) {
			return "", true, nil
		}
		if err == nil {
			wk.rolled(p.set, RollByAction, start, 0)
		}
		return fmt.Sprintf("%s: class %s parameters revision %d", p.set, p.class, rev), false, err
	}
	err = wk.updateSet(ctx, p.set, func(s *vtv1alpha1.ExporterSet) {
		if s.Spec.Template.Metadata.Annotations == nil {
			s.Spec.Template.Metadata.Annotations = map[string]string{}
		}
		s.Spec.Template.Metadata.Annotations["soak/roll"] = fmt.Sprint(rev)
	})
	if err == nil {
		wk.rolledSet(ctx, p.set, RollByAction, start)
	}
	return fmt.Sprintf("%s: template annotation soak/roll=%d", p.set, rev), false, err
}

// rolledSet is rolled for a template edit: it reads the set's generation, which a later
// edit can only have raised (the checker then waits for a later status: it errs on the
// side of judging less).
func (wk *Walk) rolledSet(ctx context.Context, set, via string, start time.Time) {
	var s vtv1alpha1.ExporterSet
	var gen int64
	if err := wk.w.c.Get(ctx, client.ObjectKey{Namespace: wk.w.ns, Name: set}, &s); err == nil {
		gen = s.Generation
	}
	wk.rolled(set, via, start, gen)
}

// pickServingPool draws a pool whose set reports an available instance and whose class
// binds Immediately; nil when there is none.
func (wk *Walk) pickServingPool(ctx context.Context) (*pool, error) {
	var names []string
	for _, p := range wk.w.pools {
		var s vtv1alpha1.ExporterSet
		var c vtv1alpha1.VirtualTargetClass
		if err := wk.w.c.Get(ctx, client.ObjectKey{Namespace: wk.w.ns, Name: p.set}, &s); err != nil {
			return nil, err
		}
		if err := wk.w.c.Get(ctx, client.ObjectKey{Namespace: wk.w.ns, Name: p.class}, &c); err != nil {
			if apierrors.IsNotFound(err) {
				continue // deleted by the walk for a while
			}
			return nil, err
		}
		if s.Status.AvailableReplicas > 0 && c.Spec.BindingMode != vtv1alpha1.BindingWaitForFirstConsumer {
			names = append(names, p.set)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	return wk.w.poolOf(wk.pickName(names)), nil
}

// rolled tells the checker that an edit of set's spec hash, sent at start, was accepted:
// the hashes seen before start are outdated from now on. gen is the set's generation
// after a template edit (0 for a class edit): a status observing it shows the controller
// has seen the edit. The history records which set started rolling when, and from which
// hashes.
//
// The walk's revisions only grow (wk.rev), so a set's spec never returns to an earlier
// hash: the checker relies on it.
func (wk *Walk) rolled(set, via string, start time.Time, gen int64) {
	old := wk.w.checker.RollStarted(set, via, start, time.Now(), gen)
	wk.w.history.Record(KindNote, "roll: set %s starts rolling (%s, edit sent %s): outdated spec hashes %s",
		set, via, start.Format("15:04:05.000"), fmtHashes(old))
}
