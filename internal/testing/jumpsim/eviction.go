package jumpsim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Eviction wording, as the kubelet's eviction manager reports it.
const (
	reasonEvicted = "Evicted"
	// DefaultEvictionMessage is the kubelet's message for a node running out of memory,
	// used by EvictPod when given none (the trailing space is the kubelet's).
	DefaultEvictionMessage = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 92160Ki. "
	// evictedExitCode is what a container killed at once (hard eviction: SIGKILL) exits with.
	evictedExitCode = 137
)

// EvictPod evicts the bound, running or pending Pod namespace/name as the kubelet's
// eviction manager does under node pressure: phase Failed, reason Evicted, message (empty:
// [DefaultEvictionMessage]), a DisruptionTarget=True condition (reason
// TerminationByKubelet, the same message), its running containers killed (terminated,
// exit code 137, reason Error) and Ready=False. The Pod object stays, as evicted Pods do,
// until someone deletes it.
func (s *Simulator) EvictPod(ctx context.Context, namespace, name, message string) error {
	if message == "" {
		message = DefaultEvictionMessage
	}
	var pod corev1.Pod
	if err := s.direct.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &pod); err != nil {
		return err
	}
	if isTerminal(&pod) {
		return fmt.Errorf("jumpsim: pod %s/%s already %s", namespace, name, pod.Status.Phase)
	}
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("jumpsim: pod %s/%s is not bound to a node: only a kubelet evicts", namespace, name)
	}
	wrote, err := s.writeStatus(ctx, &pod, func() bool {
		if isTerminal(&pod) {
			return false
		}
		pod.Status = evictedStatus(&pod, message, metav1.Now())
		return true
	})
	if wrote {
		s.observePod(&pod)
		s.kube.forgetPodState(pod.UID)
		s.record("kubelet", ActionPodEvicted, "Pod", namespace, name, "%s", message)
	}
	return err
}

// evictedStatus is the status the kubelet writes for a Pod it evicted.
func evictedStatus(pod *corev1.Pod, message string, now metav1.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	st.Phase, st.Reason, st.Message = corev1.PodFailed, reasonEvicted, message
	kill := func(list []corev1.ContainerStatus) {
		for i := range list {
			cs := &list[i]
			cs.Ready, cs.Started = false, ptr.To(false)
			if r := cs.State.Running; r != nil {
				cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: evictedExitCode, Reason: "Error", StartedAt: r.StartedAt, FinishedAt: now, ContainerID: cs.ContainerID,
				}}
			}
		}
	}
	kill(st.InitContainerStatuses)
	kill(st.ContainerStatuses)
	setPodCondition(&st, corev1.DisruptionTarget, corev1.ConditionTrue, corev1.PodReasonTerminationByKubelet, message, now)
	setPodCondition(&st, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", now)
	setPodCondition(&st, corev1.ContainersReady, corev1.ConditionFalse, "PodFailed", "", now)
	setPodCondition(&st, corev1.PodReady, corev1.ConditionFalse, "PodFailed", "", now)
	return st
}
