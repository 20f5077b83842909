package jumpsim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reasonNodeLost is the Pod status reason Kubernetes used for Pods on an unreachable node
// (kubectl still prints such Pods as "Unknown").
const reasonNodeLost = "NodeLost"

// markNodeLost does, for a Pod on the lost node, what the node lifecycle controller does
// (Ready=False), plus phase Unknown with reason NodeLost for a Pod that was Running (see
// LoseNode). A Pod that was not running only loses readiness it did not have.
func (k *kubelet) markNodeLost(ctx context.Context, pod *corev1.Pod) error {
	wrote, err := k.s.writeStatus(ctx, pod, func() bool {
		if pod.Status.Phase != corev1.PodRunning {
			return false
		}
		now := metav1.Now()
		pod.Status.Phase = corev1.PodUnknown
		pod.Status.Reason = reasonNodeLost
		pod.Status.Message = fmt.Sprintf("Node %s which was running pod %s is unresponsive", pod.Spec.NodeName, pod.Name)
		reason, message := "", ""
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				reason, message = c.Reason, c.Message
			}
		}
		setPodCondition(&pod.Status, corev1.PodReady, corev1.ConditionFalse, reason, message, now)
		return true
	})
	if wrote {
		k.s.record("node", ActionPodNodeLost, "Pod", pod.Namespace, pod.Name, "%s", pod.Status.Message)
	}
	return err
}

// recoverFromNodeLoss is the kubelet reporting again after its node came back: the Pod is
// Running again, Ready as its containers are.
func (k *kubelet) recoverFromNodeLoss(ctx context.Context, pod *corev1.Pod) error {
	wrote, err := k.s.writeStatus(ctx, pod, func() bool {
		if pod.Status.Phase != corev1.PodUnknown {
			return false
		}
		pod.Status.Phase, pod.Status.Reason, pod.Status.Message = corev1.PodRunning, "", ""
		setReadiness(&pod.Status, pod, metav1.Now())
		return true
	})
	if wrote {
		k.s.record("kubelet", ActionPodRunning, "Pod", pod.Namespace, pod.Name, "node %s reachable again", pod.Spec.NodeName)
	}
	return err
}
