package main

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// conformance is the suite's configuration for this provisioner. A third party without this
// module's internal/testing/testenv passes an envtest client's dry-run create as DryRun, or nil.
func conformance() provisionertest.Config {
	return provisionertest.Config{
		Parameters: `{"image": "busybox:1.36", "command": ["sleep", "infinity"], "env": {"B": "2", "A": "1"},
			"resources": {"cpu": 1, "memory": "64Mi"}}`,
		SetParameters: `{"args": ["--verbose"]}`,
		Drivers: []vtv1alpha1.DriverSpec{{
			Name: "power", Type: "jumpstarter_driver_power.driver.MockPower",
			Config: &apiextensionsv1.JSON{Raw: []byte(`{"delay": 1}`)},
		}},
		Class: func(c *vtv1alpha1.VirtualTargetClass) {
			c.Spec.Scheduling = &vtv1alpha1.Scheduling{
				NodeSelector: map[string]string{"kubernetes.io/arch": "amd64"},
				Tolerations:  []corev1.Toleration{{Key: "jumpstarter.dev/kvm", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			}
			c.Spec.CredentialsSecretRef = &corev1.LocalObjectReference{Name: "target-credentials"}
		},
		Names: []string{Name},
		Invalid: []provisionertest.Invalid{
			{Name: "no image", Parameters: `{}`, Fields: []string{"parameters.image"}},
			{Name: "bad memory", Parameters: `{"image": "x", "resources": {"memory": "2 GB"}}`, Fields: []string{"parameters.resources.memory"}},
			{Name: "unknown resource", Parameters: `{"image": "x", "resources": {"gpu": 1}}`, Fields: []string{"parameters.resources.gpu"}},
			{Name: "unknown parameter", Parameters: `{"image": "x", "colour": "red"}`, Fields: []string{"parameters.colour"}},
			{Name: "command not a list", Parameters: `{"image": "x", "command": "sleep"}`, Fields: []string{"parameters.command"}},
			{Name: "bad env name", Parameters: `{"image": "x", "env": {"1BAD": "v"}}`, Fields: []string{"parameters.env[1BAD]"}},
		},
		DryRun: func(ctx context.Context, pod *corev1.Pod) error { return env.DryRunCreate(ctx, pod) },
	}
}

func TestConformanceInProcess(t *testing.T) {
	provisionertest.Run(t, Provisioner{}, conformance())
}

// TestConformancePlugin builds this directory as a plugin binary and runs the same suite
// through the real host: process, handshake, AutoMTLS, gRPC.
func TestConformancePlugin(t *testing.T) {
	p := provisionertest.LoadPlugin(t, provisionertest.BuildPlugin(t, "", ".", "container"))
	provisionertest.Run(t, p, conformance())
}

func TestRenderPod(t *testing.T) {
	req, err := conformance().NewRequest(provisioner.Description{Names: []string{Name}})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := Provisioner{}.RenderPod(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	target := pod.Spec.Containers[1]
	if target.Image != "busybox:1.36" || len(target.Args) != 1 || target.Args[0] != "--verbose" {
		t.Errorf("target container %+v", target)
	}
	if len(target.Env) != 2 || target.Env[0].Name != "A" || target.Env[1].Name != "B" {
		t.Errorf("env not sorted: %+v", target.Env)
	}
	if q := target.Resources.Limits[corev1.ResourceMemory]; q.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("memory limit %s", q.String())
	}
	if target.EnvFrom[0].SecretRef.Name != "target-credentials" {
		t.Errorf("credentials not handed to the target: %+v", target.EnvFrom)
	}
	if pod.Spec.NodeSelector["kubernetes.io/arch"] != "amd64" || len(pod.Spec.Tolerations) != 1 {
		t.Errorf("class scheduling not applied: %+v", pod.Spec)
	}
}

// TestErrorsIdenticalThroughPlugin: the reconciler's conditions show the same text whether the
// provisioner is built in or a plugin.
func TestErrorsIdenticalThroughPlugin(t *testing.T) {
	p := provisionertest.LoadPlugin(t, provisionertest.BuildPlugin(t, "", ".", "container"))
	cfg := conformance()
	cfg.Parameters = `{"resources": {"memory": "2 GB", "gpu": 1}, "env": {"1BAD": "v"}}`
	req, err := cfg.NewRequest(provisioner.Description{Names: []string{Name}})
	if err != nil {
		t.Fatal(err)
	}
	want := Provisioner{}.Validate(t.Context(), req)
	got := p.Validate(t.Context(), req)
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Fatalf("in process: %v\nplugin:     %v", want, got)
	}
	var pw, pg *provisioner.Error
	if !errors.As(want, &pw) || !errors.As(got, &pg) || len(pg.Fields) != len(pw.Fields) || len(pw.Fields) != 4 {
		t.Fatalf("fields differ: %v / %v", want, got)
	}
	t.Logf("both: %v", got)
}
