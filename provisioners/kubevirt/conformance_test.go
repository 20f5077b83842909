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

// TestConformance runs the provisioner conformance suite, its ExternalProvisioner checks
// included, against the remote cluster (cut off through the proxy for the unreachable case).
// Requests carry the remote kubeconfig, as the reconciler passes the class's credentials.
func TestConformance(t *testing.T) {
	provisionertest.Run(t, New(), conformanceConfig(t))
}

// TestConformanceThroughPlugin runs the same suite through the real plugin host against the
// plugin binary: the external calls cross protocol version 2.
func TestConformanceThroughPlugin(t *testing.T) {
	p := provisionertest.LoadPlugin(t, provisionertest.BuildPlugin(t, "", "../../cmd/exporterset-provisioner-kubevirt", "kubevirt"))
	if info := p.Info(); !info.External || info.ProtocolVersion != 2 {
		t.Fatalf("plugin info %+v: want protocol 2, external", info)
	}
	if _, ok := p.Provisioner().(provisioner.ExternalProvisioner); !ok {
		t.Fatal("the host does not offer the plugin as an ExternalProvisioner")
	}
	provisionertest.Run(t, p.Provisioner(), conformanceConfig(t))
}

func conformanceConfig(t *testing.T) provisionertest.Config {
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
		Unreachable: func(cut bool) {
			if cut {
				proxy.Cut()
			} else if err := proxy.Restore(); err != nil {
				t.Fatal(err)
			}
		},
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
	return cfg
}
