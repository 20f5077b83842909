package provisioner

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// Provisioner renders and validates the instances of the VirtualTargetClasses that name it.
//
// Implementations must be safe for concurrent use, deterministic (the same Request gives the
// same result), and must not mutate the Request.
type Provisioner interface {
	// Describe says which provisioner names this implementation serves, its version, its
	// default images and its parameter schema.
	Describe(ctx context.Context) (Description, error)

	// Validate checks the merged parameters (and anything else of the request it depends on).
	// It returns nil, or an error for which IsInvalid is true, carrying field-path errors
	// rooted at "parameters" (e.g. `parameters.resources.memory: "2 GB" is not a quantity`).
	Validate(ctx context.Context, req *Request) error

	// RenderPod returns the instance Pod for req.Exporter. The reconciler sets its name,
	// namespace, labels and owner; the provisioner fills the spec and may add labels and
	// annotations of its own. The Pod must run the exporter with req.ConfigSecretName mounted
	// at ExporterConfigDir and restartPolicy Never; AddExporterContainer does both.
	RenderPod(ctx context.Context, req *Request) (*corev1.Pod, error)

	// EnrichDrivers returns the exporter's driver list with what this provisioner's runtime
	// needs filled in (e.g. the QEMU driver's launcher socket). Explicit driver config always
	// wins over values derived from parameters. It returns a new slice; req is unchanged.
	EnrichDrivers(ctx context.Context, req *Request) ([]vtv1alpha1.DriverSpec, error)

	// Cleanup releases external resources of a retired instance (cloud VMs, licences...).
	// It is called before the Exporter is deleted and must be idempotent; a provisioner
	// whose instances live entirely in their Pod returns nil.
	Cleanup(ctx context.Context, req *Request) error
}

// Description is what a provisioner says about itself.
type Description struct {
	// Names are the provisioner names served (VirtualTargetClass spec.provisioner values).
	Names []string `json:"names"`
	// Version is the implementation's version, for logs and `version` output.
	Version string `json:"version,omitempty"`
	// DefaultImages are used for a container role neither the set nor the class overrides.
	DefaultImages Images `json:"defaultImages"`
	// ParameterSchema is an optional JSON Schema of the parameters, for documentation.
	ParameterSchema []byte `json:"parameterSchema,omitempty"`
}
