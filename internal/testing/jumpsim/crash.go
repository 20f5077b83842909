package jumpsim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// reasonCrashLoopBackOff is the waiting reason of a container the kubelet holds back from
// restarting.
const reasonCrashLoopBackOff = "CrashLoopBackOff"

// containerMemory is what the kubelet keeps in memory about one container: when its
// current run started, when it may restart, and how its image pulls went. It is lost with
// the Simulator; a restarted one picks the containers up from their status.
type containerMemory struct {
	started   time.Time // when the current run started
	restartAt time.Time // when it restarts from CrashLoopBackOff
	pullFails int       // failed pulls of its image
	pullAt    time.Time // when its image may be pulled again
}

// memory returns the kubelet's memory of a container, creating it.
func (k *kubelet) memory(pod types.UID, container string) *containerMemory {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.containers[pod]
	if m == nil {
		m = map[string]*containerMemory{}
		k.containers[pod] = m
	}
	c := m[container]
	if c == nil {
		c = &containerMemory{}
		m[container] = c
	}
	return c
}

// forgetPodState drops what the kubelet remembers of a Pod that ended or went.
func (k *kubelet) forgetPodState(pod types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.containers, pod)
}

// crashBackOff is the restart back-off after the n-th crash: the initial value doubling up
// to the cap, as the kubelet's.
func (k *kubelet) crashBackOff(n int32) time.Duration {
	d := k.s.opts.crashBackOff
	for i := int32(1); i < n && d < k.s.opts.crashBackOffMax; i++ {
		d *= 2
	}
	return min(d, k.s.opts.crashBackOffMax)
}

// podRef names a Pod as the kubelet's messages do: name_namespace(uid).
func podRef(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// restarts reports whether the kubelet restarts a container of pod after it exited with a
// non-zero code: native sidecars always, regular containers unless restartPolicy Never.
func restarts(pod *corev1.Pod, sidecar bool) bool {
	if sidecar {
		return true
	}
	return pod.Spec.RestartPolicy != corev1.RestartPolicyNever
}

// crashNote is one thing syncCrashes did, recorded once its status write succeeded.
type crashNote struct {
	action, detail string
}

// syncCrashes plays the kubelet for a Running Pod's long-running containers under crash
// faults: a container exits once it ran Crash.After; one that restarts waits out its
// back-off in CrashLoopBackOff and runs again; one that does not stays terminated, and
// when every regular container has terminated the Pod reaches its terminal phase.
func (k *kubelet) syncCrashes(ctx context.Context, pod *corev1.Pod) (reconcile.Result, error) {
	if !k.s.faults.anyCrash() && !inCrashLoop(pod) {
		return reconcile.Result{}, nil // the common case, kept cheap for Pods by the hundred
	}
	var next time.Duration
	var notes []crashNote
	terminal := false
	wrote, err := k.setStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus {
		now := time.Now()
		next, notes = 0, nil
		st := *p.Status.DeepCopy()
		for i, c := range p.Spec.InitContainers {
			if isSidecar(c) && i < len(st.InitContainerStatuses) && st.InitContainerStatuses[i].Name == c.Name {
				k.stepContainer(p, c, true, &st.InitContainerStatuses[i], now, &next, &notes)
			}
		}
		for i, c := range p.Spec.Containers {
			if i < len(st.ContainerStatuses) && st.ContainerStatuses[i].Name == c.Name {
				k.stepContainer(p, c, false, &st.ContainerStatuses[i], now, &next, &notes)
			}
		}
		terminal = finishIfDone(p, &st, metav1.NewTime(now))
		if !terminal {
			setReadiness(&st, p, metav1.NewTime(now))
		}
		return st
	})
	if wrote {
		for _, n := range notes {
			k.s.record("kubelet", n.action, "Pod", pod.Namespace, pod.Name, "%s", n.detail)
		}
		if terminal {
			k.forgetPodState(pod.UID)
			k.s.record("kubelet", ActionPodFailed, "Pod", pod.Namespace, pod.Name, "all containers terminated (phase %s)", pod.Status.Phase)
		}
	}
	if err != nil || terminal {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// stepContainer advances one container's crash cycle to now: a crash when its run time is
// up, a restart when its back-off is over (and, with Crash.After 0, the crash that follows
// at once). It narrows next to when the container's state changes again.
func (k *kubelet) stepContainer(pod *corev1.Pod, c corev1.Container, sidecar bool, cs *corev1.ContainerStatus, now time.Time, next *time.Duration, notes *[]crashNote) {
	fault, crashing := k.s.faults.crashOf(c.Image)
	mem := k.memory(pod.UID, c.Name)
	for range 2 {
		switch {
		case cs.State.Running != nil:
			if !crashing {
				return
			}
			if mem.started.IsZero() {
				mem.started = cs.State.Running.StartedAt.Time
			}
			exitAt := mem.started
			if fault.since.After(exitAt) {
				exitAt = fault.since
			}
			exitAt = exitAt.Add(fault.After)
			if now.Before(exitAt) {
				*next = minPositive(*next, exitAt.Sub(now))
				return
			}
			term := &corev1.ContainerStateTerminated{
				ExitCode: fault.ExitCode, Reason: fault.Reason, Message: fault.Message,
				StartedAt: cs.State.Running.StartedAt, FinishedAt: metav1.NewTime(now), ContainerID: cs.ContainerID,
			}
			cs.Ready, cs.Started = false, ptr.To(false)
			detail := fmt.Sprintf("container %s (image %s) exited with code %d (%s)", c.Name, c.Image, fault.ExitCode, fault.Reason)
			if !restarts(pod, sidecar) {
				cs.State = corev1.ContainerState{Terminated: term}
				*notes = append(*notes, crashNote{ActionContainerCrashed, detail})
				return
			}
			backOff := k.crashBackOff(cs.RestartCount + 1)
			cs.LastTerminationState = corev1.ContainerState{Terminated: term}
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  reasonCrashLoopBackOff,
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", backOff, c.Name, podRef(pod)),
			}}
			mem.restartAt = now.Add(backOff)
			*next = minPositive(*next, backOff)
			*notes = append(*notes, crashNote{ActionContainerCrashed, detail + fmt.Sprintf("; restart in %s", backOff)})
			return
		case cs.State.Waiting != nil && cs.State.Waiting.Reason == reasonCrashLoopBackOff:
			if mem.restartAt.IsZero() {
				mem.restartAt = now // forgotten (a restarted Simulator): restart now
			}
			if now.Before(mem.restartAt) {
				*next = minPositive(*next, mem.restartAt.Sub(now))
				return
			}
			cs.RestartCount++
			cs.ContainerID = containerID(pod, c.Name, cs.RestartCount)
			cs.ImageID = imageID(c.Image)
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}
			// No probes are simulated: a started container is ready.
			cs.Ready, cs.Started = true, ptr.To(true)
			mem.started, mem.restartAt = now, time.Time{}
			*notes = append(*notes, crashNote{ActionContainerRestarted, fmt.Sprintf("container %s restarted (restart %d)", c.Name, cs.RestartCount)})
			if !crashing || fault.After > 0 {
				if crashing {
					*next = minPositive(*next, fault.After)
				}
				return
			}
			// Crash.After 0: it exits at once; show the crash with this restart.
		default:
			return
		}
	}
}

// inCrashLoop reports whether any container of pod waits in CrashLoopBackOff.
func inCrashLoop(pod *corev1.Pod) bool {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == reasonCrashLoopBackOff {
				return true
			}
		}
	}
	return false
}

// finishIfDone moves a Pod whose regular containers have all terminated (none restarts) to
// its terminal phase, stopping its sidecars: Failed when any exited non-zero, else
// Succeeded. It reports whether it did.
func finishIfDone(pod *corev1.Pod, st *corev1.PodStatus, now metav1.Time) bool {
	failed := false
	for _, cs := range st.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil {
			return false
		}
		failed = failed || t.ExitCode != 0
	}
	if len(st.ContainerStatuses) == 0 {
		return false
	}
	for i := range st.InitContainerStatuses {
		cs := &st.InitContainerStatuses[i]
		if r := cs.State.Running; r != nil {
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: r.StartedAt, FinishedAt: now, ContainerID: cs.ContainerID,
			}}
			cs.Ready, cs.Started = false, ptr.To(false)
		}
	}
	st.Phase = corev1.PodSucceeded
	reason := "PodCompleted"
	if failed {
		st.Phase, reason = corev1.PodFailed, "PodFailed"
	}
	setPodCondition(st, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", now)
	setPodCondition(st, corev1.ContainersReady, corev1.ConditionFalse, reason, "", now)
	setPodCondition(st, corev1.PodReady, corev1.ConditionFalse, reason, "", now)
	return true
}
