package jumpsim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// simHostIP is the address of the simulated node.
const simHostIP = "10.0.0.10"

// simPodIP derives a stable Pod address from its UID.
func simPodIP(uid types.UID) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	v := h.Sum32()
	return fmt.Sprintf("10.244.%d.%d", (v>>8)&0xff, 1+v%254)
}

func containerID(pod *corev1.Pod, name string, restarts int32) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d", pod.UID, name, restarts))
	return "containerd://" + hex.EncodeToString(sum[:])
}

func imageID(image string) string {
	sum := sha256.Sum256([]byte(image))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func isSidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// setPodCondition sets a Pod condition; lastTransitionTime moves only when the status does.
func setPodCondition(st *corev1.PodStatus, typ corev1.PodConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != typ {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = status, reason, message
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{
		Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: now,
	})
}

// base copies what a kubelet keeps across status updates (qosClass, which is immutable, and
// the conditions) and fills the node and Pod addresses.
func baseStatus(pod *corev1.Pod, now metav1.Time) corev1.PodStatus {
	st := corev1.PodStatus{
		QOSClass:   pod.Status.QOSClass,
		Conditions: append([]corev1.PodCondition(nil), pod.Status.Conditions...),
		HostIP:     simHostIP,
		HostIPs:    []corev1.HostIP{{IP: simHostIP}},
		StartTime:  pod.Status.StartTime,
	}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	setPodCondition(&st, corev1.PodScheduled, corev1.ConditionTrue, "", "", now)
	return st
}

// waitingStatus is a Pending Pod whose containers cannot be created yet.
func waitingStatus(pod *corev1.Pod, reason, message string, now metav1.Time) corev1.PodStatus {
	st := baseStatus(pod, now)
	st.Phase = corev1.PodPending
	waiting := func(c corev1.Container) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Started: ptr.To(false),
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
		}
	}
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, waiting(c))
	}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, waiting(c))
	}
	setPodCondition(&st, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", now)
	setPodCondition(&st, corev1.PodInitialized, corev1.ConditionFalse, "ContainersNotInitialized", "containers with incomplete status: "+reason, now)
	setPodCondition(&st, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", "containers with unready status", now)
	setPodCondition(&st, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", "containers with unready status", now)
	return st
}

// runningStatus is a Pod whose init containers completed (sidecars keep running) and whose
// containers all run and are ready.
func runningStatus(pod *corev1.Pod, now metav1.Time) corev1.PodStatus {
	st := baseStatus(pod, now)
	st.Phase = corev1.PodRunning
	ip := simPodIP(pod.UID)
	st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, startedInitContainer(pod, c, now))
	}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, runningContainer(pod, c, now))
	}
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		setPodCondition(&st, t, corev1.ConditionTrue, "", "", now)
	}
	return st
}

// runningContainer is a container that started now and is ready (no probes are simulated).
func runningContainer(pod *corev1.Pod, c corev1.Container, now metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: containerID(pod, c.Name, 0),
		Ready: true, Started: ptr.To(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
	}
}

// completedContainer is an init container that ran to completion.
func completedContainer(pod *corev1.Pod, c corev1.Container, now metav1.Time) corev1.ContainerStatus {
	id := containerID(pod, c.Name, 0)
	return corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: id,
		Ready: true, Started: ptr.To(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now, ContainerID: id,
		}},
	}
}

// terminalStatus is a Pod whose containers all terminated: Succeeded when exitCode is 0,
// else Failed. Containers that ran keep their start time.
func terminalStatus(pod *corev1.Pod, exitCode int32, reason, message string, now metav1.Time) corev1.PodStatus {
	st := baseStatus(pod, now)
	st.PodIP, st.PodIPs = pod.Status.PodIP, pod.Status.PodIPs
	phase, condReason := corev1.PodSucceeded, "PodCompleted"
	if exitCode != 0 {
		phase, condReason = corev1.PodFailed, "PodFailed"
	}
	st.Phase = phase
	if exitCode != 0 {
		st.Message = message
	}
	prev := map[string]corev1.ContainerStatus{}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		prev[cs.Name] = cs
	}
	terminated := func(c corev1.Container, code int32, why string) corev1.ContainerStatus {
		old := prev[c.Name]
		if old.State.Terminated != nil {
			old.Ready = false
			old.Started = ptr.To(false)
			return old
		}
		started := now
		if old.State.Running != nil {
			started = old.State.Running.StartedAt
		}
		id := containerID(pod, c.Name, old.RestartCount)
		return corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: id,
			RestartCount: old.RestartCount, Started: ptr.To(false), LastTerminationState: old.LastTerminationState,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: why, StartedAt: started, FinishedAt: now, ContainerID: id,
			}},
		}
	}
	// Completed init containers keep their status; sidecars are stopped after the main
	// containers and exit cleanly.
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, terminated(c, 0, "Completed"))
	}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, terminated(c, exitCode, reason))
	}
	setPodCondition(&st, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", now)
	setPodCondition(&st, corev1.PodInitialized, corev1.ConditionTrue, "", "", now)
	setPodCondition(&st, corev1.ContainersReady, corev1.ConditionFalse, condReason, "", now)
	setPodCondition(&st, corev1.PodReady, corev1.ConditionFalse, condReason, "", now)
	return st
}

// restartedStatus is a running Pod whose container name exited (code 0) and was restarted,
// as restartPolicy Always does.
func restartedStatus(pod *corev1.Pod, name string, now metav1.Time) corev1.PodStatus {
	return exitedStatus(pod, name, 0, "Completed", "", now)
}

// exitedStatus is restartedStatus for a container that exited with code, reason and
// message.
func exitedStatus(pod *corev1.Pod, name string, code int32, reason, message string, now metav1.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		if cs.Name != name {
			continue
		}
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, Message: message, StartedAt: started, FinishedAt: now, ContainerID: cs.ContainerID,
		}}
		cs.RestartCount++
		cs.ContainerID = containerID(pod, name, cs.RestartCount)
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	}
	return st
}

// statusOf finds a container's status by name in list.
func statusOf(list []corev1.ContainerStatus, name string) (corev1.ContainerStatus, bool) {
	for _, cs := range list {
		if cs.Name == name {
			return cs, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// setReadiness sets ContainersReady and Ready from the readiness of the containers that
// count for it (regular containers and native sidecars), worded as the kubelet does:
// "containers with unready status: [a b]".
func setReadiness(st *corev1.PodStatus, pod *corev1.Pod, now metav1.Time) {
	var unready []string
	for _, c := range pod.Spec.InitContainers {
		if cs, ok := statusOf(st.InitContainerStatuses, c.Name); isSidecar(c) && (!ok || !cs.Ready) {
			unready = append(unready, c.Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		if cs, ok := statusOf(st.ContainerStatuses, c.Name); !ok || !cs.Ready {
			unready = append(unready, c.Name)
		}
	}
	if len(unready) == 0 {
		setPodCondition(st, corev1.ContainersReady, corev1.ConditionTrue, "", "", now)
		setPodCondition(st, corev1.PodReady, corev1.ConditionTrue, "", "", now)
		return
	}
	message := fmt.Sprintf("containers with unready status: %v", unready)
	setPodCondition(st, corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", message, now)
	setPodCondition(st, corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", message, now)
}

// startedInitContainer is the status of an init container whose image is on the node: a
// native sidecar runs, any other has completed. One that got there earlier (while another
// image was pulled) keeps its status and times.
func startedInitContainer(pod *corev1.Pod, c corev1.Container, now metav1.Time) corev1.ContainerStatus {
	prev, had := statusOf(pod.Status.InitContainerStatuses, c.Name)
	switch {
	case isSidecar(c) && had && prev.State.Running != nil:
		return prev
	case isSidecar(c):
		return runningContainer(pod, c, now)
	case had && prev.State.Terminated != nil && prev.State.Terminated.ExitCode == 0:
		return prev
	}
	return completedContainer(pod, c, now)
}
