package soak

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// The roll floor invariant (InvRollFloor). When the controller retires an instance of an
// outdated spec hash (see rollwatch.go) that was available, the set's available instances
// of either spec that are not being retired must still number at least
//
//	min(level, available just before) - (1 if the set is at its ceiling, else 0)
//
// (its ceiling: maxReplicas, or the allowed of a CapacityBudget governing it, budgetwatch.go)
// where level = max(minAvailableReplicas, minReplicas - leased): the rule of
// exporterset/roll.go, restated from the issue, with the one-at-a-time step at a full
// ceiling. Only roll retirements are judged: a retirement while the set has an excess over
// maxReplicas (the outdated go first then) or a surplus of current-spec instances (a
// scale-down) is counted apart and not judged. The reconciler's scale-down takes
// current-spec instances only, so the surplus counts those: counting the outdated ones too
// would call every surge a surplus. A pass that may not have seen the edit (its annotation,
// to the second, is less than rollSkew after the edit was accepted, and for a template edit
// no status observing the new generation was written before its patch) saw the instance
// as current: it is judged only if the set, counting every idle instance as current, had
// no surplus that a scale-down could retire at once (no cooldown, or its clock running).
//
// It is judged on the checker's view at the moment the annotation is observed (which
// instances are retiring, the excess, the surplus, the ceiling), with the lenient reading
// wherever the watches may lag the controller's pass: an instance counts as available, and
// as leased, if it was so at any moment from a second before the pass (the annotation's
// time) to a second after the observation; the spec is each one in effect since then
// (the lowest level, any excess, surplus or full ceiling); and the retired instance's state
// is the one the controller's patch was made against (its optimistic lock), with its Pod
// showing no failure then nor a second later.

// pendingRetirement is a roll retirement observed, to be judged rollSkew later.
type pendingRetirement struct {
	obs, ann  time.Time // observed; the annotation's time (the controller's pass, to the second)
	set       string
	name      string
	uid       types.UID
	hash      string
	others    []types.UID // the set's other instances neither retiring nor deleting at obs
	names     map[types.UID]string
	specs     []specSample
	occupied  int
	atCeiling bool
	// atBudget: at the budget's allowed and not at maxReplicas (counted when the step
	// dips the availability, budgetDips).
	atBudget bool
}

// observeRetirement decides whether the retirement of o (now n) is one to judge and, if so,
// takes the snapshot it will be judged on.
func (c *Checker) observeRetirement(ctx context.Context, o, n *jumpstarterv1alpha1.Exporter, pods []*corev1.Pod, now time.Time) {
	setName := n.Labels[expool.LabelSet]
	hash := o.Labels[expool.LabelSpecHash]
	var set vtv1alpha1.ExporterSet
	if err := c.cache.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: setName}, &set); err != nil {
		return
	}
	var exporters jumpstarterv1alpha1.ExporterList
	var leases jumpstarterv1alpha1.LeaseList
	if c.cache.List(ctx, &exporters, client.InNamespace(c.ns)) != nil || c.cache.List(ctx, &leases, client.InNamespace(c.ns)) != nil {
		return
	}
	instances := instancesOf(&set, exporters.Items, nil)
	// A CapacityBudget's allowed is the set's ceiling beside maxReplicas (the lowest the
	// budget gave it over the window, the lenient reading).
	allowed, budgeted := c.bw.lowestAllowedSince(setName, now.Add(-2*rollSkew-time.Second))
	mine := false
	for _, in := range instances {
		mine = mine || in.Exporter.UID == n.UID
	}
	r := c.rw
	r.mu.Lock()
	defer r.mu.Unlock()
	since, outdated := r.outdated[setName][hash]
	if !mine || !outdated {
		return // not a retirement of a spec the checker knows outdated
	}
	ann, err := time.Parse(time.RFC3339, n.Annotations[retiringKey])
	if err != nil || ann.After(now) {
		ann = now
	}
	// The pass may have decided on the spec before the edit: then the instance was current
	// in its eyes, and only a scale-down (or an excess, below) retires an available one.
	stale := ann.Before(since.from) && !r.sawGeneration(setName, since.gen, n.ResourceVersion)
	if !availableAs(o, pods) {
		r.skipped["not available ("+whyUnavailable(o, pods)+")"]++ // it serves nobody: it goes at once
		return
	}
	p := pendingRetirement{obs: now, ann: ann, set: setName, name: n.Name, uid: n.UID, hash: hash, names: map[types.UID]string{}, occupied: 1}
	var busy, warm, warmAll int
	for _, in := range instances {
		e := in.Exporter
		if e.UID == n.UID || e.DeletionTimestamp != nil {
			continue
		}
		_, retiring := e.Annotations[retiringKey]
		leased := leaseOf(e) != ""
		if !retiring || leased {
			p.occupied++ // a lease that raced a retirement keeps its instance on the ceiling
		}
		if retiring {
			continue
		}
		p.others = append(p.others, e.UID)
		p.names[e.UID] = e.Name
		_, old := r.outdated[setName][e.Labels[expool.LabelSpecHash]]
		switch {
		case leased:
			busy++
		case e.IsEnabled():
			warmAll++
			if !old {
				warm++
			}
		}
	}
	waiting := 0
	for i := range leases.Items {
		l := &leases.Items[i]
		if !l.Status.Ended && !l.Spec.Release && l.Status.ExporterRef == nil && l.Spec.Selector.MatchLabels["board"] == setName {
			waiting++
		}
	}
	p.specs = append([]specSample(nil), r.specsSince(setName, earlier(ann, now).Add(-rollSkew))...)
	if len(p.specs) == 0 {
		return // the set's spec not seen yet: cannot tell
	}
	if budgeted {
		if int64(p.occupied) > allowed {
			r.skipped["excess over the budget's allowed"]++ // a reclaim, not the roll
			return
		}
		p.atBudget = int64(p.occupied) >= allowed
		p.atCeiling = p.atCeiling || p.atBudget
	}
	atMax := false
	for _, s := range p.specs {
		wanted := max(int(s.minR), busy+int(s.minAvail)+waiting)
		if s.maxRepl > 0 {
			if p.occupied > int(s.maxRepl) {
				r.skipped["excess over maxReplicas"]++
				return
			}
			wanted = min(wanted, int(s.maxRepl))
			p.atCeiling = p.atCeiling || p.occupied >= int(s.maxRepl)
			atMax = atMax || p.occupied >= int(s.maxRepl)
		}
		if budgeted {
			wanted = min(wanted, int(allowed))
		}
		if warm > wanted-busy {
			r.skipped["surplus of current-spec instances"]++
			return
		}
		// To a pass that had not seen the edit, every idle instance (the retired one
		// included) was of the current spec: a surplus of them is retired at once with no
		// cooldown, or once the status's cooldown clock has run.
		if stale && warmAll+1 > wanted-busy && (s.noCooldown || s.surplusClock) {
			r.skipped["pass may predate the edit, in surplus"]++
			return
		}
	}
	p.atBudget = p.atBudget && !atMax
	r.pending = append(r.pending, p)
}

// whyUnavailable says in a word why availableAs refused e, for the summary.
func whyUnavailable(e *jumpstarterv1alpha1.Exporter, pods []*corev1.Pod) string {
	switch {
	case leaseOf(e) != "":
		return "leased"
	case !e.IsEnabled():
		return "disabled"
	case !apimeta.IsStatusConditionTrue(e.Status.Conditions, jumpstarterv1alpha1.ExporterConditionOnline) ||
		!apimeta.IsStatusConditionTrue(e.Status.Conditions, jumpstarterv1alpha1.ExporterConditionRegistered):
		return "not ready"
	case instanceProblem(&expool.Instance{Exporter: e, Pods: pods}) != "":
		return "failing"
	}
	return "other"
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// judgeRetirement judges a roll retirement rollSkew after it was observed; xPods are the
// retired instance's Pods now.
func (c *Checker) judgeRetirement(p pendingRetirement, xPods []*corev1.Pod, now time.Time) {
	r := c.rw
	r.mu.Lock()
	for _, pod := range xPods {
		if pod.DeletionTimestamp == nil && podFailure(pod) != "" {
			r.skipped["failing soon after"]++ // the controller may have seen it failing
			r.mu.Unlock()
			return
		}
	}
	since := earlier(p.ann, p.obs).Add(-rollSkew)
	after, leased := 0, 0
	var words []string
	for _, uid := range p.others {
		w := p.names[uid]
		if at, ok := r.lastAvail[uid]; ok && !at.Before(since) {
			after++
			w += " available"
		}
		if at, ok := r.lastLeased[uid]; ok && !at.Before(since) {
			leased++
			w += " leased"
		}
		words = append(words, w)
	}
	level := -1
	var specs []string
	for _, s := range p.specs {
		l := max(int(s.minAvail), int(s.minR)-leased)
		if level < 0 || l < level {
			level = l
		}
		specs = append(specs, fmt.Sprintf("min %d minAvailable %d max %d", s.minR, s.minAvail, s.maxRepl))
	}
	before := after + 1
	floor := min(level, before)
	if p.atCeiling {
		floor-- // the documented one-at-a-time step at a full ceiling
	}
	r.judged++
	if p.atBudget && after < min(level, before) {
		r.budgetDips++ // allowed only by the budget's allowed as the ceiling
	}
	r.mu.Unlock()
	if after < floor {
		c.Report(InvRollFloor, p.set, "the controller retired %s (outdated spec hash %s, available) at %s (pass of %s): %d available instances not being retired are left, below min(level %d, %d available before)%s; %d occupy the ceiling; leased %d; specs since %s: [%s]; the others: [%s]",
			p.name, p.hash, p.obs.Format("15:04:05.000"), p.ann.Format("15:04:05"), after, level, before,
			map[bool]string{true: " - 1 (at maxReplicas or the budget's allowed)", false: ""}[p.atCeiling], p.occupied, leased,
			since.Format("15:04:05.000"), strings.Join(specs, "; "), strings.Join(words, ", "))
	}
}
