package provisionertest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// Config says how to exercise a provisioner.
type Config struct {
	// Parameters are valid class parameters, a JSON object ("" for none).
	Parameters string
	// SetParameters are merged over Parameters as an ExporterSet's are ("" for none).
	SetParameters string
	// Drivers are the set template's drivers, for EnrichDrivers.
	Drivers []vtv1alpha1.DriverSpec
	// Class, when set, adjusts the VirtualTargetClass of every request (scheduling,
	// credentials, images...).
	Class func(*vtv1alpha1.VirtualTargetClass)

	// Request, when set, replaces Parameters, SetParameters, Drivers and Class: it returns a
	// new valid request for RenderPod (Exporter and ConfigSecretName set) at every call; the
	// suite drops Exporter and ConfigSecretName for Validate.
	Request func(desc provisioner.Description) *provisioner.Request

	// Invalid lists parameter sets that Validate must reject.
	Invalid []Invalid

	// DriverTypes are the driver types (spec.template.spec.drivers[].type) the provisioner
	// claims to check in Validate. For each, the suite adds UnknownDriverKey to the config of
	// the first valid entry of that type (or appends an entry of it) and expects an invalid-
	// input error at that key's path: the exporter refuses a key its driver does not declare.
	DriverTypes []string
	// InvalidDrivers lists driver lists that Validate must reject.
	InvalidDrivers []InvalidDrivers

	// Names, when set, are the names Describe must return (in any order).
	Names []string

	// DryRun asks a real API server to admit a Pod without storing it (server-side dry-run
	// create). Nil skips that check, reported as a skipped subtest.
	DryRun func(ctx context.Context, pod *corev1.Pod) error

	// CallTimeout bounds every call of the provisioner. Default 30s.
	CallTimeout time.Duration

	// Unreachable, for a provisioner.ExternalProvisioner, cuts (true) and restores (false)
	// the connection to its remote end, so that the suite can check how it behaves without
	// one. Nil skips that check, reported as a skipped subtest.
	Unreachable func(cut bool)
}

// Invalid is a parameter set a provisioner must reject.
type Invalid struct {
	// Name names the subtest.
	Name string
	// Parameters replace Config.Parameters (the class parameters).
	Parameters string
	// Fields are field paths the error must name, e.g. "parameters.resources.memory".
	Fields []string
}

// InvalidDrivers is a template driver list a provisioner must reject.
type InvalidDrivers struct {
	// Name names the subtest.
	Name string
	// Drivers replace the drivers of the valid request's ExporterSet.
	Drivers []vtv1alpha1.DriverSpec
	// Fields are field paths the error must name, e.g.
	// "spec.template.spec.drivers[0].config.mem".
	Fields []string
}

// Fixture names, as the reconciler would derive them.
const (
	Namespace        = "conformance"
	SetName          = "conformance"
	ClassName        = "conformance"
	ExporterName     = "conformance-x7k2p"
	ConfigSecretName = ExporterName + "-exporter-config"
)

// NewRequest returns a RenderPod-ready request built as the reconciler builds it: a
// VirtualTargetClass naming the provisioner's first name with cfg's parameters, an ExporterSet
// with cfg's set parameters and drivers, the parameters merged and the images resolved against
// desc's defaults, and an Exporter with its config Secret name. With cfg.Request set, it
// returns that.
func (cfg Config) NewRequest(desc provisioner.Description) (*provisioner.Request, error) {
	if cfg.Request != nil {
		req := cfg.Request(desc)
		if req == nil {
			return nil, fmt.Errorf("Config.Request returned nil")
		}
		return req, nil
	}
	return cfg.newRequest(desc, cfg.Parameters)
}

func (cfg Config) newRequest(desc provisioner.Description, classParams string) (*provisioner.Request, error) {
	name := "conformance.example.dev"
	if len(desc.Names) > 0 {
		name = desc.Names[0]
	}
	class := &vtv1alpha1.VirtualTargetClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: vtv1alpha1.GroupVersion.String(), Kind: "VirtualTargetClass"},
		ObjectMeta: metav1.ObjectMeta{Name: ClassName, Namespace: Namespace, UID: "00000000-0000-0000-0000-00000000c1a5", Generation: 1},
		Spec: vtv1alpha1.VirtualTargetClassSpec{
			Provisioner:   name,
			Parameters:    jsonOrNil(classParams),
			BindingMode:   vtv1alpha1.BindingImmediate,
			ReclaimPolicy: vtv1alpha1.ReclaimDelete,
		},
	}
	if cfg.Class != nil {
		cfg.Class(class)
	}
	labels := map[string]string{"board": "conformance", "virtual": "true"}
	set := &vtv1alpha1.ExporterSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: vtv1alpha1.GroupVersion.String(), Kind: "ExporterSet"},
		ObjectMeta: metav1.ObjectMeta{Name: SetName, Namespace: Namespace, UID: "00000000-0000-0000-0000-0000000005e7", Generation: 1},
		Spec: vtv1alpha1.ExporterSetSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": "conformance"}},
			Template: vtv1alpha1.ExporterTemplate{
				Metadata: vtv1alpha1.ExporterTemplateMetadata{Labels: labels},
				Spec:     vtv1alpha1.ExporterTemplateSpec{Drivers: cloneDrivers(cfg.Drivers)},
			},
			VirtualTargetClassName: ClassName,
			MaxReplicas:            ptr.To[int32](4),
			ScaleDownCooldown:      &metav1.Duration{Duration: 5 * time.Minute},
			RecycleStrategy:        vtv1alpha1.RecycleExitAndReplace,
			Parameters:             jsonOrNil(cfg.SetParameters),
		},
	}
	req, err := provisioner.NewRequest(set, class, desc.DefaultImages)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	exp := &jumpstarterv1alpha1.Exporter{
		TypeMeta: metav1.TypeMeta{APIVersion: jumpstarterv1alpha1.GroupVersion.String(), Kind: "Exporter"},
		ObjectMeta: metav1.ObjectMeta{
			Name: ExporterName, Namespace: Namespace, UID: types.UID("00000000-0000-0000-0000-0000000e0e0e"),
			Labels: map[string]string{"board": "conformance", "virtual": "true"},
		},
		Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
	}
	return req.ForExporter(exp, ConfigSecretName), nil
}

func jsonOrNil(s string) *apiextensionsv1.JSON {
	if s == "" {
		return nil
	}
	return &apiextensionsv1.JSON{Raw: []byte(s)}
}

func cloneDrivers(in []vtv1alpha1.DriverSpec) []vtv1alpha1.DriverSpec {
	if in == nil {
		return nil
	}
	out := make([]vtv1alpha1.DriverSpec, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// forValidate returns req as the reconciler passes it to Validate: no Exporter, no Secret.
func forValidate(req *provisioner.Request) *provisioner.Request {
	return req.ForExporter(nil, "")
}

// snapshot is a deep copy of a request, to detect mutation.
func snapshot(req *provisioner.Request) *provisioner.Request {
	c := *req
	c.Set = req.Set.DeepCopy()
	c.Class = req.Class.DeepCopy()
	c.Exporter = req.Exporter.DeepCopy()
	if req.Parameters != nil {
		c.Parameters = append(json.RawMessage(nil), req.Parameters...)
	}
	return &c
}
