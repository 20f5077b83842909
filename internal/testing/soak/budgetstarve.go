package soak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// The starvation invariant (InvBudgetStarved): demand before spares. A Lease waiting for a
// governed set's instances must not stay waiting, for longer than CeilingOptions.Starve,
// while the budget is full and another governed set without demand of its own holds idle
// instances above its minReplicas: the budget must reclaim one of those for it.
//
// It is judged a few times a second from the checker's cache, and the clock of a Lease runs
// only while all of these hold at once (any break restarts it):
//   - the Lease waits: not ended nor released, unassigned, Pending, its selector naming a
//     governed set X (board=X);
//   - the budget is full: the governed sets' Exporters, in any state, number at least its
//     limit (otherwise the budget is not what holds the Lease back);
//   - X is not at its own maxReplicas (then the Lease waits for X's ceiling), and X has
//     fewer usable unleased instances (enabled, not leaving, exited or quarantined; ready
//     or starting) than Leases waiting for it (otherwise it waits for them to start, or for
//     the lease scheduler);
//   - another governed set Y has no unassigned Lease (waiting or booked: a booking inside
//     its lead time is demand) and holds an idle instance (enabled, unleased, ready, not
//     failing, leaving, exited or quarantined) above its minReplicas (live instances,
//     those not leaving, above minReplicas);
//   - neither X nor Y is excused (class deleted, controller down, ...: it cannot act).
//
// The clock stops when Y retires the instance (a retiring one is not idle), so the bound
// covers the budget's pass, Y's pass and the watches' lag, not the replacement's start.

// starveKey is the Lease a clock runs for.
type starveClock struct {
	since time.Time
}

// checkStarvation evaluates the starvation invariant from the cache.
func (c *Checker) checkStarvation(ctx context.Context, now time.Time) error {
	var budgets vtv1alpha1.CapacityBudgetList
	if err := c.cache.List(ctx, &budgets, client.InNamespace(c.ns)); err != nil {
		return err
	}
	if len(budgets.Items) == 0 {
		return nil
	}
	var sets vtv1alpha1.ExporterSetList
	var exporters jumpstarterv1alpha1.ExporterList
	var pods corev1.PodList
	var leases jumpstarterv1alpha1.LeaseList
	for _, l := range []client.ObjectList{&sets, &exporters, &pods, &leases} {
		if err := c.cache.List(ctx, l, client.InNamespace(c.ns)); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	type found struct{ lease, detail string }
	var broken []found
	c.mu.Lock()
	for i := range budgets.Items {
		b := &budgets.Items[i]
		list, near := starvingLeases(b, sets.Items, exporters.Items, pods.Items, leases.Items)
		c.starveNear += near
		for _, s := range list {
			key := b.Name + "/" + s.lease
			seen[key] = true
			if c.isExcused(s.set, now) || c.isExcused(s.donor, now) {
				delete(c.starving, key)
				continue
			}
			c.starveJudged++
			clk := c.starving[key]
			if clk == nil {
				c.starving[key] = &starveClock{since: now}
				continue
			}
			if now.Sub(clk.since) > c.opts.Starve {
				broken = append(broken, found{s.lease, fmt.Sprintf("lease %s has waited for set %s for %s while CapacityBudget %s was full and %s; %s",
					s.lease, s.set, now.Sub(clk.since).Round(time.Millisecond), b.Name, s.why, s.detail)})
				clk.since = now // once per bound, not every check
			}
		}
	}
	for key := range c.starving {
		if !seen[key] {
			delete(c.starving, key)
		}
	}
	c.mu.Unlock()
	for _, f := range broken {
		c.Report(InvBudgetStarved, f.lease, "%s", f.detail)
	}
	return nil
}

// starving is one Lease that waits while another governed set holds a spare.
type starving struct {
	lease, set, donor, why, detail string
}

// starvingLeases returns the Leases of b's governed sets that wait, now, while b is full
// and another governed set (the donor) holds idle instances above its floor; near counts
// the Leases waiting for a governed set while b is full, whatever the rest.
func starvingLeases(b *vtv1alpha1.CapacityBudget, sets []vtv1alpha1.ExporterSet, exporters []jumpstarterv1alpha1.Exporter, pods []corev1.Pod, leases []jumpstarterv1alpha1.Lease) (out []starving, near int) {
	sel, err := metav1.LabelSelectorAsSelector(&b.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil, 0
	}
	governed := map[string]*vtv1alpha1.ExporterSet{}
	for i := range sets {
		if sel.Matches(labels.Set(sets[i].Labels)) {
			governed[sets[i].Name] = &sets[i]
		}
	}
	var count int32
	for i := range exporters {
		if governed[budgetSetOf(&exporters[i])] != nil {
			count++
		}
	}
	if count < b.Spec.Limits.Instances {
		return nil, 0
	}
	// Each governed set's Leases: those waiting, and those unassigned (waiting or booked).
	waiting := map[string][]string{}
	unassigned := map[string]int{}
	for i := range leases {
		l := &leases[i]
		board := l.Spec.Selector.MatchLabels["board"]
		if governed[board] == nil || l.Status.Ended || l.Spec.Release || l.Status.ExporterRef != nil || l.DeletionTimestamp != nil {
			continue
		}
		unassigned[board]++
		if apimeta.IsStatusConditionTrue(l.Status.Conditions, jumpstarterv1alpha1.LeaseConditionPending) && (l.Spec.ExporterRef == nil || l.Spec.ExporterRef.Name == "") {
			waiting[board] = append(waiting[board], l.Name)
		}
	}
	for _, w := range waiting {
		near += len(w)
	}
	byOwner := podsByController(pods)
	type inv struct{ total, live, usable, idle int32 }
	invOf := map[string]inv{}
	names := make([]string, 0, len(governed))
	for name, set := range governed {
		names = append(names, name)
		instances := instancesOf(set, exporters, pods)
		problems := diagnosed(instances)
		ready := map[string]bool{}
		for _, in := range instances {
			ready[in.Exporter.Name] = in.Ready() && problems.Of(in) == nil
		}
		var n inv
		for _, e := range ownedBy(exporters, set.UID) {
			v := viewOf(e, byOwner[e.UID])
			n.total++
			if v.deleting || v.retiring {
				continue
			}
			n.live++
			if v.leased || !v.enabled || v.quarantined || v.terminal {
				continue
			}
			n.usable++
			if ready[e.Name] {
				n.idle++
			}
		}
		invOf[name] = n
	}
	sort.Strings(names)
	for _, x := range names {
		if len(waiting[x]) == 0 {
			continue
		}
		set, n := governed[x], invOf[x]
		if m := set.Spec.MaxReplicas; m != nil && *m > 0 && n.total >= *m {
			continue // the Lease waits for the set's own ceiling
		}
		if n.usable >= int32(len(waiting[x])) {
			continue // it waits for an instance starting, or for the lease scheduler
		}
		for _, y := range names {
			ny := invOf[y]
			spare := min(ny.idle, ny.live-governed[y].Spec.MinReplicas)
			if y == x || unassigned[y] > 0 || spare <= 0 {
				continue
			}
			why := fmt.Sprintf("set %s, without Leases of its own waiting or booked, held %d idle instances above its minReplicas %d (%d live, %d idle)",
				y, spare, governed[y].Spec.MinReplicas, ny.live, ny.idle)
			detail := fmt.Sprintf("%d governed Exporters, limit %d; set %s: %d Exporters (maxReplicas %s), %d usable unleased, %d Leases waiting (%s)",
				count, b.Spec.Limits.Instances, x, n.total, ptrString(set.Spec.MaxReplicas), n.usable, len(waiting[x]), strings.Join(waiting[x], ", "))
			for _, l := range waiting[x] {
				out = append(out, starving{lease: l, set: x, donor: y, why: why, detail: detail})
			}
			break
		}
	}
	return out, near
}
