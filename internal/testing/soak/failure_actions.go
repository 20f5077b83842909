package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
)

// Kinds of failure events the walk injects, as the run's summary counts them.
const (
	FailImagePull      = "image-pull"
	FailCrashLoop      = "crash-loop-sidecar"
	FailCrashError     = "crash-exit-error"
	FailCrashOOM       = "crash-exit-oomkilled"
	FailNoCapacity     = "unschedulable-capacity"
	FailTaint          = "unschedulable-taint"
	FailNodeLoss       = "node-loss"
	FailEviction       = "eviction"
	FailNotRegistering = "not-registering"
	FailSlowStart      = "slow-start"
)

// failureState is what the walk has broken in the simulated cluster and not yet repaired.
// Every fault is bounded: it is set with a deferred step that clears it, and quiesce clears
// whatever is left, so the walk spends most of its time on normal behaviour.
type failureState struct {
	pulls   map[string][]string // image -> sets it hits
	crashes map[string][]string
	unreg   map[string]bool // exporters that cannot register
	node    bool            // lost, capacity cut or tainted: one node fault at a time
	slow    bool
	counts  map[string]int
	// remoteCut: the external pool's remote end is unreachable; leftSeq numbers the
	// resources left behind on it (external_actions.go).
	remoteCut bool
	leftSeq   int
}

func newFailureState() *failureState {
	return &failureState{pulls: map[string][]string{}, crashes: map[string][]string{}, unreg: map[string]bool{}, counts: map[string]int{}}
}

// failureCatalogue lists the failure actions and their weights: together about one step in
// seven, each fault lasting seconds.
func (wk *Walk) failureCatalogue() []action {
	return []action{
		{"image-pull-fault", 2, wk.imagePullFault},
		{"crash-fault", 2, wk.crashFault},
		{"node-fault", 1, wk.nodeFault},
		{"evict-pod", 2, wk.evictPod},
		{"not-registering", 2, wk.notRegistering},
		{"slow-start", 1, wk.slowStart},
	}
}

// faultDuration is how long an image or crash fault lasts: long enough for the backoff to
// grow and the startup deadline to pass now and then, short enough to leave normal time.
func (wk *Walk) faultDuration() time.Duration {
	return time.Duration(4+wk.rng.Intn(22)) * time.Second
}

// poolImage returns the image of role ("exporter" or "runtime") a pool's new Pods use: its
// class's spec.images, or for the plugin's target its class's parameters.image.
func (wk *Walk) poolImage(ctx context.Context, p *pool, role string) (string, error) {
	if role == "exporter" {
		return exporterImage(p), nil
	}
	if p.provisioner != PluginProvisioner {
		return runtimeImage(p), nil
	}
	var c vtv1alpha1.VirtualTargetClass
	if err := wk.w.c.Get(ctx, client.ObjectKey{Namespace: wk.w.ns, Name: p.class}, &c); err != nil {
		return "", err
	}
	var params struct {
		Image string `json:"image"`
	}
	if c.Spec.Parameters != nil {
		_ = json.Unmarshal(c.Spec.Parameters.Raw, &params)
	}
	if params.Image == "" {
		return "", fmt.Errorf("class %s has no parameters.image", p.class)
	}
	return params.Image, nil
}

// markFailing tells the checker that set fails for the fault key until cleared, and records
// it in the history: the churn invariant is judged over these intervals.
func (wk *Walk) markFailing(set, key string, on bool) {
	wk.w.checker.SetFailing(set, key, on)
	verb := "failing"
	if !on {
		verb = "no longer failing"
	}
	wk.w.history.Record(KindFault, "set %s %s: %s", set, verb, key)
}

// imagePullFault makes pulls of a pool's exporter or runtime image fail for a while. Its
// instances wait in ImagePullBackOff (Degraded ImagePullFailed) and, past the class's
// startupDeadline, are replaced under the failure backoff.
func (wk *Walk) imagePullFault(ctx context.Context) (string, bool, error) {
	p := wk.pickPool()
	role := []string{"exporter", "runtime"}[wk.rng.Intn(2)]
	d := wk.faultDuration()
	image, err := wk.poolImage(ctx, p, role)
	if apierrors.IsNotFound(err) {
		return "", true, nil
	}
	if err != nil || wk.f.pulls[image] != nil {
		return "", err == nil, err
	}
	wk.w.sim.SetImagePullError(image, "")
	wk.f.pulls[image] = []string{p.set}
	wk.f.counts[FailImagePull]++
	key := "image pull " + image
	wk.markFailing(p.set, key, true)
	wk.later(d, "image pulls of "+image+" succeed again", func(context.Context) error {
		wk.clearPull(image)
		return nil
	})
	return fmt.Sprintf("%s: %s image %s fails to pull for %s", p.set, role, image, d), false, nil
}

func (wk *Walk) clearPull(image string) {
	sets, ok := wk.f.pulls[image]
	if !ok {
		return
	}
	wk.w.sim.ClearImagePullError(image)
	delete(wk.f.pulls, image)
	for _, s := range sets {
		wk.markFailing(s, "image pull "+image, false)
	}
}

// crashFault makes a pool's runtime or exporter crash for a while: a native-sidecar runtime
// crash-loops (CrashLoopBackOff, Pod Running), a regular container terminates with Error or
// OOMKilled (the Pod Failed when it was the last one running).
func (wk *Walk) crashFault(ctx context.Context) (string, bool, error) {
	p := wk.pickPool()
	role := []string{"exporter", "runtime"}[wk.rng.Intn(2)]
	crash := jumpsim.Crash{ExitCode: 1, Reason: "Error", Message: "soak: injected crash"}
	if wk.rng.Intn(3) == 0 {
		crash.ExitCode, crash.Reason = 137, "OOMKilled"
	}
	if wk.rng.Intn(2) == 0 {
		crash.After = time.Duration(1+wk.rng.Intn(3)) * time.Second // ready first, then dies
	}
	d := wk.faultDuration()
	image, err := wk.poolImage(ctx, p, role)
	if apierrors.IsNotFound(err) {
		return "", true, nil
	}
	if err != nil || wk.f.crashes[image] != nil {
		return "", err == nil, err
	}
	kind := FailCrashError
	switch {
	case role == "runtime" && p.sidecar:
		kind = FailCrashLoop
	case crash.Reason == "OOMKilled":
		kind = FailCrashOOM
	}
	wk.w.sim.SetCrash(image, crash)
	wk.f.crashes[image] = []string{p.set}
	wk.f.counts[kind]++
	wk.markFailing(p.set, "crash "+image, true)
	wk.later(d, "containers of "+image+" no longer crash", func(context.Context) error {
		wk.clearCrash(image)
		return nil
	})
	return fmt.Sprintf("%s: %s image %s crashes (%s, exit %d, after %s) for %s", p.set, role, image, kind, crash.ExitCode, crash.After, d), false, nil
}

func (wk *Walk) clearCrash(image string) {
	sets, ok := wk.f.crashes[image]
	if !ok {
		return
	}
	wk.w.sim.ClearCrash(image)
	delete(wk.f.crashes, image)
	for _, s := range sets {
		wk.markFailing(s, "crash "+image, false)
	}
}

// nodeFault breaks the one node for a few seconds: it loses its KVM devices (the class
// that asks for one becomes Unschedulable), gets a NoSchedule taint (every new Pod does),
// or drops off the network (Pods Unknown, NodeLost; deletions wait for its return). Every
// set is excused from the ceiling timer meanwhile: Pods on a lost node cannot finish.
func (wk *Walk) nodeFault(ctx context.Context) (string, bool, error) {
	if wk.f.node {
		return "", true, nil
	}
	d := time.Duration(3+wk.rng.Intn(8)) * time.Second
	var kind, what string
	var err error
	switch wk.rng.Intn(3) {
	case 0:
		kind, what = FailNoCapacity, "node has no "+string(jumpsim.KVMResource)
		capacity := jumpsim.DefaultNodeCapacity()
		delete(capacity, jumpsim.KVMResource)
		err = wk.w.sim.SetNodeCapacity(ctx, capacity)
	case 1:
		kind, what = FailTaint, "node tainted soak/maintenance:NoSchedule"
		err = wk.w.sim.SetNodeTaints(ctx, []corev1.Taint{{Key: "soak/maintenance", Effect: corev1.TaintEffectNoSchedule}})
	default:
		kind, what = FailNodeLoss, "node lost"
		err = wk.w.sim.LoseNode(ctx)
	}
	wk.f.node = true
	wk.f.counts[kind]++
	wk.w.checker.NoteReset("") // lost instances are replaced without counting as failures
	wk.w.checker.Excuse("", d+2*excuseSlack)
	wk.later(d, "node repaired ("+kind+")", wk.repairNode)
	return fmt.Sprintf("%s for %s", what, d), false, err
}

// repairNode undoes every node fault.
func (wk *Walk) repairNode(ctx context.Context) error {
	if err := wk.w.sim.RestoreNode(ctx); err != nil {
		return err
	}
	if err := wk.w.sim.SetNodeTaints(ctx, nil); err != nil {
		return err
	}
	if err := wk.w.sim.SetNodeCapacity(ctx, jumpsim.DefaultNodeCapacity()); err != nil {
		return err
	}
	if wk.f.node {
		wk.w.checker.NoteReset("")
	}
	wk.f.node = false
	return nil
}

// evictPod evicts a bound, non-terminal Pod, leased or not, as the kubelet's eviction
// manager does under memory pressure.
func (wk *Walk) evictPod(ctx context.Context) (string, bool, error) {
	var list corev1.PodList
	if err := wk.w.c.List(ctx, &list, client.InNamespace(wk.w.ns)); err != nil {
		return "", false, err
	}
	setOf := map[string]string{}
	var names []string
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending) {
			names = append(names, p.Name)
			setOf[p.Name] = p.Labels[expool.LabelSet]
		}
	}
	if len(names) == 0 {
		return "", true, nil
	}
	name := wk.pickName(names)
	wk.w.checker.NoteDisruption(setOf[name])
	err := wk.w.sim.EvictPod(ctx, wk.w.ns, name, "")
	if err != nil && (apierrors.IsNotFound(err) || strings.Contains(err.Error(), "already")) {
		return "", true, nil
	}
	wk.f.counts[FailEviction]++
	return name, false, err
}

// noteDisruption tells the checker that the set of Pod name is about to lose it: its
// replacement is the walk's doing, not churn.
func (wk *Walk) noteDisruption(ctx context.Context, name string) {
	var pod corev1.Pod
	if err := wk.w.c.Get(ctx, client.ObjectKey{Namespace: wk.w.ns, Name: name}, &pod); err == nil {
		wk.w.checker.NoteDisruption(pod.Labels[expool.LabelSet])
	}
}

// notRegistering makes one exporter unable to register (a bad endpoint, CA or token) for a
// while: its instance is NotRegistering, and replaced once past the startup deadline.
func (wk *Walk) notRegistering(ctx context.Context) (string, bool, error) {
	exporters, err := wk.exporters(ctx)
	if err != nil {
		return "", false, err
	}
	var names []string
	for _, e := range exporters {
		if e.DeletionTimestamp == nil && !wk.f.unreg[e.Name] {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 || len(wk.f.unreg) >= 2 {
		return "", true, nil
	}
	name := wk.pickName(names)
	d := time.Duration(3+wk.rng.Intn(15)) * time.Second
	wk.w.sim.SetNotRegistering(wk.w.ns, name, "soak: x509: certificate signed by unknown authority")
	wk.f.unreg[name] = true
	wk.f.counts[FailNotRegistering]++
	wk.later(d, name+" may register again", func(context.Context) error {
		wk.clearNotRegistering(name)
		return nil
	})
	return fmt.Sprintf("%s for %s", name, d), false, nil
}

func (wk *Walk) clearNotRegistering(name string) {
	if wk.f.unreg[name] {
		wk.w.sim.ClearNotRegistering(wk.w.ns, name)
		delete(wk.f.unreg, name)
	}
}

// slowStart delays Pod starts and registrations for a while, well within the startup
// deadline, as a loaded node or a slow controller would.
func (wk *Walk) slowStart(context.Context) (string, bool, error) {
	if wk.f.slow {
		return "", true, nil
	}
	start := time.Duration(500+wk.rng.Intn(2500)) * time.Millisecond
	reg := time.Duration(500+wk.rng.Intn(2500)) * time.Millisecond
	d := time.Duration(5+wk.rng.Intn(15)) * time.Second
	wk.w.sim.SetPodStartDelay(start)
	wk.w.sim.SetRegistrationDelay(reg)
	wk.f.slow = true
	wk.f.counts[FailSlowStart]++
	wk.later(d, "normal start speed again", func(context.Context) error {
		wk.clearSlowStart()
		return nil
	})
	return fmt.Sprintf("pods start after %s, exporters register %s later, for %s", start, reg, d), false, nil
}

func (wk *Walk) clearSlowStart() {
	wk.w.sim.SetPodStartDelay(0)
	wk.w.sim.SetRegistrationDelay(0)
	wk.f.slow = false
}

// clearFailures turns off every simulator fault the walk left on (quiesce runs the
// deferred clears first; this is the safety net).
func (wk *Walk) clearFailures(ctx context.Context) error {
	for _, image := range sortedKeys(wk.f.pulls) {
		wk.clearPull(image)
	}
	for _, image := range sortedKeys(wk.f.crashes) {
		wk.clearCrash(image)
	}
	for _, name := range sortedKeys(wk.f.unreg) {
		wk.clearNotRegistering(name)
	}
	wk.clearSlowStart()
	wk.clearRemoteCut()
	return wk.repairNode(ctx)
}

// FailureEvents returns the failure events injected, by kind, and their total.
func (wk *Walk) FailureEvents() (map[string]int, int) {
	out := map[string]int{}
	total := 0
	for k, n := range wk.f.counts {
		out[k] = n
		total += n
	}
	return out, total
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
