package jumpsim

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The scheduler's reasons, worded as kube-scheduler's filter plugins and preemption word them.
const (
	reasonUnschedulable   = "Unschedulable"
	msgUntoleratedTaint   = "node(s) had untolerated taint(s)"
	msgAffinityMismatch   = "node(s) didn't match Pod's node affinity/selector"
	msgTooManyPods        = "Too many pods"
	msgNoVictims          = "No preemption victims found for incoming pod"
	msgPreemptionHopeless = "Preemption is not helpful for scheduling"
)

// unschedulableRetry re-examines unschedulable Pods even without a cluster event, as
// kube-scheduler flushes its unschedulable queue; events (capacity, taints, Pods freeing
// resources) retry them at once.
const unschedulableRetry = 10 * time.Second

// accounting is the scheduler's running sum of the requests of the non-terminal Pods bound
// to the node, so a fit check costs O(resources), not a scan of the Pods. It is built from
// the cache on first use and kept current by every kubelet sync. Guarded by simNode.mu.
type accounting struct {
	built         bool
	bound         map[types.NamespacedName]podUsage
	used          map[corev1.ResourceName]int64 // see amount
	unschedulable map[types.NamespacedName]struct{}
}

type podUsage struct {
	uid types.UID
	req map[corev1.ResourceName]int64
}

func newAccounting() *accounting {
	return &accounting{
		bound:         map[types.NamespacedName]podUsage{},
		used:          map[corev1.ResourceName]int64{},
		unschedulable: map[types.NamespacedName]struct{}{},
	}
}

func (a *accounting) add(key types.NamespacedName, u podUsage) {
	a.bound[key] = u
	for r, v := range u.req {
		a.used[r] += v
	}
}

func (a *accounting) remove(key types.NamespacedName) bool {
	u, ok := a.bound[key]
	if !ok {
		return false
	}
	delete(a.bound, key)
	for r, v := range u.req {
		a.used[r] -= v
	}
	return true
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// observe brings the accounting up to date with pod as last read. It reports whether pod
// stopped counting, which may let unschedulable Pods fit. Callers hold n.mu.
func (n *simNode) observeLocked(pod *corev1.Pod) bool {
	a := n.acct
	key := client.ObjectKeyFromObject(pod)
	if pod.Spec.NodeName != "" {
		delete(a.unschedulable, key)
	}
	if pod.Spec.NodeName == n.name && !isTerminal(pod) {
		if u, ok := a.bound[key]; ok && u.uid == pod.UID {
			return false
		}
		freed := a.remove(key)
		a.add(key, podUsage{uid: pod.UID, req: podRequests(pod)})
		return freed
	}
	if pod.Spec.NodeName == "" && !isTerminal(pod) {
		// Reserved and being bound, the cache not showing the binding yet: keep counting
		// it, or another Pod could take its place meanwhile.
		return false
	}
	if u, ok := a.bound[key]; ok && u.uid == pod.UID {
		return a.remove(key)
	}
	return false
}

// observePod updates the accounting from a Pod the kubelet syncs and retries unschedulable
// Pods when it freed resources.
func (s *Simulator) observePod(pod *corev1.Pod) {
	s.node.mu.Lock()
	freed := s.node.acct.built && s.node.observeLocked(pod)
	s.node.mu.Unlock()
	if freed {
		s.retryUnschedulable()
	}
}

// forgetPod drops a Pod that is gone from the accounting.
func (s *Simulator) forgetPod(key types.NamespacedName) {
	s.node.mu.Lock()
	freed := s.node.acct.remove(key)
	delete(s.node.acct.unschedulable, key)
	s.node.mu.Unlock()
	if freed {
		s.retryUnschedulable()
	}
}

// buildAccounting fills the accounting from the cache, once. The lock is held across the
// (in-memory) list so no sync interleaves.
func (s *Simulator) buildAccounting(ctx context.Context) error {
	n := s.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.acct.built {
		return nil
	}
	var pods corev1.PodList
	if err := s.client.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range pods.Items {
		n.observeLocked(&pods.Items[i])
	}
	n.acct.built = true
	return nil
}

// reserve runs the scheduler's filters for pod against the node. When it fits, its requests
// are added to the accounting before it is bound, so concurrent syncs cannot overcommit;
// otherwise the Pod is remembered as unschedulable and the scheduler's message returned.
func (s *Simulator) reserve(pod *corev1.Pod) (bool, string) {
	n := s.node
	n.mu.Lock()
	defer n.mu.Unlock()
	key := client.ObjectKeyFromObject(pod)
	if u, ok := n.acct.bound[key]; ok && u.uid == pod.UID {
		return true, "" // reserved by an earlier pass whose binding the cache has not shown yet
	}
	var reasons []string
	hopeless := false
	switch {
	case !tolerates(pod.Spec.Tolerations, n.effectiveTaints()):
		reasons, hopeless = []string{msgUntoleratedTaint}, true
	case !matchesNode(pod, n.labels(), n.name):
		reasons, hopeless = []string{msgAffinityMismatch}, true
	default:
		req := podRequests(pod)
		reasons, hopeless = n.insufficient(req)
		if len(reasons) == 0 {
			delete(n.acct.unschedulable, key)
			n.acct.add(key, podUsage{uid: pod.UID, req: req})
			return true, ""
		}
	}
	n.acct.unschedulable[key] = struct{}{}
	return false, fitErrorMessage(reasons, hopeless)
}

// insufficient lists the resources the node lacks for req, as NodeResourcesFit words them,
// and whether one of them exceeds the node's allocatable outright: NodeResourcesFit then
// returns UnschedulableAndUnresolvable, and preemption, which could free only what other
// Pods use, is not tried ("Preemption is not helpful"; seen on a real kube-scheduler v1.37
// for a KVM request on a node without the device plugin and for 64 CPUs on a 2-CPU node).
// Callers hold n.mu.
func (n *simNode) insufficient(req map[corev1.ResourceName]int64) (out []string, unresolvable bool) {
	for r, v := range req {
		if v <= 0 {
			continue
		}
		if n.alloc[r]-n.acct.used[r] >= v {
			continue
		}
		if v > n.alloc[r] {
			unresolvable = true
		}
		if r == corev1.ResourcePods {
			out = append(out, msgTooManyPods)
		} else {
			out = append(out, "Insufficient "+string(r))
		}
	}
	return out, unresolvable
}

// fitErrorMessage is kube-scheduler's FitError message for a cluster of one node, with the
// default preemption plugin's verdict appended: no victims for resource shortages that other
// Pods cause (every Pod here has the same priority), hopeless for taints, affinity and
// requests beyond the node's allocatable.
func fitErrorMessage(reasons []string, hopeless bool) string {
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		parts = append(parts, "1 "+r)
	}
	sort.Strings(parts)
	preemption := msgNoVictims
	if hopeless {
		preemption = msgPreemptionHopeless
	}
	return fmt.Sprintf("0/1 nodes are available: %s. preemption: 0/1 nodes are available: 1 %s.", strings.Join(parts, ", "), preemption)
}

// retryUnschedulable schedules the unschedulable Pods again.
func (s *Simulator) retryUnschedulable() {
	s.node.mu.Lock()
	if len(s.node.acct.unschedulable) == 0 {
		s.node.mu.Unlock()
		return
	}
	keys := make(map[types.NamespacedName]struct{}, len(s.node.acct.unschedulable))
	for k := range s.node.acct.unschedulable {
		keys[k] = struct{}{}
	}
	s.node.mu.Unlock()
	s.pokePodsAsync(func(p *corev1.Pod) bool {
		_, ok := keys[client.ObjectKeyFromObject(p)]
		return ok
	})
}

// amount is how the scheduler counts a quantity: CPU in millicores, everything else in
// whole units (bytes, devices, Pods), rounded up. Milli-units of a petabyte would overflow.
func amount(r corev1.ResourceName, q resource.Quantity) int64 {
	if r == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// podRequests is the Pod's effective request (see amount), as the scheduler computes it:
// the regular containers' requests plus those of native sidecars, or the largest an init
// container needs while it runs beside the sidecars started before it, whichever is larger;
// plus the Pod overhead and one "pods" slot. A resource with a limit but no request
// requests its limit (the apiserver defaults it so; done here too for Pods it did not see).
func podRequests(pod *corev1.Pod) map[corev1.ResourceName]int64 {
	total := map[corev1.ResourceName]int64{}
	for _, c := range pod.Spec.Containers {
		addTo(total, containerRequests(c))
	}
	sidecars := map[corev1.ResourceName]int64{}
	initPeak := map[corev1.ResourceName]int64{}
	for _, c := range pod.Spec.InitContainers {
		req := containerRequests(c)
		running := map[corev1.ResourceName]int64{}
		if isSidecar(c) {
			addTo(total, req)
			addTo(sidecars, req)
			addTo(running, sidecars)
		} else {
			addTo(running, sidecars)
			addTo(running, req)
		}
		for r, v := range running {
			initPeak[r] = max(initPeak[r], v)
		}
	}
	for r, v := range initPeak {
		total[r] = max(total[r], v)
	}
	for r, q := range pod.Spec.Overhead {
		total[r] += amount(r, q)
	}
	total[corev1.ResourcePods]++
	return total
}

func containerRequests(c corev1.Container) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for r, q := range c.Resources.Requests {
		out[r] = amount(r, q)
	}
	for r, q := range c.Resources.Limits {
		if _, ok := out[r]; !ok {
			out[r] = amount(r, q)
		}
	}
	return out
}

func addTo(dst, src map[corev1.ResourceName]int64) {
	for r, v := range src {
		dst[r] += v
	}
}
