package qemu

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// TestConformance runs the provisioner conformance suite (the one plugins run too) on the
// built-in QEMU provisioner with upstream's sample class and set.
func TestConformance(t *testing.T) {
	provisionertest.Run(t, New(), provisionertest.Config{
		Parameters: `{"arch": "x86_64", "machineType": "q35", "resources": {"cpu": 2, "memory": "2Gi", "storage": "20Gi"}}`,
		Drivers: []vtv1alpha1.DriverSpec{{
			Name: "qemu", Type: "jumpstarter_driver_qemu.driver.Qemu",
			Config: &apiextensionsv1.JSON{Raw: []byte(`{"arch": "x86_64", "smp": 2, "mem": "2G"}`)},
		}},
		Class: func(c *vtv1alpha1.VirtualTargetClass) {
			c.Spec.Scheduling = &vtv1alpha1.Scheduling{
				NodeSelector: map[string]string{"kubernetes.io/arch": "amd64"},
				Tolerations:  []corev1.Toleration{{Key: "jumpstarter.dev/kvm", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Resources: &corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("1")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
				},
			}
		},
		Names: []string{"qemu.jumpstarter.dev"},
		Invalid: []provisionertest.Invalid{
			{Name: "memory not a quantity", Parameters: `{"resources": {"memory": "2 GB"}}`, Fields: []string{"parameters.resources.memory"}},
			{Name: "unknown arch", Parameters: `{"arch": "mips"}`, Fields: []string{"parameters.arch"}},
		},
		DriverTypes: DriverTypes(),
		InvalidDrivers: []provisionertest.InvalidDrivers{
			{Name: "Kubernetes quantity as mem", Drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{"mem": "2Gi"}`)},
				Fields: []string{"spec.template.spec.drivers[0].config.mem"}},
			{Name: "memory for mem", Drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{"memory": "2G"}`)},
				Fields: []string{"spec.template.spec.drivers[0].config.memory"}},
			{Name: "ref to a child the driver does not create", Drivers: []vtv1alpha1.DriverSpec{qemuDriver(""), {Name: "power", Ref: "qemu.powr"}},
				Fields: []string{"spec.template.spec.drivers[1].ref"}},
			{Name: "misspelt type", Drivers: []vtv1alpha1.DriverSpec{{Name: "qemu", Type: "jumpstarter_driver_qemu.driver.Qemuu"}},
				Fields: []string{"spec.template.spec.drivers[0].type"}},
		},
		DryRun: func(ctx context.Context, pod *corev1.Pod) error { return env.DryRunCreate(ctx, pod) },
	})
}
