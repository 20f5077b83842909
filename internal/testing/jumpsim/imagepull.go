package jumpsim

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Image pull wording, as the kubelet reports it in a waiting container's state.
const (
	reasonErrImagePull     = "ErrImagePull"
	reasonImagePullBackOff = "ImagePullBackOff"
)

// normalizeImage qualifies an image reference as containerd does before pulling: a default
// registry (docker.io), the library/ namespace for official images, and the latest tag.
func normalizeImage(image string) string {
	name, digest, hasDigest := strings.Cut(image, "@")
	first, _, hasSlash := strings.Cut(name, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !hasSlash {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	if hasDigest {
		return name + "@" + digest
	}
	if i := strings.LastIndex(name, ":"); i < 0 || strings.Contains(name[i:], "/") {
		name += ":latest"
	}
	return name
}

// notFoundPullMessage is containerd's error for an image whose tag the registry does not
// have, as the kubelet passes it on (the gRPC status message).
func notFoundPullMessage(image string) string {
	ref := normalizeImage(image)
	return fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", ref, ref, ref)
}

// pullBackOffMessage is the kubelet's message while it waits to pull an image again.
func pullBackOffMessage(image, lastError string) string {
	return fmt.Sprintf("Back-off pulling image %q: %s: %s", image, reasonErrImagePull, lastError)
}

// pullImages pulls the images of a Pod's containers in the order the kubelet starts them
// (init containers one by one, then the regular containers) and stops at the first whose
// image fails to pull: that container waits with ErrImagePull and the registry's message,
// then, while the kubelet backs off, ImagePullBackOff; the Pod stays Pending. It reports
// whether the Pod is blocked. A real kubelet shows ErrImagePull again at each retry; here
// only the first failure does, so a Pod that keeps failing costs no status writes.
func (k *kubelet) pullImages(ctx context.Context, pod *corev1.Pod) (reconcile.Result, bool, error) {
	all := make([]corev1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	all = append(append(all, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		regMsg, failing := k.s.faults.pullError(c.Image)
		if !failing {
			continue
		}
		mem := k.memory(pod.UID, c.Name)
		now := time.Now()
		if mem.pullFails == 0 || !now.Before(mem.pullAt) {
			mem.pullFails++ // a pull attempt, which fails
			mem.pullAt = now.Add(k.s.opts.pullBackOff)
		}
		reason, message := reasonErrImagePull, regMsg
		if mem.pullFails > 1 {
			reason, message = reasonImagePullBackOff, pullBackOffMessage(c.Image, regMsg)
		}
		wrote, err := k.setStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus {
			return pullBlockedStatus(p, c.Name, reason, message, metav1.Now())
		})
		if wrote {
			k.s.record("kubelet", ActionImagePullFailed, "Pod", pod.Namespace, pod.Name, "container %s: %s: %s", c.Name, reason, message)
		}
		return reconcile.Result{RequeueAfter: max(time.Until(mem.pullAt), time.Millisecond)}, true, err
	}
	return reconcile.Result{}, false, nil
}

// pullBlockedStatus is a Pending Pod whose container blocked waits for its image: init
// containers before it completed (sidecars run), those after it and, if it is an init
// container, the regular containers wait in PodInitializing; other regular containers wait
// in ContainerCreating. Statuses that did not change keep their times.
func pullBlockedStatus(pod *corev1.Pod, blocked, reason, message string, now metav1.Time) corev1.PodStatus {
	st := baseStatus(pod, now)
	st.Phase = corev1.PodPending
	waiting := func(c corev1.Container, why, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Started: ptr.To(false),
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: why, Message: msg}},
		}
	}
	blockedInit := false
	var incomplete []string
	after := false
	for _, c := range pod.Spec.InitContainers {
		switch {
		case c.Name == blocked:
			blockedInit, after = true, true
			st.InitContainerStatuses = append(st.InitContainerStatuses, waiting(c, reason, message))
			incomplete = append(incomplete, c.Name)
		case after:
			st.InitContainerStatuses = append(st.InitContainerStatuses, waiting(c, "PodInitializing", ""))
			incomplete = append(incomplete, c.Name)
		default:
			st.InitContainerStatuses = append(st.InitContainerStatuses, startedInitContainer(pod, c, now))
		}
	}
	for _, c := range pod.Spec.Containers {
		switch {
		case c.Name == blocked:
			st.ContainerStatuses = append(st.ContainerStatuses, waiting(c, reason, message))
		case blockedInit:
			st.ContainerStatuses = append(st.ContainerStatuses, waiting(c, "PodInitializing", ""))
		default:
			st.ContainerStatuses = append(st.ContainerStatuses, waiting(c, "ContainerCreating", ""))
		}
	}
	setPodCondition(&st, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", "", now)
	if blockedInit {
		setPodCondition(&st, corev1.PodInitialized, corev1.ConditionFalse, "ContainersNotInitialized",
			fmt.Sprintf("containers with incomplete status: %v", incomplete), now)
	} else {
		setPodCondition(&st, corev1.PodInitialized, corev1.ConditionTrue, "", "", now)
	}
	setReadiness(&st, pod, now)
	return st
}
