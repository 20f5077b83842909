package budget

import corev1 "k8s.io/api/core/v1"

// PodRequests is a stand-in until the allocation branch lands (it replaces this file).
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	var out corev1.ResourceList
	for _, c := range pod.Spec.Containers {
		out = Add(out, c.Resources.Requests)
	}
	return out
}
