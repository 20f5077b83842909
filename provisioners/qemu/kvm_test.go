package qemu

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// kvmLimits returns the KVM device-plugin resources of a container's limits.
func kvmLimits(c *corev1.Container) map[string]string {
	out := map[string]string{}
	for name, q := range c.Resources.Limits {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage {
			out[string(name)] = q.String()
		}
	}
	return out
}

// TestExporterGetsKVMWithTheRuntime fails if the exporter container loses the KVM device:
// upstream's Qemu driver adds -accel kvm only when the exporter's own process can open
// /dev/kvm, so without it a KVM class runs its guests under TCG.
func TestExporterGetsKVMWithTheRuntime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limits  corev1.ResourceList
		runtime map[string]string
		want    map[string]string // the exporter's
	}{
		{name: "KubeVirt device", limits: corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")},
			runtime: map[string]string{"devices.kubevirt.io/kvm": "1"}, want: map[string]string{"devices.kubevirt.io/kvm": "1"}},
		{name: "generic device plugin, several asked for the runtime", limits: corev1.ResourceList{"squat.ai/kvm": resource.MustParse("2")},
			runtime: map[string]string{"squat.ai/kvm": "2"}, want: map[string]string{"squat.ai/kvm": "1"}},
		{name: "no KVM", limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
			runtime: map[string]string{"nvidia.com/gpu": "1"}, want: map[string]string{}},
		{name: "zero KVM devices", limits: corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("0")},
			runtime: map[string]string{"devices.kubevirt.io/kvm": "0"}, want: map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := baseRequest(``, qemuDriver(""))
			req.Class.Spec.Scheduling = &vtv1alpha1.Scheduling{Resources: &corev1.ResourceRequirements{Limits: tc.limits}}
			pod, err := New().RenderPod(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.runtime, kvmLimits(container(pod, RuntimeContainer))); diff != "" {
				t.Errorf("runtime device limits (-want +got):\n%s", diff)
			}
			exp := container(pod, ExporterContainer)
			if diff := cmp.Diff(tc.want, kvmLimits(exp)); diff != "" {
				t.Errorf("exporter device limits (-want +got):\n%s", diff)
			}
			// The device, and nothing else: the class's CPU and memory are QEMU's.
			if len(exp.Resources.Requests) > 0 || len(exp.Resources.Limits) > len(tc.want) {
				t.Errorf("exporter resources %v, want the KVM device only", exp.Resources)
			}
		})
	}
}

// TestBothContainersGetKVMFromTheAPIServer dry-runs the golden KVM Pod and reads back what
// the apiserver made of it: both containers hold the device (requests defaulted from the
// limits), and the Pod passes the restricted Pod Security Standard without privilege or a
// hostPath.
func TestBothContainersGetKVMFromTheAPIServer(t *testing.T) {
	ctx := context.Background()
	var kvmCase *testCase
	for _, c := range loadCases(t) {
		if c.Name == "x86_64-kvm" {
			kvmCase = &c
		}
	}
	if kvmCase == nil {
		t.Fatal("testdata/x86_64-kvm.input.yaml is gone")
	}
	pod := render(t, New(), *kvmCase).Pod
	if pod.Annotations[AnnotationAccelerator] != AcceleratorKVM {
		t.Fatalf("the KVM case renders accelerator %q", pod.Annotations[AnnotationAccelerator])
	}
	ensureRestrictedNamespace(t)
	pod.Name, pod.Namespace = "kvm-both", restrictedNamespace
	if err := env.Client.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	for _, name := range []string{RuntimeContainer, ExporterContainer} {
		c := container(pod, name)
		q, ok := c.Resources.Requests["devices.kubevirt.io/kvm"]
		if !ok || q.Cmp(resource.MustParse("1")) != 0 {
			t.Errorf("%s as admitted: requests %v, want devices.kubevirt.io/kvm 1", name, c.Resources.Requests)
		}
	}
}
