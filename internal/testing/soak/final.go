package soak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// Final checks the state the pool must reach once the walk has stopped and every fault is
// off, read from the API server (not a cache). It returns what is not (yet) right; the
// caller polls it until it returns nothing or a deadline passes. For every set:
//
//   - its status counters equal expool.ComputeStatus of its instances as the API server
//     has them now, for the set's current generation;
//   - at least minReplicas instances are live (not deleting, retiring or exited);
//   - no unleased instance is still being recycled (retiring or exited);
//   - it is not above maxReplicas, except by leased or hand-disabled instances;
//   - its warm buffer holds minAvailableReplicas where the ceiling allows, that is up to
//     maxReplicas minus the leased, hand-disabled and quarantined instances (kept for
//     inspection, they occupy the ceiling): available (ready, enabled, unleased) ones
//     under Immediate binding, idle enabled ones under WaitForFirstConsumer;
//   - every booked lease that has begun is assigned where the set's ceiling allows
//     (bookings.go).
//
// And for the namespace: no Pod or Secret whose owning Exporter is gone, no Exporter
// without an existing ExporterSet as its controller, and (WatchRemote) no remote resource of
// the external fake without its Exporter, nor a recorded one gone.
func (c *Checker) Final(ctx context.Context) ([]string, error) {
	r := c.direct
	ns := client.InNamespace(c.ns)
	var sets vtv1alpha1.ExporterSetList
	var classes vtv1alpha1.VirtualTargetClassList
	var exporters jumpstarterv1alpha1.ExporterList
	var pods corev1.PodList
	var secrets corev1.SecretList
	var budgets vtv1alpha1.CapacityBudgetList
	for _, l := range []client.ObjectList{&sets, &classes, &exporters, &pods, &secrets, &budgets} {
		if err := r.List(ctx, l, ns); err != nil {
			return nil, err
		}
	}
	bindings := map[string]vtv1alpha1.BindingMode{}
	for _, cl := range classes.Items {
		bindings[cl.Name] = cl.Spec.BindingMode
	}
	byOwner := podsByController(pods.Items)
	problems, full := budgetFinal(budgets.Items, sets.Items, exporters.Items, time.Now())
	for i := range sets.Items {
		problems = append(problems, finalSet(&sets.Items[i], bindings, exporters.Items, pods.Items, byOwner, full[sets.Items[i].Name])...)
	}
	problems = append(problems, orphans(sets.Items, exporters.Items, pods.Items, secrets.Items)...)
	problems = append(problems, boardWrites(exporters.Items)...)
	leases, err := listLeases(ctx, r, c.ns)
	if err != nil {
		return nil, err
	}
	problems = append(problems, bookingProblems(leases, sets.Items, exporters.Items, time.Now(), full)...)
	problems = append(problems, remoteProblems(c.ns, exporters.Items, c.remoteList())...)
	sort.Strings(problems)
	return problems, nil
}

// budgetFull (a CapacityBudget governing the set is full, budgetfinal.go) excuses the floor
// and the warm buffer.
func finalSet(set *vtv1alpha1.ExporterSet, bindings map[string]vtv1alpha1.BindingMode, exporters []jumpstarterv1alpha1.Exporter, pods []corev1.Pod, byOwner map[types.UID][]*corev1.Pod, budgetFull bool) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("set %s: ", set.Name)+fmt.Sprintf(format, args...))
	}
	binding, ok := bindings[set.Spec.VirtualTargetClassName]
	if !ok {
		bad("class %s does not exist", set.Spec.VirtualTargetClassName)
		return problems
	}

	// The status, recomputed the way the reconciler observes: Exporters labelled for the
	// set, controlled by it and matching its selector, with the Pods labelled for the set
	// that they control; an instance whose Pod shows a failure is not available.
	observed := instancesOf(set, exporters, pods)
	want := expool.ComputeStatus(observed, diagnosed(observed))
	want.HardwareAvailableReplicas = freeBoardsOf(set, exporters) // counted here, not read from the status
	got := set.Status
	if set.Status.ObservedGeneration != set.Generation {
		bad("status.observedGeneration %d, generation %d", got.ObservedGeneration, set.Generation)
	}
	if d := diffCounters(got, want); d != "" {
		bad("status differs from a recomputation: %s", d)
	}

	// stuck instances occupy the ceiling but cannot serve as the warm buffer: leased ones
	// (also those whose retirement a lease raced, or whose exporter exited during the lease)
	// until the lease ends, hand-disabled ones until a person enables them.
	// Quarantined instances (not leased) occupy the ceiling too, kept for inspection until
	// their TTL or the max-quarantined cap removes them, and never count as warm.
	var live, warm, stuck, quarantined, total, occupying int32
	var pool []string
	for _, e := range ownedBy(exporters, set.UID) {
		v := viewOf(e, byOwner[e.UID])
		total++
		pool = append(pool, v.String())
		rec := v.recycling(set.Spec.RecycleStrategy)
		if rec && !v.leased {
			bad("instance %s is still being recycled (deleting=%v retiring=%v exited=%v)", v.name, v.deleting, v.retiring, v.terminal)
		}
		isStuck := v.leased || (v.handDisabled() && !rec)
		if isStuck && v.quarantined && !v.leased {
			quarantined++
		} else if isStuck {
			stuck++
		}
		if rec || v.quarantined {
			if rec && v.leased || v.quarantined {
				occupying++ // holds its place under the ceiling until the lease ends, or kept
			}
			continue
		}
		live++
		if !isStuck && v.enabled {
			warm++
		}
	}
	instances := strings.Join(pool, ", ")
	var maxR int32
	if set.Spec.MaxReplicas != nil {
		maxR = *set.Spec.MaxReplicas
	}
	// The floor holds where the ceiling allows: a leased instance being retired or recycled
	// keeps its place under maxReplicas until its lease ends, a quarantined one until the
	// quarantine's rules remove it, and no replacement may exceed it.
	floor := set.Spec.MinReplicas
	if maxR > 0 {
		floor = min(floor, max(0, maxR-occupying))
	}
	if !budgetFull && (live < floor || total < set.Spec.MinReplicas && (maxR == 0 || total < maxR)) {
		bad("%d live instances (%d in all), minReplicas %d, maxReplicas %d, %d leased ones being replaced or quarantined ones kept [%s]", live, total, set.Spec.MinReplicas, maxR, occupying, instances)
	}
	// Free boards hold part of the buffer (boards.go); the set's own instances the rest.
	buffer := expool.Buffer(set.Spec.MinAvailableReplicas, want.HardwareAvailableReplicas)
	if maxR > 0 {
		if total > max(maxR, stuck+quarantined) {
			bad("%d instances, maxReplicas %d (%d leased or disabled by hand, %d quarantined) [%s]", total, maxR, stuck, quarantined, instances)
		}
		buffer = min(buffer, max(0, maxR-stuck-quarantined))
	}
	if budgetFull {
		buffer = 0 // the budget holds the buffer back: what it gives whom is budgetstarve.go's
	}
	if binding == vtv1alpha1.BindingWaitForFirstConsumer {
		if warm < buffer {
			bad("%d idle instances (WaitForFirstConsumer), want %d (minAvailableReplicas %d, maxReplicas %d, %d leased or disabled by hand, %d quarantined) [%s]",
				warm, buffer, set.Spec.MinAvailableReplicas, maxR, stuck, quarantined, instances)
		}
	} else if want.AvailableReplicas < buffer {
		bad("%d available instances, want %d (minAvailableReplicas %d, maxReplicas %d, %d leased or disabled by hand, %d quarantined) [%s]",
			want.AvailableReplicas, buffer, set.Spec.MinAvailableReplicas, maxR, stuck, quarantined, instances)
	}
	if len(problems) > 0 {
		problems = append(problems, fmt.Sprintf("set %s: detail: %s", set.Name, detail(set, ownedBy(exporters, set.UID), byOwner)))
	}
	return problems
}

// instancesOf builds the set's instances as the reconciler's observe does.
func instancesOf(set *vtv1alpha1.ExporterSet, exporters []jumpstarterv1alpha1.Exporter, pods []corev1.Pod) []*expool.Instance {
	sel, err := metav1.LabelSelectorAsSelector(&set.Spec.Selector)
	if err != nil {
		sel = labels.Nothing()
	}
	podsOf := map[types.UID][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		if p.Labels[expool.LabelSet] != set.Name {
			continue
		}
		if uid, ok := controllerUID(p, "Exporter"); ok {
			podsOf[uid] = append(podsOf[uid], p)
		}
	}
	var out []*expool.Instance
	for i := range exporters {
		e := &exporters[i]
		uid, ok := controllerUID(e, "ExporterSet")
		if !ok || uid != set.UID || e.Labels[expool.LabelSet] != set.Name || !sel.Matches(labels.Set(e.Labels)) {
			continue
		}
		out = append(out, &expool.Instance{Exporter: e, Pods: podsOf[e.UID]})
	}
	return out
}

// diffCounters compares the counters of two statuses (not conditions, selector or clocks).
func diffCounters(got vtv1alpha1.ExporterSetStatus, want expool.Counts) string {
	type pair struct {
		name      string
		got, want int32
	}
	var out []string
	for _, p := range []pair{
		{"replicas", got.Replicas, want.Replicas},
		{"readyReplicas", got.ReadyReplicas, want.ReadyReplicas},
		{"availableReplicas", got.AvailableReplicas, want.AvailableReplicas},
		{"leasedReplicas", got.LeasedReplicas, want.LeasedReplicas},
		{"unavailableReplicas", got.UnavailableReplicas, want.UnavailableReplicas},
		{"exportersActive", got.ExportersActive, want.ExportersActive},
		{"exportersIdle", got.ExportersIdle, want.ExportersIdle},
		{"exportersDisabled", got.ExportersDisabled, want.ExportersDisabled},
		{"exportersOffline", got.ExportersOffline, want.ExportersOffline},
		{"podsPending", got.PodsPending, want.PodsPending},
		{"podsRunning", got.PodsRunning, want.PodsRunning},
		{"podsFailed", got.PodsFailed, want.PodsFailed},
		{"podsUnknown", got.PodsUnknown, want.PodsUnknown},
		{"hardwareAvailableReplicas", got.HardwareAvailableReplicas, want.HardwareAvailableReplicas},
	} {
		if p.got != p.want {
			out = append(out, fmt.Sprintf("%s=%d (want %d)", p.name, p.got, p.want))
		}
	}
	return strings.Join(out, " ")
}

// orphans finds Pods and Secrets whose owning Exporter is gone and Exporters whose set is.
func orphans(sets []vtv1alpha1.ExporterSet, exporters []jumpstarterv1alpha1.Exporter, pods []corev1.Pod, secrets []corev1.Secret) []string {
	setUIDs := map[types.UID]bool{}
	for _, s := range sets {
		setUIDs[s.UID] = true
	}
	exporterUIDs := map[types.UID]bool{}
	var problems []string
	for i := range exporters {
		e := &exporters[i]
		exporterUIDs[e.UID] = true
		if e.Labels[expool.LabelRetainedFrom] != "" {
			continue // released on purpose (reclaimPolicy Retain)
		}
		if isBoard(e) {
			continue // no set's: a physical board beside one (boards.go)
		}
		if uid, ok := controllerUID(e, "ExporterSet"); !ok || !setUIDs[uid] {
			problems = append(problems, fmt.Sprintf("exporter %s has no existing ExporterSet as its controller", e.Name))
		}
	}
	for i := range pods {
		p := &pods[i]
		if uid, ok := controllerUID(p, "Exporter"); !ok || !exporterUIDs[uid] {
			problems = append(problems, fmt.Sprintf("orphaned pod %s (phase %s)", p.Name, p.Status.Phase))
		}
	}
	for i := range secrets {
		s := &secrets[i]
		owned := false
		for _, ref := range s.OwnerReferences {
			if ref.Kind != "Exporter" {
				continue
			}
			owned = true
			if !exporterUIDs[ref.UID] {
				problems = append(problems, fmt.Sprintf("orphaned secret %s (its Exporter %s is gone)", s.Name, ref.Name))
			}
		}
		if !owned && s.Labels[expool.LabelSet] != "" {
			problems = append(problems, fmt.Sprintf("secret %s is labelled for set %s but owned by no Exporter", s.Name, s.Labels[expool.LabelSet]))
		}
	}
	return problems
}
