// Package fakeprov is the one fake Provisioner the reconciler's tests share: it renders a
// small valid Pod for any instance, records every call, and can be told to fail calls.
package fakeprov

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// Name is the provisioner name the fake serves.
const Name = "fake.jumpstarter.dev"

// Fake is a recording provisioner. Parameters it understands: {"invalid": "<message>"} makes
// Validate fail with a field error at parameters.invalid; {"warn": "<message>"} makes
// Warnings return one warning at parameters.warn; {"sidecar": true} renders the
// runtime as a native sidecar (an init container with restartPolicy Always), as the QEMU
// provisioner does, so a crashing runtime crash-loops instead of failing the Pod; anything
// else is accepted.
type Fake struct {
	mu    sync.Mutex
	calls map[string]int
	fail  map[string]error // method -> error returned by its next calls until cleared
}

var (
	_ provisioner.Provisioner      = (*Fake)(nil)
	_ provisioner.WarningValidator = (*Fake)(nil)
)

// Warnings returns a warning at parameters.warn when that parameter is set.
func (f *Fake) Warnings(_ context.Context, req *provisioner.Request) ([]provisioner.Warning, error) {
	if err := f.record("Warnings"); err != nil {
		return nil, err
	}
	var params struct {
		Warn string `json:"warn"`
	}
	if len(req.Parameters) > 0 {
		_ = json.Unmarshal(req.Parameters, &params)
	}
	if params.Warn == "" {
		return nil, nil
	}
	return []provisioner.Warning{{Field: "spec.parameters.warn", Message: params.Warn}}, nil
}

// New returns a Fake.
func New() *Fake { return &Fake{calls: map[string]int{}, fail: map[string]error{}} }

// Registry returns a registry serving the fake under Name.
func (f *Fake) Registry() *provisioner.Registry {
	r := provisioner.NewRegistry()
	if err := r.Register(Name, "fake", f); err != nil {
		panic(err)
	}
	return r
}

// Fail makes every call of method ("Validate", "RenderPod", ...) return err until Fail is
// called again with nil.
func (f *Fake) Fail(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.fail, method)
	} else {
		f.fail[method] = err
	}
}

// Calls returns how often method was called.
func (f *Fake) Calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *Fake) record(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	return f.fail[method]
}

// DefaultImages are the fake's default images.
var DefaultImages = provisioner.Images{
	Exporter: provisioner.Image{Image: "quay.io/jumpstarter-dev/jumpstarter:latest", PullPolicy: corev1.PullIfNotPresent},
	Runtime:  provisioner.Image{Image: "registry.example/fake-runtime:latest", PullPolicy: corev1.PullIfNotPresent},
}

// Describe reports Name and DefaultImages.
func (f *Fake) Describe(context.Context) (provisioner.Description, error) {
	if err := f.record("Describe"); err != nil {
		return provisioner.Description{}, err
	}
	return provisioner.Description{Names: []string{Name}, Version: "test", DefaultImages: DefaultImages}, nil
}

// Validate accepts any object without an "invalid" key.
func (f *Fake) Validate(_ context.Context, req *provisioner.Request) error {
	if err := f.record("Validate"); err != nil {
		return err
	}
	var params map[string]any
	if err := json.Unmarshal(req.Parameters, &params); err != nil {
		return provisioner.Invalid(err)
	}
	if msg, ok := params["invalid"]; ok {
		return provisioner.InvalidFields(field.ErrorList{field.Invalid(field.NewPath("parameters", "invalid"), msg, fmt.Sprint(msg))})
	}
	return nil
}

// RenderPod returns an exporter container mounting the config Secret, and a runtime sidecar.
func (f *Fake) RenderPod(_ context.Context, req *provisioner.Request) (*corev1.Pod, error) {
	if err := f.record("RenderPod"); err != nil {
		return nil, err
	}
	sec := &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "runtime", Image: req.Images.Runtime.Image, ImagePullPolicy: req.Images.Runtime.PullPolicy, SecurityContext: sec},
	}}}
	provisioner.AddExporterContainer(pod, req) // first: Containers[1] is the runtime
	if sc := req.Class.Spec.Scheduling; sc != nil {
		// As a real provisioner does: the class decides where Pods run and what the
		// runtime requests, so the scheduler can refuse them.
		pod.Spec.NodeSelector, pod.Spec.Tolerations = sc.NodeSelector, sc.Tolerations
		if sc.Resources != nil {
			pod.Spec.Containers[1].Resources = *sc.Resources
		}
	}
	var params struct {
		Sidecar bool `json:"sidecar"`
	}
	if len(req.Parameters) > 0 {
		_ = json.Unmarshal(req.Parameters, &params) // Validate has accepted them
	}
	if params.Sidecar {
		runtime := pod.Spec.Containers[1]
		runtime.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		pod.Spec.InitContainers = []corev1.Container{runtime}
		pod.Spec.Containers = pod.Spec.Containers[:1]
	}
	return pod, nil
}

// EnrichDrivers adds a "fake" driver to the template's, unless one is there.
func (f *Fake) EnrichDrivers(_ context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
	if err := f.record("EnrichDrivers"); err != nil {
		return nil, err
	}
	drivers := provisioner.TemplateDrivers(req)
	for _, d := range drivers {
		if d.Name == "fake" {
			return drivers, nil
		}
	}
	return append(drivers, vtv1alpha1.DriverSpec{Name: "fake", Type: "jumpstarter_driver_fake.Fake"}), nil
}

// Cleanup records the call.
func (f *Fake) Cleanup(context.Context, *provisioner.Request) error { return f.record("Cleanup") }
