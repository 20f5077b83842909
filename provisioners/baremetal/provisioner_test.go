package baremetal

import (
	"context"
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

func TestDescribe(t *testing.T) {
	d, err := New().Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Names) != 1 || d.Names[0] != ProvisionerName || d.Version == "" {
		t.Errorf("Describe = %+v, want the name %s and a version", d, ProvisionerName)
	}
	var p provisioner.Provisioner = New()
	if _, ok := p.(provisioner.HostedProvisioner); !ok {
		t.Error("the Provisioner does not claim provisioner.HostedProvisioner")
	}
}

func TestValidate(t *testing.T) {
	withRef := func(name string) string {
		return `{"hosts": [` + goodHost + `], "credentialsSecretRef": {"name": "` + name + `"}}`
	}
	noRef := `{"hosts": [` + goodHost + `]}`
	for _, tc := range []struct {
		name, params, classSecret string
		// want are "field: detail fragment" pairs, all of which must be reported; none
		// means valid.
		want []string
	}{
		{"class secret only", noRef, "lab-ssh", nil},
		{"both agree", withRef("lab-ssh"), "lab-ssh", nil},
		{"both differ", withRef("other"), "lab-ssh",
			[]string{`parameters.credentialsSecretRef.name: Invalid value: "other": must agree with the class's spec.credentialsSecretRef.name "lab-ssh"`}},
		{"neither", noRef, "",
			[]string{"parameters.credentialsSecretRef: Required value: credentials (SSH key and known_hosts) are required"}},
		{"parameters only", withRef("lab-ssh"), "",
			[]string{`parameters.credentialsSecretRef.name: Invalid value: "lab-ssh": the class's spec.credentialsSecretRef must name this Secret too`}},
		{"bad parameters", `{"hosts": [{"name": "lab1", "address": "10.0.0.5", "arch": "sparc", "slots": 0}]}`, "lab-ssh",
			[]string{"parameters.hosts[0].arch: Unsupported value", "parameters.hosts[0].slots: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := testRequest(t, tc.params, tc.classSecret, nil)
			err := New().Validate(context.Background(), req)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !provisioner.IsInvalid(err) {
				t.Fatalf("Validate = %v, want an Invalid error", err)
			}
			var pe *provisioner.Error
			if !errors.As(err, &pe) || len(pe.Fields) != len(tc.want) {
				t.Errorf("want %d field errors, got %v", len(tc.want), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("missing %q in:\n%v", w, err)
				}
			}
		})
	}
}

func TestRenderPodRefuses(t *testing.T) {
	req := forInstance(testRequest(t, fakeParams, "lab-ssh", nil), "pool-a", nil)
	pod, err := New().RenderPod(context.Background(), req)
	if pod != nil || !provisioner.IsInvalid(err) {
		t.Fatalf("RenderPod = %v, %v; want no Pod and an Invalid error", pod, err)
	}
	for _, w := range []string{"no Pod", "lab hosts", "CreateExternal"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("RenderPod's error %q does not say %q", err, w)
		}
	}
}

func TestEnrichDriversCopies(t *testing.T) {
	req := testRequest(t, fakeParams, "lab-ssh", nil)
	req.Set.Spec.Template.Spec.Drivers = []vtv1alpha1.DriverSpec{{Name: "power", Type: "jumpstarter_driver_power.driver.MockPower",
		Config: &apiextensionsv1.JSON{Raw: []byte(`{"a": 1}`)}}}
	out, err := New().EnrichDrivers(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Name != "power" || string(out[0].Config.Raw) != `{"a": 1}` {
		t.Fatalf("EnrichDrivers = %+v, want the set's drivers", out)
	}
	out[0].Config.Raw[1] = 'X'
	if string(req.Set.Spec.Template.Spec.Drivers[0].Config.Raw) != `{"a": 1}` {
		t.Error("EnrichDrivers returned the set's own driver config, not a copy")
	}
}
