package provisionertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// good is a provisioner that keeps every rule; bad variants break one each.
func good() provisioner.Funcs {
	validate := func(_ context.Context, req *provisioner.Request) error {
		var p struct {
			Memory string `json:"memory"`
		}
		if err := json.Unmarshal(req.Parameters, &p); err != nil {
			return provisioner.Invalid(err)
		}
		if _, err := resource.ParseQuantity(p.Memory); err != nil {
			return provisioner.InvalidFields(field.ErrorList{field.Invalid(field.NewPath("parameters", "memory"), p.Memory, "must be a quantity")})
		}
		return provisioner.InvalidFields(checkPowerDrivers(req))
	}
	return provisioner.Funcs{
		Description: provisioner.Description{
			Names:         []string{"good.example.dev"},
			DefaultImages: provisioner.Images{Exporter: provisioner.Image{Image: "exporter:1"}},
		},
		ValidateFn: validate,
		RenderPodFn: func(ctx context.Context, req *provisioner.Request) (*corev1.Pod, error) {
			if err := validate(ctx, req); err != nil {
				return nil, err
			}
			pod := &corev1.Pod{}
			provisioner.AddExporterContainer(pod, req)
			return pod, nil
		},
	}
}

// checkPowerDrivers is good's driver check: it claims "x.Power", whose only key is "delay".
func checkPowerDrivers(req *provisioner.Request) field.ErrorList {
	var errs field.ErrorList
	for i, d := range provisioner.TemplateDrivers(req) {
		if d.Type != "x.Power" || d.Config == nil {
			continue
		}
		path := field.NewPath("spec", "template", "spec", "drivers").Index(i).Child("config")
		var cfg map[string]json.RawMessage
		if err := json.Unmarshal(d.Config.Raw, &cfg); err != nil {
			errs = append(errs, field.Invalid(path, string(d.Config.Raw), "must be an object"))
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			if k != "delay" {
				errs = append(errs, field.NotSupported(path.Child(k), k, []string{"delay"}))
			}
		}
	}
	return errs
}

func config() provisionertest.Config {
	return provisionertest.Config{
		Parameters: `{"memory": "1Gi"}`,
		Drivers: []vtv1alpha1.DriverSpec{{Name: "power", Type: "x.Power",
			Config: &apiextensionsv1.JSON{Raw: []byte(`{"delay": 1}`)}}},
		Invalid:     []provisionertest.Invalid{{Name: "bad memory", Parameters: `{"memory": "2 GB"}`, Fields: []string{"parameters.memory"}}},
		DriverTypes: []string{"x.Power"},
		InvalidDrivers: []provisionertest.InvalidDrivers{{Name: "misspelt key", Drivers: []vtv1alpha1.DriverSpec{{Name: "power", Type: "x.Power",
			Config: &apiextensionsv1.JSON{Raw: []byte(`{"dealy": 1}`)}}}, Fields: []string{"spec.template.spec.drivers[0].config.dealy"}}},
		Names:       []string{"good.example.dev"},
		CallTimeout: time.Second,
	}
}

func TestSuitePassesAGoodProvisioner(t *testing.T) {
	provisionertest.Run(t, good(), config())
}

// bad are provisioners each breaking one rule, with what the suite must say about it.
var bad = map[string]struct {
	p    func() provisioner.Funcs
	want string
}{
	"shares labels": {func() provisioner.Funcs {
		f := good()
		render := f.RenderPodFn
		f.RenderPodFn = func(ctx context.Context, req *provisioner.Request) (*corev1.Pod, error) {
			pod, err := render(ctx, req)
			if pod != nil {
				pod.Labels = req.Set.Spec.Template.Metadata.Labels // the reconciler adds labels: the set changes
			}
			return pod, err
		}
		return f
	}, "the Pod shares memory with the request"},
	"mutates the request": {func() provisioner.Funcs {
		f := good()
		f.ValidateFn = func(_ context.Context, req *provisioner.Request) error {
			req.Class.Spec.Provisioner = "changed"
			return nil
		}
		return f
	}, "the request changed during Validate"},
	"not deterministic": {func() provisioner.Funcs {
		f := good()
		render := f.RenderPodFn
		f.RenderPodFn = func(ctx context.Context, req *provisioner.Request) (*corev1.Pod, error) {
			pod, err := render(ctx, req)
			if pod != nil {
				pod.Annotations = map[string]string{"rendered-at": fmt.Sprint(time.Now().UnixNano())}
			}
			return pod, err
		}
		return f
	}, "two RenderPod calls of equal requests differ"},
	"bad input is transient": {func() provisioner.Funcs {
		f := good()
		validate := f.ValidateFn
		f.ValidateFn = func(ctx context.Context, req *provisioner.Request) error {
			if err := validate(ctx, req); err != nil {
				return provisioner.Transient(err)
			}
			return nil
		}
		return f
	}, "Validate's error is Transient, want Invalid"},
	"wrong field path": {func() provisioner.Funcs {
		f := good()
		validate := f.ValidateFn
		f.ValidateFn = func(ctx context.Context, req *provisioner.Request) error {
			if err := validate(ctx, req); err != nil {
				return provisioner.InvalidFields(field.ErrorList{field.Invalid(field.NewPath("memory"), "2 GB", "bad")})
			}
			return nil
		}
		return f
	}, `is not rooted at parameters or spec`},
	"no config mount": {func() provisioner.Funcs {
		f := good()
		render := f.RenderPodFn
		f.RenderPodFn = func(ctx context.Context, req *provisioner.Request) (*corev1.Pod, error) {
			pod, err := render(ctx, req)
			if pod != nil {
				pod.Spec.Volumes = nil
			}
			return pod, err
		}
		return f
	}, "no volume of the Pod is the exporter config Secret"},
	"restarts": {func() provisioner.Funcs {
		f := good()
		render := f.RenderPodFn
		f.RenderPodFn = func(ctx context.Context, req *provisioner.Request) (*corev1.Pod, error) {
			pod, err := render(ctx, req)
			if pod != nil {
				pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
			}
			return pod, err
		}
		return f
	}, `restartPolicy is "Always", want Never`},
	"overrides explicit driver config": {func() provisioner.Funcs {
		f := good()
		f.EnrichDriversFn = func(_ context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
			out := provisioner.TemplateDrivers(req)
			for i := range out {
				out[i].Config = &apiextensionsv1.JSON{Raw: []byte(`{"delay": 5}`)}
			}
			return out, nil
		}
		return f
	}, `config key "delay" is 5, want the explicit 1`},
	"does not check a driver it claims": {func() provisioner.Funcs {
		f := good()
		f.ValidateFn = func(context.Context, *provisioner.Request) error { return nil }
		return f
	}, "Validate accepted parameters {\"memory\":\"1Gi\"} with drivers [{\"name\":\"power\",\"type\":\"x.Power\",\"config\":{\"delay\":1,\"exportersetConformanceNoSuchKey\":true}}]"},
	"cancellation is invalid": {func() provisioner.Funcs {
		f := good()
		validate := f.ValidateFn
		f.ValidateFn = func(ctx context.Context, req *provisioner.Request) error {
			if ctx.Err() != nil {
				return provisioner.Invalid(ctx.Err())
			}
			return validate(ctx, req)
		}
		return f
	}, "Validate with a cancelled context reported invalid input"},
	"hangs when cancelled": {func() provisioner.Funcs {
		f := good()
		render := f.RenderPodFn
		f.RenderPodFn = func(ctx context.Context, req *provisioner.Request) (*corev1.Pod, error) {
			if ctx.Err() != nil {
				select {}
			}
			return render(ctx, req)
		}
		return f
	}, "RenderPod with a cancelled context did not return within 1s"},
}

const badEnv = "PROVISIONERTEST_BAD"

// TestHelperBadProvisioner runs the suite on one bad provisioner, in a child process of
// TestSuiteCatchesBadProvisioners (a failing suite cannot be observed from inside).
func TestHelperBadProvisioner(t *testing.T) {
	name := os.Getenv(badEnv)
	if name == "" {
		t.Skip("run by TestSuiteCatchesBadProvisioners")
	}
	provisionertest.Run(t, bad[name].p(), config())
}

func TestSuiteCatchesBadProvisioners(t *testing.T) {
	for name, c := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBadProvisioner$", "-test.v")
			cmd.Env = append(os.Environ(), badEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a provisioner that %s:\n%s", name, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Errorf("the suite failed without saying %q:\n%s", c.want, out)
			}
		})
	}
}
