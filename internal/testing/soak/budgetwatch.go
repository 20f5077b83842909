package soak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// budgetLimitWindow is how long a CapacityBudget's earlier, higher limit still counts: a
// controller may create an Exporter it reserved for under that limit until half the
// reservation grace (20 s) has passed, and the checker's watches lag.
const budgetLimitWindow = 20 * time.Second

// budgetWatch counts, from the checker's watches, the Exporters of the sets each
// CapacityBudget governs, as ceilingWatch counts a set's: an Exporter counts from its ADDED
// event until its DELETED one, whatever its state. Its set is its set label, else its
// controlling set (as the controller counts it), and a set is governed when the budget's
// selector matches the set's labels as the set's watch last showed them.
//
// The invariant (InvBudgetExceeded): an Exporter joining a governed set never takes the
// count over the highest limit in effect from budgetLimitWindow before the join until the
// judgement (ceilingJudgeDelay later). A limit lowered under the Exporters that exist is
// therefore no violation by itself; a create beyond it once the window has passed is.
//
// It also counts what the budget did, from its status: the times it became Exhausted (with
// a set's Leases waiting: reason DemandWaiting), the times it asked a set without demand to
// give up idle instances (its allowed below its instances while another set's Leases
// wait), and the retirements of governed instances while such an ask stood.
type budgetWatch struct {
	mu        sync.Mutex
	setLabels map[string]labels.Set      // set name -> its labels
	budgets   map[string]*watchedBudget  // budget name
	members   map[types.UID]budgetMember // Exporters of any set, by UID
	pending   []budgetGrowth
	// allowed is each governed set's allowed as the budgets' statuses said it over time
	// (the lowest over the budgets), for the roll floor: a set at its budget's allowed is at
	// its ceiling (rollfloor.go).
	allowed map[string][]maxChange
	// ceilings is each governed set's ceiling as its controller derives it from a budget's
	// status (exporterset's ceilingOf: allowed, plus one spare place when the set has all it
	// wants and the budget is not full), for the refusal invariant: at 0 the set owes its
	// Leases nothing (LeasesWait False, NoRoom).
	ceilings map[string][]maxChange

	exhausted, demandExhausted, reclaimAsks, reclaimRetired int
}

type watchedBudget struct {
	sel    labels.Selector
	limits []maxChange
	// exhausted and asking are the status last seen: Exhausted=True, and the sets asked
	// to give up instances for another set's waiting Leases.
	exhausted bool
	asking    map[string]bool
	// full is the status last seen with used.instances at the limit; fullAt when a status
	// was last seen so (for the refusal invariant: a full budget leaves a set no room).
	full   bool
	fullAt time.Time
}

type budgetMember struct{ name, set string }

// budgetGrowth is an Exporter joining a governed set beyond the limit as last seen.
type budgetGrowth struct {
	at      time.Time
	budget  string
	joined  string
	present []string
}

func newBudgetWatch() *budgetWatch {
	return &budgetWatch{setLabels: map[string]labels.Set{}, budgets: map[string]*watchedBudget{}, members: map[types.UID]budgetMember{}, allowed: map[string][]maxChange{}, ceilings: map[string][]maxChange{}}
}

// watchBudgets registers the budget watch's handlers on the checker's informers.
func (c *Checker) watchBudgets(ctx context.Context) error {
	bw := c.bw
	for _, h := range []struct {
		obj client.Object
		fn  toolscache.ResourceEventHandlerFuncs
	}{
		{&vtv1alpha1.ExporterSet{}, toolscache.ResourceEventHandlerFuncs{AddFunc: bw.setEvent, UpdateFunc: func(_, n any) { bw.setEvent(n) }, DeleteFunc: bw.setGone}},
		{&vtv1alpha1.CapacityBudget{}, toolscache.ResourceEventHandlerFuncs{AddFunc: bw.budgetEvent, UpdateFunc: func(_, n any) { bw.budgetEvent(n) }, DeleteFunc: bw.budgetGone}},
		{&jumpstarterv1alpha1.Exporter{}, toolscache.ResourceEventHandlerFuncs{AddFunc: func(n any) { bw.exporterEvent(nil, n) }, UpdateFunc: bw.exporterEvent, DeleteFunc: bw.exporterGone}},
	} {
		inf, err := c.cache.GetInformer(ctx, h.obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(h.fn); err != nil {
			return err
		}
	}
	return nil
}

func (w *budgetWatch) setEvent(obj any) {
	if s, ok := obj.(*vtv1alpha1.ExporterSet); ok {
		w.mu.Lock()
		w.setLabels[s.Name] = labels.Set(s.Labels)
		w.mu.Unlock()
	}
}

func (w *budgetWatch) setGone(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if s, ok := obj.(*vtv1alpha1.ExporterSet); ok {
		w.mu.Lock()
		delete(w.setLabels, s.Name)
		w.mu.Unlock()
	}
}

// budgetEvent records a budget's selector, its limit if it changed, and what its status
// says (the counts of exhaustions and reclaim asks).
func (w *budgetWatch) budgetEvent(obj any) {
	b, ok := obj.(*vtv1alpha1.CapacityBudget)
	if !ok {
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(&b.Spec.Selector)
	if err != nil || sel.Empty() {
		sel = labels.Nothing()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wb := w.budgets[b.Name]
	if wb == nil {
		wb = &watchedBudget{asking: map[string]bool{}}
		w.budgets[b.Name] = wb
	}
	wb.sel = sel
	limit := int64(b.Spec.Limits.Instances)
	if n := len(wb.limits); n == 0 || wb.limits[n-1].max != limit {
		wb.limits = append(wb.limits, maxChange{at: time.Now(), max: limit})
	}
	ex := apimeta.FindStatusCondition(b.Status.Conditions, vtv1alpha1.ConditionBudgetExhausted)
	isEx := ex != nil && ex.Status == metav1.ConditionTrue
	if isEx && !wb.exhausted {
		w.exhausted++
		if ex.Reason == "DemandWaiting" {
			w.demandExhausted++
		}
	}
	wb.exhausted = isEx
	if wb.full = b.Status.Used.Instances >= b.Spec.Limits.Instances; wb.full {
		wb.fullAt = time.Now()
	}
	waiting := false
	for _, s := range b.Status.Sets {
		waiting = waiting || s.Waiting > 0
	}
	asking := map[string]bool{}
	for _, s := range b.Status.Sets {
		if waiting && s.Waiting == 0 && s.Allowed < s.Instances {
			asking[s.Name] = true
			if !wb.asking[s.Name] {
				w.reclaimAsks++
			}
		}
	}
	wb.asking = asking
	now := time.Now()
	for _, s := range b.Status.Sets {
		w.allowed[s.Name] = appendChange(w.allowed[s.Name], now, int64(s.Allowed))
		c := int64(s.Allowed)
		if s.Allowed >= s.Wanted && b.Status.Used.Instances < b.Spec.Limits.Instances {
			c++
		}
		w.ceilings[s.Name] = appendChange(w.ceilings[s.Name], now, c)
	}
}

// historyOf formats set's values in h (allowed or ceilings) over the last minute, "none" for
// a set no budget allocated for.
func (w *budgetWatch) historyOf(h map[string][]maxChange, set string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range h[set] {
		out = append(out, fmt.Sprintf("%d at %s", c.max, c.at.Format("15:04:05.000")))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// appendChange records v at now when it differs from the last value, keeping a minute.
func appendChange(h []maxChange, now time.Time, v int64) []maxChange {
	if n := len(h); n == 0 || h[n-1].max != v {
		h = append(h, maxChange{at: now, max: v})
	}
	for len(h) > 1 && now.Sub(h[1].at) > time.Minute {
		h = h[1:]
	}
	return h
}

// lowestAllowedSince is the lowest allowed a budget's status gave set from since on (the
// value in effect at since and every later one); ok=false when no budget allocated for it.
func (w *budgetWatch) lowestAllowedSince(set string, since time.Time) (lowest int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return lowestSince(w.allowed[set], since)
}

func (w *budgetWatch) budgetGone(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if b, ok := obj.(*vtv1alpha1.CapacityBudget); ok {
		w.mu.Lock()
		delete(w.budgets, b.Name)
		w.mu.Unlock()
	}
}

// budgetSetOf is the set an Exporter counts for: its set label, else its controlling set.
func budgetSetOf(e *jumpstarterv1alpha1.Exporter) string {
	if s := e.Labels[expool.LabelSet]; s != "" {
		return s
	}
	return controllerName(e)
}

// exporterEvent counts an Exporter in; one joining a governed set beyond the limit is
// remembered for judgement. A retirement while its set is asked to give up instances is
// counted as a reclaim.
func (w *budgetWatch) exporterEvent(oldObj, obj any) {
	e, ok := obj.(*jumpstarterv1alpha1.Exporter)
	if !ok {
		return
	}
	set := budgetSetOf(e)
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if o, ok := oldObj.(*jumpstarterv1alpha1.Exporter); ok {
		_, was := o.Annotations[retiringKey]
		_, is := e.Annotations[retiringKey]
		if !was && is {
			for _, wb := range w.budgets {
				if wb.asking[set] {
					w.reclaimRetired++
					break
				}
			}
		}
	}
	if m, in := w.members[e.UID]; in && m.set == set {
		return
	}
	if set == "" {
		delete(w.members, e.UID)
		return
	}
	w.members[e.UID] = budgetMember{name: e.Name, set: set}
	names := make([]string, 0, len(w.budgets))
	for name := range w.budgets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		wb := w.budgets[name]
		if !wb.sel.Matches(w.setLabels[set]) || len(wb.limits) == 0 {
			continue
		}
		present := w.governedLocked(wb)
		if int64(len(present)) > wb.limits[len(wb.limits)-1].max {
			w.pending = append(w.pending, budgetGrowth{at: now, budget: name, joined: e.Name, present: present})
		}
	}
}

// governedLocked names the counted Exporters of the sets wb governs, as set/name.
func (w *budgetWatch) governedLocked(wb *watchedBudget) []string {
	var out []string
	for _, m := range w.members {
		if wb.sel.Matches(w.setLabels[m.set]) {
			out = append(out, m.set+"/"+m.name)
		}
	}
	sort.Strings(out)
	return out
}

func (w *budgetWatch) exporterGone(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if e, ok := obj.(*jumpstarterv1alpha1.Exporter); ok {
		w.mu.Lock()
		delete(w.members, e.UID)
		w.mu.Unlock()
	}
}

// judge returns the violations among the growths seen at least ceilingJudgeDelay ago.
func (w *budgetWatch) judge(now time.Time) []Violation {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Violation
	rest := w.pending[:0]
	for _, g := range w.pending {
		if now.Sub(g.at) < ceilingJudgeDelay {
			rest = append(rest, g)
			continue
		}
		wb := w.budgets[g.budget]
		if wb == nil {
			continue // deleted meanwhile: it limits nothing
		}
		allowed, known := highestMaxSince(wb.limits, g.at.Add(-budgetLimitWindow))
		if !known || int64(len(g.present)) <= allowed {
			continue
		}
		out = append(out, Violation{At: g.at, Invariant: InvBudgetExceeded, Object: g.budget,
			Detail: fmt.Sprintf("at %s %s joined a set of CapacityBudget %s as its Exporter number %d, over limits.instances %d (the highest from %s before): %s existed at once (counted from the watch, ADDED until DELETED)",
				g.at.Format("15:04:05.000"), g.joined, g.budget, len(g.present), allowed, budgetLimitWindow, strings.Join(g.present, ", "))})
	}
	w.pending = rest
	for _, wb := range w.budgets {
		for len(wb.limits) > 1 && wb.limits[1].at.Before(now.Add(-budgetLimitWindow-2*ceilingJudgeDelay)) {
			wb.limits = wb.limits[1:]
		}
	}
	return out
}

// stats are the budget's doings counted from its status and the Exporters' watch.
func (w *budgetWatch) stats() BudgetStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return BudgetStats{Exhausted: w.exhausted, DemandExhausted: w.demandExhausted, ReclaimAsks: w.reclaimAsks, ReclaimRetired: w.reclaimRetired}
}

// BudgetStats count what the soak's CapacityBudget did during a run.
type BudgetStats struct {
	// Exhausted counts the times it became Exhausted, DemandExhausted those with a set's
	// Leases waiting (reason DemandWaiting).
	Exhausted, DemandExhausted int
	// ReclaimAsks counts the times it asked a set without demand to give up idle instances
	// for another set's waiting Leases; ReclaimRetired the governed instances retired while
	// such an ask stood.
	ReclaimAsks, ReclaimRetired int
	// StarveJudged counts the evaluations of the starvation invariant that found a Lease
	// waiting while the budget was full and another set held idle instances above its floor.
	StarveJudged int
	// StarveNear counts, per evaluation, the Leases waiting for a governed set while the
	// budget was full, whatever the rest (the exposure of the starvation invariant).
	StarveNear int
	// RollDipsAtAllowed counts the roll retirements that left one available instance less
	// than the floor, allowed only because the set was at its budget's allowed (the
	// one-at-a-time step at a full ceiling), not at maxReplicas.
	RollDipsAtAllowed int
}

// BudgetStats returns what the CapacityBudgets did so far.
func (c *Checker) BudgetStats() BudgetStats {
	s := c.bw.stats()
	c.mu.Lock()
	s.StarveJudged, s.StarveNear = c.starveJudged, c.starveNear
	c.mu.Unlock()
	c.rw.mu.Lock()
	s.RollDipsAtAllowed = c.rw.budgetDips
	c.rw.mu.Unlock()
	return s
}
