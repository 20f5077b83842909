package kubevirt

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// TestConformance runs the provisioner conformance suite (it has no ExternalProvisioner checks
// yet). Requests carry the remote kubeconfig, so the suite's Cleanup calls reach the remote
// cluster and find no VM.
func TestConformance(t *testing.T) {
	cfg := provisionertest.Config{
		Parameters: baseParams,
		Drivers: []vtv1alpha1.DriverSpec{{
			Name: "ssh", Type: TCPNetworkDriverType, Config: &apiextensionsv1.JSON{Raw: []byte(`{"host": "127.0.0.1", "port": 10022}`)},
		}},
		Class: func(c *vtv1alpha1.VirtualTargetClass) {
			c.Spec.CredentialsSecretRef = &corev1.LocalObjectReference{Name: "remote-kubevirt"}
		},
		Names: []string{Name},
		Invalid: []provisionertest.Invalid{
			{Name: "memory not a quantity", Parameters: `{"containerDisk": "a/b:1", "resources": {"memory": "2 GB"}}`, Fields: []string{"parameters.resources.memory"}},
			{Name: "no disk", Parameters: `{}`, Fields: []string{"parameters.containerDisk"}},
		},
		DriverTypes: DriverTypes(),
		InvalidDrivers: []provisionertest.InvalidDrivers{
			{Name: "port as a string", Drivers: []vtv1alpha1.DriverSpec{{Name: "ssh", Type: TCPNetworkDriverType, Config: &apiextensionsv1.JSON{Raw: []byte(`{"host": "h", "port": "22"}`)}}},
				Fields: []string{"spec.template.spec.drivers[0].config.port"}},
		},
		DryRun: func(ctx context.Context, pod *corev1.Pod) error { return env.DryRunCreate(ctx, pod) },
	}
	cfg.Request = func(desc provisioner.Description) *provisioner.Request {
		c := cfg
		c.Request = nil
		req, err := c.NewRequest(desc)
		if err != nil {
			t.Fatal(err)
		}
		req.Credentials = map[string][]byte{"kubeconfig": kubeconfig}
		return req
	}
	provisionertest.Run(t, New(), cfg)
}
