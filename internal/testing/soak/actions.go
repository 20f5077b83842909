package soak

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

// provisionerMethods are the fake provisioner's calls the walk makes fail.
var provisionerMethods = []string{"Validate", "RenderPod", "EnrichDrivers", "Cleanup"}

// Limits that keep the pools small and the walk from starving them.
const (
	maxLeasesPerSet       = 4
	maxHandDisabledPerSet = 2
	// excuseSlack is added to every excuse: once the cause is gone the reconciler still
	// needs a pass or two (and, after a restart, its caches).
	excuseSlack = 5 * time.Second
)

// catalogue lists the walk's actions and their weights.
func (wk *Walk) catalogue() []action {
	return []action{
		{"take-lease", 12, wk.takeLease},
		{"release-lease", 9, wk.releaseLease},
		{"book-lease", 4, wk.bookLease},
		{"fail-pod", 4, wk.failPod},
		{"delete-pod", 3, wk.deletePod},
		{"set-offline", 3, wk.setOffline},
		{"set-online", 3, wk.setOnline},
		{"disable-by-hand", 2, wk.disableByHand},
		{"enable-by-hand", 3, wk.enableByHand},
		{"edit-set", 8, wk.editSet},
		{"edit-class", 3, wk.editClass},
		{"break-class", 1, wk.breakClass},
		{"delete-class", 1, wk.deleteClass},
		{"restart-controller", 1, wk.restartController},
		{"api-errors", 2, wk.apiErrors},
		{"kill-plugin", 1, wk.killPlugin},
		{"provisioner-fault", 1, wk.provisionerFault},
	}
}

func (wk *Walk) pickPool() *pool { return &wk.w.pools[wk.rng.Intn(len(wk.w.pools))] }

// pickName draws one of names after sorting them, so the draw depends on the seed and the
// set of names, not on the API server's list order.
func (wk *Walk) pickName(names []string) string {
	sort.Strings(names)
	return names[wk.rng.Intn(len(names))]
}

func (wk *Walk) exporters(ctx context.Context) ([]jumpstarterv1alpha1.Exporter, error) {
	var list jumpstarterv1alpha1.ExporterList
	err := wk.w.c.List(ctx, &list, client.InNamespace(wk.w.ns), client.HasLabels{expool.LabelSet})
	return list.Items, err
}

func (wk *Walk) leases(ctx context.Context) ([]jumpstarterv1alpha1.Lease, error) {
	var list jumpstarterv1alpha1.LeaseList
	err := wk.w.c.List(ctx, &list, client.InNamespace(wk.w.ns))
	return list.Items, err
}

// takeLease asks for an exporter of a set, as a Jumpstarter client: until released, or for a
// few seconds.
func (wk *Walk) takeLease(ctx context.Context) (string, bool, error) {
	p := wk.pickPool()
	var duration time.Duration
	if wk.rng.Intn(2) == 0 {
		duration = time.Duration(3+wk.rng.Intn(15)) * time.Second
	}
	if full, err := wk.leasesFull(ctx, p.set); err != nil || full {
		return "", full, err
	}
	wk.leaseSeq++
	name := fmt.Sprintf("lease-%04d-%s", wk.leaseSeq, p.set)
	if _, err := wk.w.sim.TakeLease(ctx, wk.w.ns, name, map[string]string{"board": p.set}, duration); err != nil {
		return "", false, err
	}
	return fmt.Sprintf("%s for board=%s, duration %s", name, p.set, duration), false, nil
}

func (wk *Walk) releaseLease(ctx context.Context) (string, bool, error) {
	leases, err := wk.leases(ctx)
	if err != nil {
		return "", false, err
	}
	held := map[string]string{}
	var names []string
	for _, l := range leases {
		if l.Status.Ended || l.Spec.Release {
			continue
		}
		names = append(names, l.Name)
		held[l.Name] = "waiting"
		if l.Status.ExporterRef != nil {
			held[l.Name] = "holding " + l.Status.ExporterRef.Name
		}
	}
	if len(names) == 0 {
		return "", true, nil
	}
	name := wk.pickName(names)
	return fmt.Sprintf("%s (%s)", name, held[name]), false, wk.w.sim.ReleaseLease(ctx, wk.w.ns, name)
}

func (wk *Walk) pods(ctx context.Context, keep func(*corev1.Pod) bool) ([]string, error) {
	var list corev1.PodList
	if err := wk.w.c.List(ctx, &list, client.InNamespace(wk.w.ns)); err != nil {
		return nil, err
	}
	var names []string
	for i := range list.Items {
		if p := &list.Items[i]; p.DeletionTimestamp == nil && keep(p) {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// failPod crashes an exporter's Pod (phase Failed), leased or not.
func (wk *Walk) failPod(ctx context.Context) (string, bool, error) {
	names, err := wk.pods(ctx, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if err != nil || len(names) == 0 {
		return "", err == nil, err
	}
	name := wk.pickName(names)
	wk.noteDisruption(ctx, name)
	err = wk.w.sim.FailPod(ctx, wk.w.ns, name)
	if err != nil && (apierrors.IsNotFound(err) || apierrors.IsConflict(err)) {
		return "", true, nil // it went away or changed meanwhile
	}
	return name, false, err
}

// deletePod deletes a Pod as a person (or an eviction) would, in whatever phase it is.
func (wk *Walk) deletePod(ctx context.Context) (string, bool, error) {
	names, err := wk.pods(ctx, func(*corev1.Pod) bool { return true })
	if err != nil || len(names) == 0 {
		return "", err == nil, err
	}
	name := wk.pickName(names)
	wk.noteDisruption(ctx, name)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: wk.w.ns, Name: name}}
	return name, false, client.IgnoreNotFound(wk.w.c.Delete(ctx, pod))
}

func (wk *Walk) setOffline(ctx context.Context) (string, bool, error) {
	exporters, err := wk.exporters(ctx)
	if err != nil {
		return "", false, err
	}
	var names []string
	for _, e := range exporters {
		if !wk.offline[e.Name] && e.DeletionTimestamp == nil {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return "", true, nil
	}
	name := wk.pickName(names)
	wk.offline[name] = true
	return name, false, client.IgnoreNotFound(wk.w.sim.SetOffline(ctx, wk.w.ns, name))
}

func (wk *Walk) setOnline(ctx context.Context) (string, bool, error) {
	if len(wk.offline) == 0 {
		return "", true, nil
	}
	var names []string
	for n := range wk.offline {
		names = append(names, n)
	}
	name := wk.pickName(names)
	delete(wk.offline, name)
	return name, false, client.IgnoreNotFound(wk.w.sim.SetOnline(ctx, wk.w.ns, name))
}

// disableByHand sets spec.enabled=false as a person would: without the retiring annotation,
// so the set must leave the Exporter alone.
func (wk *Walk) disableByHand(ctx context.Context) (string, bool, error) {
	exporters, err := wk.exporters(ctx)
	if err != nil {
		return "", false, err
	}
	disabled := map[string]int{}
	for _, e := range exporters {
		if _, retiring := e.Annotations[retiringKey]; !e.IsEnabled() && !retiring {
			disabled[e.Labels[expool.LabelSet]]++
		}
	}
	var names []string
	for _, e := range exporters {
		_, retiring := e.Annotations[retiringKey]
		if e.IsEnabled() && !retiring && e.DeletionTimestamp == nil && disabled[e.Labels[expool.LabelSet]] < maxHandDisabledPerSet {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return "", true, nil
	}
	name := wk.pickName(names)
	return name, false, wk.setEnabled(ctx, name, false)
}

// enableByHand enables an Exporter a person disabled, never one the set is retiring.
func (wk *Walk) enableByHand(ctx context.Context) (string, bool, error) {
	exporters, err := wk.exporters(ctx)
	if err != nil {
		return "", false, err
	}
	var names []string
	for _, e := range exporters {
		if _, retiring := e.Annotations[retiringKey]; !e.IsEnabled() && !retiring && e.DeletionTimestamp == nil {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return "", true, nil
	}
	name := wk.pickName(names)
	return name, false, wk.setEnabled(ctx, name, true)
}

// setEnabled patches spec.enabled with the read resourceVersion as a precondition, so that it
// never touches an Exporter the set started retiring meanwhile.
func (wk *Walk) setEnabled(ctx context.Context, name string, enabled bool) error {
	var e jumpstarterv1alpha1.Exporter
	if err := wk.w.c.Get(ctx, client.ObjectKey{Namespace: wk.w.ns, Name: name}, &e); err != nil {
		return client.IgnoreNotFound(err)
	}
	if _, retiring := e.Annotations[retiringKey]; retiring {
		return nil
	}
	patched := e.DeepCopy()
	patched.Spec.Enabled = ptr.To(enabled)
	err := wk.w.c.Patch(ctx, patched, client.MergeFromWithOptions(&e, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// restartController stops the manager and starts a new one after a pause.
func (wk *Walk) restartController(ctx context.Context) (string, bool, error) {
	pause := time.Duration(wk.rng.Intn(2000)) * time.Millisecond
	start := time.Now()
	wk.w.checker.Excuse("", time.Minute) // until restarted; shortened below
	if err := wk.w.ctrl.stop(); err != nil && !errors.Is(err, context.Canceled) {
		wk.w.history.Record(KindNote, "controller stopped with: %v", err)
	}
	select {
	case <-ctx.Done():
		return "", false, ctx.Err()
	case <-time.After(pause):
	}
	if err := wk.startController(ctx); err != nil {
		// Keep the excuse and try again shortly: the rest of the walk needs a controller.
		wk.later(time.Second, "start the controller again", wk.startController)
		return "", false, err
	}
	return fmt.Sprintf("down for %s", time.Since(start).Round(time.Millisecond)), false, nil
}

// startController starts a new manager and ends the restart's excuse shortly after.
func (wk *Walk) startController(ctx context.Context) error {
	if wk.w.ctrl.running() {
		return nil // a later restart started one already
	}
	if err := wk.w.ctrl.start(ctx); err != nil {
		return err
	}
	wk.w.checker.excuseUntil("", time.Now().Add(excuseSlack))
	return nil
}

// apiErrors changes the fraction of the reconciler's API calls that fail.
func (wk *Walk) apiErrors(context.Context) (string, bool, error) {
	rates := []float64{0, 0.02, 0.05, 0.1}
	write := rates[wk.rng.Intn(len(rates))]
	read := write / 3
	wk.w.faults.SetRates(write, read)
	wk.w.history.Record(KindFault, "API errors on %.0f%% of writes, %.1f%% of reads", write*100, read*100)
	return fmt.Sprintf("writes %.0f%%, reads %.1f%%", write*100, read*100), false, nil
}

// killPlugin kills the plugin process with SIGKILL; the host restarts it on the next call.
func (wk *Walk) killPlugin(context.Context) (string, bool, error) {
	if wk.w.plugins == nil {
		return "", true, nil
	}
	pids, err := killPlugins(wk.w.plugins)
	for _, p := range wk.w.pools {
		if p.provisioner == PluginProvisioner {
			wk.w.checker.Excuse(p.set, excuseSlack)
		}
	}
	if len(pids) == 0 && err == nil {
		return "", true, nil // not running (restarting): nothing to kill
	}
	return fmt.Sprintf("pids %v", pids), false, err
}

// provisionerFault makes one of the fake provisioner's calls fail (transiently) for a while.
func (wk *Walk) provisionerFault(context.Context) (string, bool, error) {
	m := provisionerMethods[wk.rng.Intn(len(provisionerMethods))]
	d := time.Duration(1+wk.rng.Intn(3)) * time.Second
	wk.w.fake.Fail(m, provisioner.Transient(errors.New("soak: injected provisioner failure")))
	wk.w.history.Record(KindFault, "fake provisioner %s fails for %s", m, d)
	for _, p := range wk.w.pools {
		if p.provisioner != PluginProvisioner {
			wk.w.checker.Excuse(p.set, d+excuseSlack)
		}
	}
	wk.later(d, "fake provisioner "+m+" works again", func(context.Context) error {
		wk.w.fake.Fail(m, nil)
		return nil
	})
	return fmt.Sprintf("%s for %s", m, d), false, nil
}

// leasesFull reports whether set already has maxLeasesPerSet leases not ended (taken or
// booked), so that the walk takes or books no more for it.
func (wk *Walk) leasesFull(ctx context.Context, set string) (bool, error) {
	leases, err := wk.leases(ctx)
	if err != nil {
		return false, err
	}
	active := 0
	for _, l := range leases {
		if !l.Status.Ended && l.Spec.Selector.MatchLabels["board"] == set {
			active++
		}
	}
	return active >= maxLeasesPerSet, nil
}
