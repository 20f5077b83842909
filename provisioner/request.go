package provisioner

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/merge"
)

// Paths and names of the exporter container's configuration, shared by every provisioner.
const (
	// ExporterConfigDir is where the exporter config Secret is mounted.
	ExporterConfigDir = "/etc/jumpstarter/exporters"
	// ExporterConfigFile is the Secret key and file name of the exporter config.
	ExporterConfigFile = "config.yaml"
	// ExporterConfigPath is the full path `jmp run --exporter-config` reads.
	ExporterConfigPath = ExporterConfigDir + "/" + ExporterConfigFile
)

// Image is a resolved container image: a reference and its pull policy.
type Image struct {
	// Image is the container image reference.
	Image string `json:"image"`
	// PullPolicy is the container's imagePullPolicy.
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
}

// Images holds one resolved Image per container role.
type Images struct {
	// Exporter runs `jmp run`.
	Exporter Image `json:"exporter"`
	// Runtime runs the provisioner's target (e.g. QEMU).
	Runtime Image `json:"runtime"`
}

// Request is the input of every Provisioner method. The pointers are shared with the caller
// and must not be modified.
type Request struct {
	// Set is the ExporterSet the instance belongs to.
	Set *vtv1alpha1.ExporterSet `json:"set"`
	// Class is the set's VirtualTargetClass.
	Class *vtv1alpha1.VirtualTargetClass `json:"class"`
	// Parameters are the class parameters with the set's deep-merged over them: a JSON object.
	Parameters json.RawMessage `json:"parameters"`
	// Images are the images to run, resolved per role (set, else class, else default).
	Images Images `json:"images"`
	// Exporter is the instance's Exporter; nil for Validate.
	Exporter *jumpstarterv1alpha1.Exporter `json:"exporter,omitempty"`
	// ConfigSecretName names the Secret, owned by the Exporter, whose ExporterConfigFile key
	// holds the exporter config; empty for Validate.
	ConfigSecretName string `json:"configSecretName,omitempty"`
	// Credentials are the data of the class's credentials Secret (spec.credentialsSecretRef),
	// set only for the ExternalProvisioner methods: a provisioner reaching a remote cluster or
	// cloud gets its credentials from the host, not from RBAC of its own. Never log them.
	Credentials map[string][]byte `json:"credentials,omitempty"`
	// ExporterConfig is the instance's rendered exporter config, the content of the
	// ExporterConfigFile key of the ConfigSecretName Secret. It holds the exporter's token:
	// never log it. It is set only for CreateExternal of a HostedProvisioner, whose target
	// runs the exporter itself outside any Pod and so cannot mount the Secret.
	ExporterConfig []byte `json:"exporterConfig,omitempty"`
}

// NewRequest builds the Request for set and class: parameters merged (class, then set) and
// images resolved against the provisioner's defaults. The error of bad parameter JSON is an
// invalid-parameters error naming the side.
func NewRequest(set *vtv1alpha1.ExporterSet, class *vtv1alpha1.VirtualTargetClass, defaults Images) (*Request, error) {
	var classRaw, setRaw []byte
	if class.Spec.Parameters != nil {
		classRaw = class.Spec.Parameters.Raw
	}
	if set.Spec.Parameters != nil {
		setRaw = set.Spec.Parameters.Raw
	}
	params, err := merge.Parameters(classRaw, setRaw)
	if err != nil {
		return nil, Invalid(fmt.Errorf("merging parameters: %w", err))
	}
	return &Request{
		Set:        set,
		Class:      class,
		Parameters: params,
		Images:     ResolveImages(defaults, class.Spec.Images, set.Spec.Images),
	}, nil
}

// ForExporter returns a copy of r for one instance.
func (r *Request) ForExporter(e *jumpstarterv1alpha1.Exporter, configSecretName string) *Request {
	c := *r
	c.Exporter = e
	c.ConfigSecretName = configSecretName
	return &c
}

// ResolveImages applies the image precedence (set, else class, else default; a whole
// {image, imagePullPolicy} pair at a time) for both container roles.
func ResolveImages(defaults Images, class, set *vtv1alpha1.Images) Images {
	r := merge.ResolveImages(
		merge.Images{Exporter: toMerge(&defaults.Exporter), Runtime: toMerge(&defaults.Runtime)},
		fromAPI(class), fromAPI(set))
	return Images{Exporter: fromMerge(r.Exporter), Runtime: fromMerge(r.Runtime)}
}

func fromAPI(in *vtv1alpha1.Images) *merge.Images {
	if in == nil {
		return nil
	}
	return &merge.Images{Exporter: specToMerge(in.Exporter), Runtime: specToMerge(in.Runtime)}
}

func specToMerge(s *vtv1alpha1.ImageSpec) *merge.Image {
	if s == nil {
		return nil
	}
	return &merge.Image{Image: s.Image, PullPolicy: string(s.ImagePullPolicy)}
}

func toMerge(i *Image) *merge.Image {
	return &merge.Image{Image: i.Image, PullPolicy: string(i.PullPolicy)}
}

func fromMerge(i *merge.Image) Image {
	if i == nil {
		return Image{}
	}
	return Image{Image: i.Image, PullPolicy: corev1.PullPolicy(i.PullPolicy)}
}
