package main

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// Name is the provisioner name VirtualTargetClasses use: spec.provisioner: container.example.dev.
const Name = "container.example.dev"

// Provisioner runs the exporter next to a target container. Parameters:
//
//	image:     the target's image (default: the set's or class's images.runtime)
//	command:   the target's command, a list of strings
//	args:      the target's arguments, a list of strings
//	env:       the target's environment, an object of strings
//	resources: the target's requests and limits, e.g. {"cpu": 1, "memory": "512Mi"}
type Provisioner struct{}

type params struct {
	Image     string                     `json:"image"`
	Command   []string                   `json:"command"`
	Args      []string                   `json:"args"`
	Env       map[string]string          `json:"env"`
	Resources map[string]json.RawMessage `json:"resources"`
}

var known = []string{"args", "command", "env", "image", "resources"}

// Describe names the provisioner and its default exporter image.
func (Provisioner) Describe(context.Context) (provisioner.Description, error) {
	return provisioner.Description{
		Names:   []string{Name},
		Version: "0.1.0",
		DefaultImages: provisioner.Images{Exporter: provisioner.Image{
			Image: "quay.io/jumpstarter-dev/jumpstarter:latest", PullPolicy: corev1.PullIfNotPresent}},
		ParameterSchema: []byte(`{"type":"object","additionalProperties":false,"properties":{"image":{"type":"string"},` +
			`"command":{"type":"array","items":{"type":"string"}},"args":{"type":"array","items":{"type":"string"}},` +
			`"env":{"type":"object","additionalProperties":{"type":"string"}},"resources":{"type":"object"}}}`),
	}, nil
}

// parse decodes and checks the parameters, reporting every problem with its field path.
func parse(req *provisioner.Request) (*params, corev1.ResourceList, field.ErrorList) {
	root := field.NewPath("parameters")
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(req.Parameters, &keys); err != nil && len(req.Parameters) > 0 {
		return nil, nil, field.ErrorList{field.Invalid(root, string(req.Parameters), "must be a JSON object")}
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !slices.Contains(known, k) {
			errs = append(errs, field.NotSupported(root.Child(k), k, known))
		}
	}
	p := &params{}
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(req.Parameters, p); errors.As(err, &typeErr) && typeErr.Field != "" {
		path := strings.Split(typeErr.Field, ".") // e.g. "env.FOO"
		errs = append(errs, field.TypeInvalid(root.Child(path[0], path[1:]...), typeErr.Value, "must be a "+typeErr.Type.String()))
	}
	if p.Image == "" {
		p.Image = req.Images.Runtime.Image
	}
	if p.Image == "" {
		errs = append(errs, field.Required(root.Child("image"), "the target container's image (or set images.runtime)"))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		for _, msg := range validation.IsEnvVarName(k) {
			errs = append(errs, field.Invalid(root.Child("env").Key(k), k, msg))
		}
	}
	res := corev1.ResourceList{}
	for _, k := range slices.Sorted(maps.Keys(p.Resources)) {
		var q resource.Quantity
		if k != "cpu" && k != "memory" {
			errs = append(errs, field.NotSupported(root.Child("resources", k), k, []string{"cpu", "memory"}))
		} else if err := json.Unmarshal(p.Resources[k], &q); err != nil {
			var v any // the value as written: "2 GB", not "\"2 GB\""
			_ = json.Unmarshal(p.Resources[k], &v)
			errs = append(errs, field.Invalid(root.Child("resources", k), v, "must be a quantity such as 2, 500m or 512Mi"))
		} else {
			res[corev1.ResourceName(k)] = q
		}
	}
	return p, res, errs
}

// Validate checks the parameters.
func (Provisioner) Validate(_ context.Context, req *provisioner.Request) error {
	_, _, errs := parse(req)
	return provisioner.InvalidFields(errs)
}

// RenderPod returns the target container next to the exporter.
func (Provisioner) RenderPod(_ context.Context, req *provisioner.Request) (*corev1.Pod, error) {
	p, res, errs := parse(req)
	if len(errs) > 0 {
		return nil, provisioner.InvalidFields(errs)
	}
	target := corev1.Container{Name: "target", Image: p.Image, Command: p.Command, Args: p.Args}
	if p.Image == req.Images.Runtime.Image {
		target.ImagePullPolicy = req.Images.Runtime.PullPolicy
	}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) { // sorted: the same request, the same Pod
		target.Env = append(target.Env, corev1.EnvVar{Name: k, Value: p.Env[k]})
	}
	var spec vtv1alpha1.VirtualTargetClassSpec
	if req.Class != nil {
		spec = req.Class.Spec
	}
	if len(res) > 0 {
		target.Resources = corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()}
	} else if spec.Scheduling != nil && spec.Scheduling.Resources != nil {
		target.Resources = *spec.Scheduling.Resources.DeepCopy()
	}
	if spec.CredentialsSecretRef != nil { // its keys become the target's environment
		target.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: *spec.CredentialsSecretRef}}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{target}}}
	provisioner.AddExporterContainer(pod, req) // jmp run, reading the config Secret the reconciler writes
	if s := spec.Scheduling; s != nil {
		pod.Spec.NodeSelector = maps.Clone(s.NodeSelector)
		pod.Spec.Tolerations = slices.Clone(s.Tolerations)
	}
	return pod, nil
}

// EnrichDrivers adds nothing: the exporter's drivers reach the target over the Pod's network.
func (Provisioner) EnrichDrivers(_ context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
	return provisioner.TemplateDrivers(req), nil
}

// Cleanup has nothing to release: an instance lives entirely in its Pod.
func (Provisioner) Cleanup(context.Context, *provisioner.Request) error { return nil }
