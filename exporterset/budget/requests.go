package budget

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodRequests is what the scheduler counts for a Pod, as a budget's resources do:
//
//   - the sum of the regular containers' requests, a resource with a limit and no request
//     counting its limit (the API server defaults the request so; a rendered Pod may not
//     have been defaulted yet);
//   - plus the restartable init containers' (sidecars, restartPolicy Always): they run
//     alongside the regular containers;
//   - per resource, at least each other init container's request plus the sidecars started
//     before it, since they run together during initialisation;
//   - pod-level requests (spec.resources), where set, replace that for cpu, memory and
//     hugepages-*, the resources pod-level resources support;
//   - plus spec.overhead.
//
// Resize status (what the kubelet has actually allocated) is not read: the budget plans
// with what the Pod asks for.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	if pod == nil {
		return corev1.ResourceList{}
	}
	reqs := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		reqs = Add(reqs, containerRequests(c.Resources))
	}
	sidecars, initMax := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		r := containerRequests(c.Resources)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			reqs = Add(reqs, r)
			sidecars = Add(sidecars, r)
			r = sidecars
		} else {
			r = Add(r, sidecars)
		}
		initMax = maxOf(initMax, r)
	}
	reqs = maxOf(reqs, initMax)
	if pod.Spec.Resources != nil {
		for n, q := range pod.Spec.Resources.Requests {
			if podLevel(n) {
				reqs[n] = q.DeepCopy()
			}
		}
	}
	return Add(reqs, pod.Spec.Overhead)
}

// containerRequests are a container's requests, a limit standing in for a missing request.
func containerRequests(r corev1.ResourceRequirements) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, q := range r.Limits {
		out[n] = q.DeepCopy()
	}
	for n, q := range r.Requests {
		out[n] = q.DeepCopy()
	}
	return out
}

// podLevel tells whether pod-level resources support the resource.
func podLevel(n corev1.ResourceName) bool {
	return n == corev1.ResourceCPU || n == corev1.ResourceMemory || strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix)
}

// Add returns a + b per resource, as a new list (a and b are not changed).
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a)+len(b))
	for n, q := range a {
		out[n] = q.DeepCopy()
	}
	for n, q := range b {
		sum, ok := out[n]
		if !ok {
			out[n] = q.DeepCopy()
			continue
		}
		sum.Add(q)
		out[n] = sum
	}
	return out
}

// maxOf returns the larger of a and b per resource, as a new list.
func maxOf(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a)+len(b))
	for n, q := range a {
		out[n] = q.DeepCopy()
	}
	for n, q := range b {
		if cur, ok := out[n]; !ok || q.Cmp(cur) > 0 {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

// Fits tells whether used + more stays within limit for every resource limit names; a
// resource limit does not name is not limited.
func Fits(used, more, limit corev1.ResourceList) bool {
	for n, l := range limit {
		sum := resource.Quantity{}
		if u, ok := used[n]; ok {
			sum = u.DeepCopy()
		}
		if a, ok := more[n]; ok {
			sum.Add(a)
		}
		if sum.Cmp(l) > 0 {
			return false
		}
	}
	return true
}
