package jumpsim

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// terminationExitCode is what a container killed by SIGTERM on Pod deletion exits with.
const terminationExitCode = 143

// kubelet is the simulated node agent. It owns Pod status (and binding); everything it
// decides comes from the apiserver, except which lease ends a restartPolicy Always Pod has
// already restarted for.
type kubelet struct {
	s       *Simulator
	mu      sync.Mutex
	handled map[string]bool // "<pod UID>/<lease UID>"
	seen    *sightings      // for the start delay
	dying   *sightings      // for the termination delay
	// containers holds, per Pod UID and container name, what a kubelet keeps in memory
	// about a container: crash-loop back-off and failed image pulls.
	containers map[types.UID]map[string]*containerMemory
}

func (k *kubelet) wasHandled(pod, lease types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.handled[string(pod)+"/"+string(lease)]
}

func (k *kubelet) markHandled(pod, lease types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.handled[string(pod)+"/"+string(lease)] = true
}

func (s *Simulator) setupKubelet() error {
	k := s.kube
	b := builder.ControllerManagedBy(s.mgr).
		Named("jumpsim-kubelet").
		For(&corev1.Pod{}).
		// A lease ending may make an exporter process exit.
		Watches(&jsv1.Lease{}, handler.EnqueueRequestsFromMapFunc(k.podsOfLeaseExporter)).
		// Secrets and ConfigMaps appearing let waiting Pods start; config changes matter too.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(k.podsReferencing("secret"))).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(k.podsReferencing("configmap"))).
		WatchesRawSource(source.Channel(s.podPokes, &handler.EnqueueRequestForObject{}))
	if err := b.Complete(reconcile.Func(k.reconcile)); err != nil {
		return fmt.Errorf("jumpsim: setting up kubelet: %w", err)
	}
	return nil
}

func (k *kubelet) podsReferencing(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var pods corev1.PodList
		key := podRequirement{kind: kind, name: obj.GetName()}.indexKey()
		if err := k.s.client.List(ctx, &pods, client.InNamespace(obj.GetNamespace()), client.MatchingFields{indexPodRefs: key}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(pods.Items))
		for i := range pods.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])})
		}
		return out
	}
}

func (k *kubelet) podsOfLeaseExporter(ctx context.Context, obj client.Object) []reconcile.Request {
	l := obj.(*jsv1.Lease)
	if !l.Status.Ended || l.Status.ExporterRef == nil {
		return nil
	}
	uid, _, ok := controllerUID(l, "Exporter")
	if !ok {
		var ex jsv1.Exporter
		if err := k.s.client.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: l.Status.ExporterRef.Name}, &ex); err != nil {
			return nil
		}
		uid = ex.UID
	}
	pods, err := k.s.controlledPods(ctx, l.Namespace, uid)
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(pods))
	for i := range pods {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods[i])})
	}
	return out
}

func (k *kubelet) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pod corev1.Pod
	if err := k.s.client.Get(ctx, req.NamespacedName, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			k.s.forgetPod(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	res, err := k.sync(ctx, &pod)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, k.s.reconcileError("kubelet", "Pod", req.NamespacedName, err)
	}
	return res, nil
}

// sync plays the scheduler (for unbound Pods) and the kubelet (for bound ones) on pod, in
// the order a real node goes: binding, start delay, volumes, image pulls, containers
// running, then crashes, lease ends and deletion. While the node is lost only the node
// lifecycle controller's marking happens.
func (k *kubelet) sync(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	k.s.observePod(pod)
	lost, _ := k.s.node.isLost()
	onLostNode := lost && pod.Spec.NodeName == k.s.node.name
	if pod.DeletionTimestamp != nil {
		k.seen.forget(pod.UID)
		if onLostNode {
			return reconcile.Result{}, nil // no kubelet confirms the deletion
		}
		return k.finalize(ctx, pod)
	}
	if isTerminal(pod) {
		k.forgetPodState(pod.UID)
		return reconcile.Result{}, nil
	}
	if pod.Spec.NodeName == "" {
		return k.schedule(ctx, pod)
	}
	if onLostNode {
		return reconcile.Result{}, k.markNodeLost(ctx, pod)
	}
	switch pod.Status.Phase {
	case corev1.PodUnknown:
		return reconcile.Result{}, k.recoverFromNodeLoss(ctx, pod)
	case corev1.PodRunning:
		if msg, ok := k.s.hooks.exitMessage(pod); ok {
			return reconcile.Result{}, k.exitAfterHook(ctx, pod, msg)
		}
		if l, ok := k.s.exitedAfterLease(ctx, pod); ok {
			return reconcile.Result{}, k.exitAfterLease(ctx, pod, l)
		}
		return k.syncCrashes(ctx, pod)
	}
	if delay := k.s.podStartDelay(); delay > 0 {
		if d := time.Until(k.seen.first(pod.UID).Add(delay)); d > 0 {
			return reconcile.Result{RequeueAfter: d}, nil
		}
	}
	k.seen.forget(pod.UID)
	if fail := k.s.opts.podFailure; fail != nil && fail(pod) {
		return reconcile.Result{}, k.terminate(ctx, pod, 1, "Error", "jumpsim: simulated failure (WithPodFailure)")
	}
	if k.s.opts.mountChecks {
		reason, message, ok, err := k.s.unmetRequirement(ctx, pod)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !ok {
			return reconcile.Result{}, k.wait(ctx, pod, reason, message)
		}
	}
	if res, blocked, err := k.pullImages(ctx, pod); blocked || err != nil {
		return res, err
	}
	return reconcile.Result{}, k.run(ctx, pod)
}

// schedule plays kube-scheduler for an unbound Pod: bind it when the node fits, else
// report it Unschedulable with the scheduler's message.
func (k *kubelet) schedule(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	if err := k.s.buildAccounting(ctx); err != nil {
		return reconcile.Result{}, err
	}
	fits, message := k.s.reserve(pod)
	if !fits {
		return reconcile.Result{RequeueAfter: unschedulableRetry}, k.markUnschedulable(ctx, pod, message)
	}
	// Bind first, as the scheduler would: the apiserver then leaves graceful deletion
	// to the kubelet, as on a real node. The update event brings the Pod back here.
	if err := k.bind(ctx, pod); err != nil {
		k.s.forgetPod(client.ObjectKeyFromObject(pod)) // release the reservation
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// markUnschedulable sets PodScheduled=False, reason Unschedulable, as kube-scheduler does
// for a Pod no node fits; the Pod stays Pending.
func (k *kubelet) markUnschedulable(ctx context.Context, pod *corev1.Pod, message string) error {
	wrote, err := k.s.writeStatus(ctx, pod, func() bool {
		if pod.Spec.NodeName != "" {
			return false
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == reasonUnschedulable && c.Message == message {
				return false
			}
		}
		setPodCondition(&pod.Status, corev1.PodScheduled, corev1.ConditionFalse, reasonUnschedulable, message, metav1.Now())
		if pod.Status.Phase == "" {
			pod.Status.Phase = corev1.PodPending
		}
		return true
	})
	if wrote {
		k.s.record("scheduler", ActionPodUnschedulable, "Pod", pod.Namespace, pod.Name, "%s", message)
	}
	return err
}

func (k *kubelet) bind(ctx context.Context, pod *corev1.Pod) error {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: k.s.opts.nodeName},
	}
	err := k.s.client.SubResource("binding").Create(ctx, pod, b)
	if apierrors.IsConflict(err) {
		return nil // already bound
	}
	if err == nil {
		k.s.record("kubelet", ActionPodBound, "Pod", pod.Namespace, pod.Name, "bound to node %s", k.s.opts.nodeName)
	}
	return err
}

// setStatus writes a Pod status computed from the Pod as last read, unless the Pod has
// reached a terminal phase meanwhile (a kubelet never leaves one).
func (k *kubelet) setStatus(ctx context.Context, pod *corev1.Pod, build func(*corev1.Pod) corev1.PodStatus) (bool, error) {
	return k.s.writeStatus(ctx, pod, func() bool {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return false
		}
		st := build(pod)
		if equality.Semantic.DeepEqual(ignoreTimes(st), ignoreTimes(pod.Status)) {
			return false
		}
		pod.Status = st
		return true
	})
}

// ignoreTimes blanks the time stamps that every build sets anew, so an unchanged status is
// not rewritten.
func ignoreTimes(st corev1.PodStatus) corev1.PodStatus {
	st = *st.DeepCopy()
	st.StartTime = nil
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return st
}

func (k *kubelet) wait(ctx context.Context, pod *corev1.Pod, reason, message string) error {
	wrote, err := k.setStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus {
		return waitingStatus(p, reason, message, metav1.Now())
	})
	if wrote {
		k.s.record("kubelet", ActionPodWaiting, "Pod", pod.Namespace, pod.Name, "%s: %s", reason, message)
	}
	return err
}

func (k *kubelet) run(ctx context.Context, pod *corev1.Pod) error {
	if container, msg := k.s.exporterConfigFailure(ctx, pod); msg != "" && pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		wrote, err := k.setStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus { return configFailedStatus(p, container, msg) })
		if wrote {
			k.forgetPodState(pod.UID)
			k.s.record("kubelet", ActionPodFailed, "Pod", pod.Namespace, pod.Name, "container %s exited with code 1: %s", container, msg)
		}
		return err
	}
	wrote, err := k.setStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus {
		if p.Status.Phase == corev1.PodRunning {
			return p.Status
		}
		return runningStatus(p, metav1.Now())
	})
	if wrote {
		k.s.record("kubelet", ActionPodRunning, "Pod", pod.Namespace, pod.Name, "running on %s", pod.Spec.NodeName)
	}
	return err
}

// terminate moves a Pod to its terminal phase: Succeeded for exit code 0, else Failed.
func (k *kubelet) terminate(ctx context.Context, pod *corev1.Pod, exitCode int32, reason, message string) error {
	wrote, err := k.setStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus {
		return terminalStatus(p, exitCode, reason, message, metav1.Now())
	})
	if wrote {
		k.forgetPodState(pod.UID)
		action := ActionPodSucceeded
		if exitCode != 0 {
			action = ActionPodFailed
		}
		k.s.record("kubelet", action, "Pod", pod.Namespace, pod.Name, "exit code %d: %s", exitCode, message)
	}
	return err
}

// exitAfterLease ends the exporter process of pod after lease l: the Pod completes, or under
// restartPolicy Always its container restarts.
func (k *kubelet) exitAfterLease(ctx context.Context, pod *corev1.Pod, l *jsv1.Lease) error {
	message := fmt.Sprintf("exporter exited after lease %s ended (exitOnLeaseEnd)", l.Name)
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		return k.terminate(ctx, pod, 0, "Completed", message)
	}
	src, _ := findConfigSource(pod)
	wrote, err := k.s.writeStatus(ctx, pod, func() bool {
		if pod.Status.Phase != corev1.PodRunning {
			return false
		}
		pod.Status = restartedStatus(pod, src.container, metav1.Now())
		return true
	})
	if err == nil {
		k.markHandled(pod.UID, l.UID)
	}
	if wrote {
		k.s.record("kubelet", ActionPodRestarted, "Pod", pod.Namespace, pod.Name, "%s; restarted (restartPolicy Always)", message)
		if uid, name, ok := controllerUID(pod, "Exporter"); ok {
			// The new process registers again: let presence see it.
			ex := &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name, UID: uid}}
			k.s.poke(ctx, k.s.exporterPokes, ex)
		}
	}
	return err
}

// finalize finishes a graceful deletion. The apiserver deletes unbound and terminal Pods at
// once, but leaves a bound, running one Terminating until its kubelet has stopped the
// containers and deleted it with grace period 0.
func (k *kubelet) finalize(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	if pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0 {
		return reconcile.Result{}, nil // done on our side; the apiserver waits for finalizers
	}
	if k.s.opts.podTermDelay > 0 {
		// Measured from when the kubelet saw the deletion: deletionTimestamp has second
		// precision.
		if d := time.Until(k.dying.first(pod.UID).Add(k.s.opts.podTermDelay)); d > 0 {
			return reconcile.Result{RequeueAfter: d}, nil
		}
	}
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.Spec.NodeName != "" {
		// Since Kubernetes 1.27 a kubelet reports the terminal phase before the deletion.
		if err := k.terminate(ctx, pod, terminationExitCode, "Error", "jumpsim: terminated by pod deletion"); err != nil {
			return reconcile.Result{}, err
		}
	}
	uid := pod.UID
	err := k.s.client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid})
	if err == nil || apierrors.IsNotFound(err) {
		k.dying.forget(uid)
	}
	if err == nil {
		k.s.record("kubelet", ActionPodFinalized, "Pod", pod.Namespace, pod.Name, "deleted with grace period 0")
	}
	if apierrors.IsConflict(err) {
		return reconcile.Result{}, nil // a different Pod by now
	}
	return reconcile.Result{}, client.IgnoreNotFound(err)
}

// FailPod fails the Pod namespace/name now (phase Failed, containers exited with code 1),
// as a crashed exporter under restartPolicy Never does.
func (s *Simulator) FailPod(ctx context.Context, namespace, name string) error {
	var pod corev1.Pod
	if err := s.direct.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &pod); err != nil {
		return err
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return fmt.Errorf("jumpsim: pod %s/%s already %s", namespace, name, pod.Status.Phase)
	}
	return s.kube.terminate(ctx, &pod, 1, "Error", "jumpsim: FailPod")
}
