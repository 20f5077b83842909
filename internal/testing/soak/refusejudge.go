package soak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// The refusal invariant's judgement (InvLeaseRefused; what it remembers and why: see
// refusewatch.go): which set a refused Lease was for, and whether that set had room.

// judgeRefusals judges the refusals seen at least refuseJudgeDelay before now (all of them
// when all is set: the end of the run).
func (c *Checker) judgeRefusals(ctx context.Context, now time.Time, all bool) error {
	w := c.rf
	w.mu.Lock()
	due, rest := takeDue(w.pending, func(r refusal) bool { return all || now.Sub(r.at) >= refuseJudgeDelay })
	w.pending = rest
	w.mu.Unlock()
	if len(due) == 0 {
		return nil
	}
	var exporters jumpstarterv1alpha1.ExporterList
	if err := c.cache.List(ctx, &exporters, client.InNamespace(c.ns)); err != nil {
		w.mu.Lock()
		w.pending = append(due, w.pending...) // judged at the next tick
		w.mu.Unlock()
		return err
	}
	for _, r := range due {
		c.judgeRefusal(r, exporters.Items)
	}
	return nil
}

// judgeRefusal reports r unless no set's instances match its selector or each set they match
// is excused.
func (c *Checker) judgeRefusal(r refusal, exporters []jumpstarterv1alpha1.Exporter) {
	w := c.rf
	w.mu.Lock()
	var names []string
	for name, rs := range w.sets {
		if len(rs.labels) > 0 && r.selector.Matches(rs.labels) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	type verdict struct{ set, excuse, seen string }
	var verdicts []verdict
	for _, name := range names {
		verdicts = append(verdicts, verdict{name, c.refusalExcuseLocked(name, w.sets[name], r.at, exporters), seenOf(w.sets[name], exporters)})
	}
	w.judged++
	if len(names) == 0 {
		w.noPool++
	}
	w.mu.Unlock()
	if len(names) == 0 {
		c.history.Record(KindNote, "checker: lease %s refused (%s) for no pool: selector %s matches no set's instances", r.lease, r.reason, r.selector)
		return
	}
	var excuses []string
	for _, v := range verdicts {
		if v.excuse == "" {
			c.Report(InvLeaseRefused, r.lease, "lease %s ended Unsatisfiable %s (%q) while set %s, whose instances its selector %s matches, had room: not being deleted, its class usable, no budget or hand-disabled instances holding it at 0, and the soak had not just changed it (at the judgement, %s; over the last minute its budget's allowed: %s; the ceiling the controller derives from it: %s)",
				r.lease, r.reason, r.message, v.set, r.selector, v.seen, c.bw.historyOf(c.bw.allowed, v.set), c.bw.historyOf(c.bw.ceilings, v.set))
			return
		}
		excuses = append(excuses, v.set+": "+v.excuse)
	}
	w.mu.Lock()
	w.excused++
	w.mu.Unlock()
	c.history.Record(KindNote, "checker: lease %s refused (%s), excused: %s", r.lease, r.reason, strings.Join(excuses, "; "))
}

// seenOf lists the set's Exporters as the judgement sees them, for a violation's message:
// what a person needs to tell why none was enabled when the Lease came.
func seenOf(rs *refuseSet, exporters []jumpstarterv1alpha1.Exporter) string {
	var out []string
	for i := range exporters {
		e := &exporters[i]
		if uid, ok := controllerUID(e, "ExporterSet"); !ok || uid != rs.uid {
			continue
		}
		state := "enabled"
		if !e.IsEnabled() {
			state = "disabled"
		}
		if e.DeletionTimestamp != nil {
			state += ", being deleted"
		}
		out = append(out, fmt.Sprintf("%s (%s, created %s)", e.Name, state, e.CreationTimestamp.Format("15:04:05")))
	}
	if len(out) == 0 {
		return "no Exporter of the set"
	}
	return "its Exporters " + strings.Join(out, "; ")
}

// refusalExcuseLocked says why set (as rs) could not serve a lease refused at at, or "" when
// it could have. Called with c.rf.mu held.
func (c *Checker) refusalExcuseLocked(set string, rs *refuseSet, at time.Time, exporters []jumpstarterv1alpha1.Exporter) string {
	w, grace := c.rf, c.opts.RefuseGrace
	since := at.Add(-grace)
	switch {
	case !rs.deleting.IsZero():
		return "being deleted"
	case rs.created.After(since):
		return fmt.Sprintf("created %s before", at.Sub(rs.created).Round(time.Millisecond))
	case rs.changed.After(since):
		return fmt.Sprintf("its class name, selector or template labels changed %s before", at.Sub(rs.changed).Round(time.Millisecond))
	case c.isExcusedLocking(set, at):
		// The controller was down, or the soak made its provisioner or plugin fail: the set
		// could create nothing then (nor remove anything), so a refusal can only mean its
		// first Exporter was not made yet.
		return "the soak disrupted it then (controller restart, provisioner or plugin fault)"
	}
	cl := w.classes[rs.class]
	switch {
	case cl == nil || !cl.present:
		return fmt.Sprintf("its class %s does not exist", rs.class)
	case cl.sinceAbsent.After(since):
		return fmt.Sprintf("its class %s was created again %s before", rs.class, at.Sub(cl.sinceAbsent).Round(time.Millisecond))
	case w.served != nil && !w.served(cl.provisioner):
		return fmt.Sprintf("its provisioner %s is not served", cl.provisioner)
	}
	if why := c.bw.refuses(set, since); why != "" {
		return why
	}
	if t := w.handDisabled[set]; t.After(since) {
		return fmt.Sprintf("an Exporter of it was disabled by hand %s before", at.Sub(t).Round(time.Millisecond))
	}
	// Its ceiling: maxReplicas (0 = unbounded), or a CapacityBudget's lower allowed.
	ceiling := int64(rs.max)
	if low, ok := c.bw.allowedSince(set, since); ok && (ceiling == 0 || low < ceiling) {
		ceiling = low
	}
	if ceiling > 0 {
		var held []string
		for _, e := range exporters {
			if uid, ok := controllerUID(&e, "ExporterSet"); !ok || uid != rs.uid {
				continue
			}
			if v := viewOf(&e, nil); v.handDisabled() && !v.quarantined || w.handEnabled[set][e.Name].After(at) {
				held = append(held, e.Name) // disabled by hand now, or still at the refusal
			}
		}
		if int64(len(held)) >= ceiling {
			return fmt.Sprintf("Exporters disabled by hand (%s) hold its ceiling %d (maxReplicas %d, or its budget's allowed)", strings.Join(held, ", "), ceiling, rs.max)
		}
	}
	return ""
}

// refuses says how a CapacityBudget governing set gave it no room from since on ("" if
// none did): a limit of 0, or its status allowing the set no instance while the budget was
// full (used.instances at its limit).
func (w *budgetWatch) refuses(set string, since time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := make([]string, 0, len(w.budgets))
	for name := range w.budgets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		wb := w.budgets[name]
		if !wb.sel.Matches(w.setLabels[set]) {
			continue
		}
		if low, ok := lowestSince(wb.limits, since); ok && low == 0 {
			return fmt.Sprintf("CapacityBudget %s has a limit of 0", name)
		}
		if wb.full || wb.fullAt.After(since) {
			if low, ok := lowestSince(w.allowed[set], since); ok && low == 0 {
				return fmt.Sprintf("CapacityBudget %s is full and allows it no instance", name)
			} else if !ok {
				// Not allotted yet (a set the budget's status does not list): a full budget
				// gives it no place to reserve, so it cannot make its first Exporter.
				return fmt.Sprintf("CapacityBudget %s is full and has not allotted it an instance", name)
			}
		}
	}
	// Allowed 0 while the set wants more (another set's floor took every place, full or
	// not yet): its controller's ceiling is 0, and it owes its Leases no Exporter.
	if low, ok := lowestSince(w.ceilings[set], since); ok && low == 0 {
		return "a CapacityBudget's status gave it a ceiling of 0 (allowed 0, below what it wants)"
	}
	return ""
}

// allowedSince is the lowest number of instances the CapacityBudgets governing set allowed
// it from since on (ok=false when none governs it).
func (w *budgetWatch) allowedSince(set string, since time.Time) (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return lowestSince(w.allowed[set], since)
}

// lowestSince is the lowest value of h in effect at since or after (ok=false for none).
func lowestSince(h []maxChange, since time.Time) (lowest int64, ok bool) {
	for i, c := range h {
		if i+1 < len(h) && !h[i+1].at.After(since) {
			continue
		}
		if !ok || c.max < lowest {
			lowest = c.max
		}
		ok = true
	}
	return lowest, ok
}

// RefuseStats returns how many refused Leases the checker judged, how many of them were for
// no pool, and how many were excused.
func (c *Checker) RefuseStats() (judged, noPool, excused int) {
	c.rf.mu.Lock()
	defer c.rf.mu.Unlock()
	return c.rf.judged, c.rf.noPool, c.rf.excused
}

// FlushRefusals judges the refusals not judged yet, the last ones of the run too.
func (c *Checker) FlushRefusals(ctx context.Context) {
	if err := c.judgeRefusals(ctx, time.Now(), true); err != nil && ctx.Err() == nil {
		c.history.Record(KindNote, "checker: %v", err)
	}
}

// isExcusedLocking is isExcused for a caller that does not hold c.mu.
func (c *Checker) isExcusedLocking(set string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isExcused(set, now)
}
