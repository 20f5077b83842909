package soak

import (
	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// The checker's own diagnosis of instance failures, written from the documented Pod status
// rules (not by calling the reconciler), so that the Available cross-check does not trust
// the code it judges. It sees only what a Pod's status shows at once: a failed, evicted or
// lost Pod, an unschedulable one, a container that cannot pull its image, crash-loops or
// terminated with an error. It leaves out the time-based problems (NotRegistering, a passed
// startup deadline): those concern instances that are not ready, which never count as
// available anyway. So it finds a subset of the reconciler's problems, and a pool it judges
// short is short by the reconciler's rule too.

var (
	pullReasons   = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true, "ErrImageInspect": true}
	createReasons = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true, "PreCreateHookError": true, "PostStartHookError": true}
)

// instanceProblem returns the failure reason of an instance, "" when none: instances on
// their way out (deleting, retiring) have none, as they no longer count, nor have
// quarantined ones (marked and disabled), kept for inspection: an exit there is why they were
// quarantined (onFailure exit), not a failure of the pool; otherwise it is read from the
// newest Pod not being deleted.
func instanceProblem(in *expool.Instance) vtv1alpha1.ConditionReason {
	_, marked := in.Exporter.Annotations[quarantinedKey]
	if in.Deleting() || in.Retiring() || marked && !in.Exporter.IsEnabled() {
		return ""
	}
	var cur *corev1.Pod
	for _, p := range in.Pods {
		if p.DeletionTimestamp == nil && (cur == nil || cur.CreationTimestamp.Before(&p.CreationTimestamp)) {
			cur = p
		}
	}
	if cur == nil {
		return ""
	}
	return podFailure(cur)
}

// podFailure is the failure a Pod's status shows, "" when none.
func podFailure(pod *corev1.Pod) vtv1alpha1.ConditionReason {
	switch pod.Status.Phase {
	case corev1.PodFailed:
		if pod.Status.Reason == "Evicted" {
			return vtv1alpha1.ReasonEvicted
		}
		return vtv1alpha1.ReasonTargetCrashing
	case corev1.PodSucceeded:
		return "" // exited after its lease: recycling
	case corev1.PodUnknown:
		return vtv1alpha1.ReasonNodeLost
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return vtv1alpha1.ReasonUnschedulable
		}
	}
	statuses := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return vtv1alpha1.ReasonTargetCrashing
		}
		if w := cs.State.Waiting; w != nil {
			switch {
			case pullReasons[w.Reason]:
				return vtv1alpha1.ReasonImagePullFailed
			case w.Reason == "CrashLoopBackOff":
				return vtv1alpha1.ReasonTargetCrashing
			case createReasons[w.Reason]:
				return vtv1alpha1.ReasonContainerCreateFailed
			}
		}
	}
	return ""
}

// diagnosed is the checker's own diagnosis of the instances, passed to
// expool.ComputeStatus so that it leaves failing instances out of availableReplicas as
// the reconciler does.
func diagnosed(instances []*expool.Instance) expool.Problems {
	out := expool.Problems{}
	for _, in := range instances {
		if r := instanceProblem(in); r != "" {
			out[in.Exporter.UID] = &expool.Problem{Reason: r}
		}
	}
	return out
}
