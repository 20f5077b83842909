package budget

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// ctr is a container with requests and limits.
func ctr(req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

// sidecar is a restartable init container.
func sidecar(req corev1.ResourceList) corev1.Container {
	c := ctr(req, nil)
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

func TestPodRequests(t *testing.T) {
	main := []corev1.Container{ctr(rl("cpu", "1", "memory", "1Gi"), nil), ctr(rl("cpu", "500m"), rl("cpu", "1", "devices.kubevirt.io/kvm", "1"))}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{name: "containers add up; a limit without a request counts",
			spec: corev1.PodSpec{Containers: main},
			want: rl("cpu", "1500m", "memory", "1Gi", "devices.kubevirt.io/kvm", "1")},
		{name: "a larger init container sets the floor per resource",
			spec: corev1.PodSpec{Containers: main, InitContainers: []corev1.Container{ctr(rl("cpu", "3"), nil), ctr(rl("memory", "512Mi"), nil)}},
			want: rl("cpu", "3", "memory", "1Gi", "devices.kubevirt.io/kvm", "1")},
		{name: "a sidecar adds to the containers, and to the init containers after it",
			spec: corev1.PodSpec{Containers: main, InitContainers: []corev1.Container{
				ctr(rl("cpu", "2"), nil), sidecar(rl("cpu", "1", "memory", "256Mi")), ctr(rl("cpu", "2"), nil)}},
			want: rl("cpu", "3", "memory", "1280Mi", "devices.kubevirt.io/kvm", "1")},
		{name: "an init container before the sidecar runs without it",
			spec: corev1.PodSpec{Containers: main, InitContainers: []corev1.Container{ctr(rl("cpu", "2600m"), nil), sidecar(rl("cpu", "1"))}},
			want: rl("cpu", "2600m", "memory", "1Gi", "devices.kubevirt.io/kvm", "1")},
		{name: "overhead is added",
			spec: corev1.PodSpec{Containers: main, Overhead: rl("cpu", "250m", "memory", "100Mi")},
			want: rl("cpu", "1750m", "memory", "1124Mi", "devices.kubevirt.io/kvm", "1")},
		{name: "pod-level requests replace cpu and memory only, then overhead",
			spec: corev1.PodSpec{Containers: main, Overhead: rl("cpu", "250m"),
				Resources: &corev1.ResourceRequirements{Requests: rl("cpu", "4", "devices.kubevirt.io/kvm", "3")}},
			want: rl("cpu", "4250m", "memory", "1Gi", "devices.kubevirt.io/kvm", "1")},
		{name: "nothing requested", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, want: rl()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodRequests(&corev1.Pod{Spec: tc.spec})
			if !equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if got := PodRequests(nil); len(got) != 0 {
		t.Errorf("nil pod: %v", got)
	}
}

func TestAddFits(t *testing.T) {
	a, b := rl("cpu", "1", "memory", "1Gi"), rl("cpu", "500m", "nvidia.com/gpu", "1")
	if got := Add(a, b); !equal(got, rl("cpu", "1500m", "memory", "1Gi", "nvidia.com/gpu", "1")) {
		t.Errorf("Add: %v", got)
	}
	if !equal(a, rl("cpu", "1", "memory", "1Gi")) || !equal(b, rl("cpu", "500m", "nvidia.com/gpu", "1")) {
		t.Errorf("Add changed its arguments: %v %v", a, b)
	}
	for _, tc := range []struct {
		limit corev1.ResourceList
		want  bool
	}{
		{rl("cpu", "1500m"), true},
		{rl("cpu", "1499m"), false},
		{rl("memory", "1Gi", "nvidia.com/gpu", "1"), true},
		{rl("nvidia.com/gpu", "0"), false},
		{rl("devices.kubevirt.io/kvm", "0"), true}, // nobody asks for it
		{nil, true},
	} {
		if got := Fits(a, b, tc.limit); got != tc.want {
			t.Errorf("Fits(%v + %v within %v) = %v", a, b, tc.limit, got)
		}
	}
}

// equal compares resource lists by value.
func equal(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for n, q := range a {
		if w, ok := b[n]; !ok || q.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
