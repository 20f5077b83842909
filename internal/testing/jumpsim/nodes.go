package jumpsim

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
)

// KVMResource is the extended resource KubeVirt's device plugin advertises for /dev/kvm.
const KVMResource corev1.ResourceName = "devices.kubevirt.io/kvm"

// Node condition wording, as the kubelet and the node lifecycle controller report it.
const (
	nodeReadyReason    = "KubeletReady"
	nodeReadyMessage   = "kubelet is posting ready status"
	nodeUnknownReason  = "NodeStatusUnknown"
	nodeUnknownMessage = "Kubelet stopped posting node status."
	// taintUnreachable is what the node lifecycle controller puts on a node whose kubelet
	// stopped reporting; the scheduler then keeps new Pods off it.
	taintUnreachable = "node.kubernetes.io/unreachable"
)

// DefaultNodeCapacity returns the simulated node's default capacity (allocatable is the
// same). The one node stands in for a whole cluster, and the scale benchmark keeps
// thousands of Pods of the sample class (2 CPUs, 2Gi and one KVM device each) across its
// namespaces, so it is a hundred KubeVirt nodes' worth: KubeVirt's device plugin advertises
// 1k KVM devices per node.
func DefaultNodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("1M"),
		corev1.ResourceMemory:           resource.MustParse("1Pi"),
		corev1.ResourcePods:             resource.MustParse("100k"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Pi"),
		KVMResource:                     resource.MustParse("100k"),
	}
}

// simNode is the one node of the simulated cluster as the Simulator's scheduler and kubelet
// see it. It is the source of truth; the Node object in the apiserver mirrors it for
// observers (kubectl, the controller under test). Simulators sharing an apiserver share the
// Node object of a name but not this state: a test that changes the node should give its
// Simulator its own node name ([WithNodeName]).
type simNode struct {
	mu       sync.Mutex
	name     string
	capacity corev1.ResourceList
	alloc    map[corev1.ResourceName]int64 // see amount
	taints   []corev1.Taint
	lost     bool
	lostAt   time.Time
	acct     *accounting
}

func newSimNode(o options) *simNode {
	capacity := o.nodeCapacity
	if capacity == nil {
		capacity = DefaultNodeCapacity()
	}
	n := &simNode{name: o.nodeName, acct: newAccounting()}
	n.setCapacity(capacity)
	return n
}

func (n *simNode) setCapacity(list corev1.ResourceList) {
	n.capacity = list.DeepCopy()
	n.alloc = make(map[corev1.ResourceName]int64, len(list))
	for name, q := range list {
		n.alloc[name] = amount(name, q)
	}
}

// labels are the well-known labels a kubelet registers its node with.
func (n *simNode) labels() map[string]string {
	return map[string]string{
		"kubernetes.io/arch":     "amd64",
		"kubernetes.io/os":       "linux",
		"kubernetes.io/hostname": n.name,
	}
}

// effectiveTaints are the configured taints plus, while the node is lost, the unreachable
// taints the node lifecycle controller adds. Callers hold n.mu.
func (n *simNode) effectiveTaints() []corev1.Taint {
	out := append([]corev1.Taint(nil), n.taints...)
	if n.lost {
		added := metav1.NewTime(n.lostAt)
		out = append(out,
			corev1.Taint{Key: taintUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &added},
			corev1.Taint{Key: taintUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
	}
	return out
}

// isLost reports whether the node is lost and since when.
func (n *simNode) isLost() (bool, time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lost, n.lostAt
}

// nodeObject renders the node as a Node object.
func (n *simNode) nodeObject() *corev1.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := metav1.Now()
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: nodeReadyReason, Message: nodeReadyMessage}
	pressure := func(t corev1.NodeConditionType, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message}
	}
	conds := []corev1.NodeCondition{
		pressure(corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		pressure(corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		pressure(corev1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		ready,
	}
	for i := range conds {
		conds[i].LastHeartbeatTime, conds[i].LastTransitionTime = now, now
		if n.lost {
			// The node lifecycle controller turns every condition Unknown.
			conds[i].Status, conds[i].Reason, conds[i].Message = corev1.ConditionUnknown, nodeUnknownReason, nodeUnknownMessage
			conds[i].LastTransitionTime = metav1.NewTime(n.lostAt)
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels()},
		Spec:       corev1.NodeSpec{Taints: n.effectiveTaints()},
		Status: corev1.NodeStatus{
			Capacity:    n.capacity.DeepCopy(),
			Allocatable: n.capacity.DeepCopy(),
			Conditions:  conds,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: simHostIP},
				{Type: corev1.NodeHostName, Address: n.name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "v1.37.2-jumpsim",
				ContainerRuntimeVersion: "containerd://2.1.4", KernelVersion: "6.12.0", OSImage: "jumpsim",
			},
		},
	}
}

// publishNode writes the node's state to its Node object, creating it if needed. Failures
// (for example a user without rights on Nodes) are recorded, not fatal: the Simulator's
// scheduler works from its own state.
func (s *Simulator) publishNode(ctx context.Context) error {
	want := s.node.nodeObject()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur corev1.Node
		err := s.direct.Get(ctx, types.NamespacedName{Name: want.Name}, &cur)
		if apierrors.IsNotFound(err) {
			cur = corev1.Node{ObjectMeta: want.ObjectMeta, Spec: want.Spec}
			if err := s.direct.Create(ctx, &cur); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		cur.Labels = mergeLabels(cur.Labels, want.Labels)
		cur.Spec.Taints = want.Spec.Taints
		if err := s.direct.Update(ctx, &cur); err != nil {
			return err
		}
		cur.Status = want.Status
		return s.direct.Status().Update(ctx, &cur)
	})
	if err != nil {
		s.record("node", ActionError, "Node", "", want.Name, "publishing node: %v", err)
	}
	return err
}

func mergeLabels(have, want map[string]string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	for k, v := range want {
		have[k] = v
	}
	return have
}

// SetNodeCapacity replaces the node's capacity (and allocatable) by list at run time, as a
// node resized or a device plugin appearing or going would. Pending Pods are scheduled
// again at once; Pods already bound stay, even if they no longer fit (as on a real node).
func (s *Simulator) SetNodeCapacity(ctx context.Context, list corev1.ResourceList) error {
	s.node.mu.Lock()
	s.node.setCapacity(list)
	s.node.mu.Unlock()
	s.record("node", ActionNodeChanged, "Node", "", s.node.name, "capacity %s", describeResources(list))
	err := s.publishNode(ctx)
	s.retryUnschedulable()
	return err
}

// SetNodeTaints replaces the node's own taints (those LoseNode adds come on top). A Pod that
// does not tolerate a NoSchedule or NoExecute taint is not scheduled there; Pods already
// bound are not evicted (no taint manager is simulated).
func (s *Simulator) SetNodeTaints(ctx context.Context, taints []corev1.Taint) error {
	s.node.mu.Lock()
	s.node.taints = append([]corev1.Taint(nil), taints...)
	s.node.mu.Unlock()
	s.record("node", ActionNodeChanged, "Node", "", s.node.name, "%d taints", len(taints))
	err := s.publishNode(ctx)
	s.retryUnschedulable()
	return err
}

// LoseNode simulates the node dropping off the network. Real Kubernetes: the node lifecycle
// controller sees the kubelet stop posting status, turns the node's conditions Unknown
// ("Kubelet stopped posting node status."), taints it node.kubernetes.io/unreachable
// (NoSchedule and NoExecute) and marks its Pods Ready=False; after the NoExecute
// toleration (300s by default) their Pods are deleted, but stay Terminating until the node
// returns or is removed, as no kubelet confirms the deletion. kubectl shows such Pods
// "Unknown". The simulator does the same within a moment, except that it also sets the
// Pods' phase to Unknown (what the API reserves for "the node cannot be reached", and
// what the issue asks for) and does not delete them: the controller under test decides.
// The kubelet stops: nothing on the node progresses and deletions are not confirmed. The
// exporters in those Pods stop reporting and go Offline once they were last seen longer
// ago than the online timeout ([WithOnlineTimeout], one minute by default). New Pods stay
// Pending: the scheduler does not tolerate the unreachable taint.
func (s *Simulator) LoseNode(ctx context.Context) error {
	s.node.mu.Lock()
	if s.node.lost {
		s.node.mu.Unlock()
		return nil
	}
	s.node.lost, s.node.lostAt = true, time.Now()
	s.node.mu.Unlock()
	s.record("node", ActionNodeLost, "Node", "", s.node.name, "%s", nodeUnknownMessage)
	err := s.publishNode(ctx)
	s.pokePodsAsync(func(*corev1.Pod) bool { return true })
	return err
}

// RestoreNode brings a lost node back: its conditions turn Ready again, the unreachable
// taints go, and the kubelet reports its Pods again (phase Unknown back to Running, Ready
// as the containers are) and resumes its work, including pending deletions.
func (s *Simulator) RestoreNode(ctx context.Context) error {
	s.node.mu.Lock()
	if !s.node.lost {
		s.node.mu.Unlock()
		return nil
	}
	s.node.lost, s.node.lostAt = false, time.Time{}
	s.node.mu.Unlock()
	s.record("node", ActionNodeRestored, "Node", "", s.node.name, "kubelet posting ready status again")
	err := s.publishNode(ctx)
	s.pokePodsAsync(func(*corev1.Pod) bool { return true })
	s.pokeExportersAsync()
	return err
}

// describeResources formats a resource list in a stable order, for event records.
func describeResources(list corev1.ResourceList) string {
	names := make([]string, 0, len(list))
	for n := range list {
		names = append(names, string(n))
	}
	sort.Strings(names)
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		q := list[corev1.ResourceName(n)]
		out += fmt.Sprintf("%s=%s", n, q.String())
	}
	return out
}
