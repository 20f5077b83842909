package kubevirt

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// TestValidate checks each refusal's field path and, where it matters, its message.
func TestValidate(t *testing.T) {
	const disk = `"containerDisk": "quay.io/containerdisks/fedora:41"`
	cases := []struct {
		name, params, field, detail string
		drivers                     []vtv1alpha1.DriverSpec
	}{
		{name: "no disk", params: `{}`, field: "parameters.containerDisk", detail: `set "containerDisk"`},
		{name: "both disks", params: `{` + disk + `, "dataVolume": {"http": "https://x/y.img", "storage": "10Gi"}}`, field: "parameters.dataVolume"},
		{name: "dataVolume without source", params: `{"dataVolume": {"storage": "10Gi"}}`, field: "parameters.dataVolume.http"},
		{name: "dataVolume without storage", params: `{"dataVolume": {"http": "https://x/y.img"}}`, field: "parameters.dataVolume.storage"},
		{name: "registry scheme", params: `{"dataVolume": {"registry": "https://quay.io/x", "storage": "10Gi"}}`, field: "parameters.dataVolume.registry", detail: `"docker"`},
		{name: "dataVolume size key", params: `{"dataVolume": {"http": "https://x/y.img", "size": "10Gi"}}`, field: "parameters.dataVolume.size", detail: `did you mean "dataVolume.storage"`},
		{name: "memory not a quantity", params: `{` + disk + `, "resources": {"memory": "2 GB"}}`, field: "parameters.resources.memory"},
		{name: "zero cpu", params: `{` + disk + `, "resources": {"cpu": 0}}`, field: "parameters.resources.cpu"},
		{name: "cpu misspelt", params: `{` + disk + `, "resources": {"cpus": 2}}`, field: "parameters.resources.cpus", detail: `did you mean "resources.cpu"`},
		{name: "top-level typo", params: `{` + disk + `, "namespce": "vms"}`, field: "parameters.namespce", detail: `did you mean "namespace"`},
		{name: "upstream habit", params: `{` + disk + `, "vmNamespace": "vms"}`, field: "parameters.vmNamespace", detail: `did you mean "namespace"`},
		{name: "bad namespace", params: `{` + disk + `, "namespace": "VMs"}`, field: "parameters.namespace"},
		{name: "ssh port string", params: `{` + disk + `, "ssh": {"port": "22"}}`, field: "parameters.ssh.port"},
		{name: "forward clash", params: `{` + disk + `, "forwardPorts": {"alt": 10022}}`, field: "parameters.forwardPorts[alt]", detail: `as "ssh" does`},
		{name: "forward named ssh", params: `{` + disk + `, "forwardPorts": {"ssh": 2222}}`, field: "parameters.forwardPorts[ssh]"},
		{name: "not an object", params: `[1]`, field: "parameters"},
		{name: "tcp driver key typo", params: `{` + disk + `}`, field: "spec.template.spec.drivers[0].config.prot", detail: `did you mean "port"`,
			drivers: []vtv1alpha1.DriverSpec{{Name: "ssh", Type: TCPNetworkDriverType, Config: &apiextensionsv1.JSON{Raw: []byte(`{"host": "127.0.0.1", "prot": 22}`)}}}},
		{name: "tcp driver port string", params: `{` + disk + `}`, field: "spec.template.spec.drivers[0].config.port",
			drivers: []vtv1alpha1.DriverSpec{{Name: "ssh", Type: TCPNetworkDriverType, Config: &apiextensionsv1.JSON{Raw: []byte(`{"host": "127.0.0.1", "port": "22"}`)}}}},
	}
	p := New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := p.Validate(context.Background(), baseRequest(c.params, c.drivers...))
			if !provisioner.IsInvalid(err) {
				t.Fatalf("want an invalid-input error, got %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.field+":") {
				t.Errorf("error does not name %s: %s", c.field, msg)
			}
			if c.detail != "" && !strings.Contains(msg, c.detail) {
				t.Errorf("error does not say %s: %s", c.detail, msg)
			}
		})
	}

	t.Run("missing credentials", func(t *testing.T) {
		req := baseRequest(`{` + disk + `}`)
		req.Class.Spec.CredentialsSecretRef = nil
		if err := p.Validate(context.Background(), req); !provisioner.IsInvalid(err) || !strings.Contains(err.Error(), "spec.credentialsSecretRef.name") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("valid", func(t *testing.T) {
		for _, params := range []string{
			`{` + disk + `}`,
			`{"dataVolume": {"registry": "docker://quay.io/containerdisks/fedora:41", "storage": "20Gi", "storageClassName": "fast"}, "resources": {"cpu": "4", "memory": "8Gi"}, "ssh": {"enabled": false}, "cloudInit": "#cloud-config\n"}`,
		} {
			if err := p.Validate(context.Background(), baseRequest(params)); err != nil {
				t.Errorf("%s: %v", params, err)
			}
		}
	})
}
