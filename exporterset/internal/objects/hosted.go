package objects

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

// Hosted instances (provisioner.HostedProvisioner) run their exporter on a lab host, with no
// Pod. The controllers treat the host's unit as the instance's Pod, so every rule that reads
// a Pod's phase (recycling, renewal in place, the lease-wait rule, diagnosis, the status
// counters) reads the unit's state the same way: the set controller shows the unit to them as
// a Pod that exists only in memory (UnitPod), never written to the API server.

// UnitPodContainer is the one container of a unit's Pod, named for events and conditions.
const UnitPodContainer = "exporter"

// Hosted reports whether p runs its instances' exporters outside any Pod.
func Hosted(p provisioner.Provisioner) bool {
	_, ok := p.(provisioner.HostedProvisioner)
	return ok
}

// UnitUID names the unit e's last create made: the Exporter's UID and the create's record
// (AnnotationExternalRecorded), so a unit made again after a restart is a different "Pod"
// (a renewal's mark, a broken Pod's restart, name one unit only). "" when none was recorded.
func UnitUID(e *jumpstarterv1alpha1.Exporter) types.UID {
	rec := e.Annotations[AnnotationExternalRecorded]
	if rec == "" {
		return ""
	}
	return types.UID(string(e.UID) + "/" + rec)
}

// UnitPod is the Pod the unit of e in state st reads as, nil when there is none: nothing
// recorded, the state unknown (the host did not answer, so the set is held anyway), or Gone.
// Pending reads as a scheduled Pending Pod; Ready as a Running, ready one; Exited as a Pod
// that Succeeded (the exporter exited after its lease); Failed as a Pod that failed, with
// the state's reason and message (diagnosis reports the external problem first).
func UnitPod(e *jumpstarterv1alpha1.Exporter, st *provisioner.ExternalState) *corev1.Pod {
	uid := UnitUID(e)
	if uid == "" || st == nil || st.Phase == provisioner.ExternalGone {
		return nil
	}
	created, err := time.Parse(time.RFC3339Nano, e.Annotations[AnnotationExternalRecorded])
	if err != nil {
		created = e.CreationTimestamp.Time
	}
	at := metav1.NewTime(created)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: e.Name, Namespace: e.Namespace, UID: uid, CreationTimestamp: at,
			Labels:          map[string]string{pool.LabelSet: e.Labels[pool.LabelSet], pool.LabelSpecHash: e.Labels[pool.LabelSpecHash]},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(e, jumpstarterv1alpha1.GroupVersion.WithKind("Exporter"))},
		},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: UnitPodContainer}}},
	}
	status := corev1.ContainerStatus{Name: UnitPodContainer}
	switch st.Phase {
	case provisioner.ExternalPending:
		pod.Status.Phase = corev1.PodPending
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		status.State.Waiting = &corev1.ContainerStateWaiting{Reason: st.Reason, Message: st.Message}
	case provisioner.ExternalReady:
		pod.Status.Phase = corev1.PodRunning
		pod.Status.StartTime = &at
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		status.Ready, status.Started = true, new(true)
		status.State.Running = &corev1.ContainerStateRunning{StartedAt: at}
	case provisioner.ExternalExited:
		pod.Status.Phase = corev1.PodSucceeded
		status.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: st.Message}
	default: // Failed, or a phase this controller does not know: not a working unit
		pod.Status.Phase = corev1.PodFailed
		pod.Status.Reason, pod.Status.Message = st.Reason, st.Message
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{status}
	return pod
}
