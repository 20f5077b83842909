package qemu

import (
	"bytes"
	"context"
	_ "embed"

	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// Name is the provisioner name a VirtualTargetClass's spec.provisioner gives to select this
// provisioner.
const Name = "qemu.jumpstarter.dev"

// parameterSchema is the JSON Schema of the parameters, returned by Describe.
//
//go:embed schema.json
var parameterSchema []byte

// Provisioner is the qemu.jumpstarter.dev provisioner. It holds only configuration set at
// construction, so it is safe for concurrent use.
type Provisioner struct {
	defaults provisioner.Images
	version  string
}

var (
	_ provisioner.Provisioner      = (*Provisioner)(nil)
	_ provisioner.WarningValidator = (*Provisioner)(nil)
)

// New returns a Provisioner with the built-in default images, changed by opts.
func New(opts ...Option) *Provisioner {
	p := &Provisioner{defaults: DefaultImages(), version: provisioner.ModuleVersion()}
	for _, opt := range opts {
		opt(p)
	}
	return p
}

// Describe returns the name served, the version, the default images and the parameter
// schema.
func (p *Provisioner) Describe(context.Context) (provisioner.Description, error) {
	return provisioner.Description{
		Names:           []string{Name},
		Version:         p.version,
		DefaultImages:   p.defaults,
		ParameterSchema: bytes.Clone(parameterSchema),
	}, nil
}

// Validate checks the merged parameters, the set's driver entries (those of the types in
// DriverTypes against the upstream driver's fields, type typos, refs) and the class's
// credentials and limits. Bad input gives an error for which provisioner.IsInvalid is true,
// with one field error per problem.
func (p *Provisioner) Validate(_ context.Context, req *provisioner.Request) error {
	_, err := newPlan(req)
	return err
}

// Warnings returns a warning for each driver entry of an upstream driver package
// (jumpstarter_driver_*) whose type the provisioner does not know: it may be a third-party or
// newer driver, so it does not block the set, but its config is not checked. It never fails.
func (p *Provisioner) Warnings(_ context.Context, req *provisioner.Request) ([]provisioner.Warning, error) {
	if req == nil {
		return nil, nil
	}
	return driverWarnings(req.Set), nil
}

// RenderPod returns the instance Pod's spec and annotations, after the same checks as
// Validate. The reconciler adds the name, namespace, labels and owner.
func (p *Provisioner) RenderPod(_ context.Context, req *provisioner.Request) (*corev1.Pod, error) {
	pl, err := newPlan(req)
	if err != nil {
		return nil, err
	}
	if req.ConfigSecretName == "" {
		return nil, provisioner.Errorf("qemu: RenderPod needs the exporter config Secret's name")
	}
	return p.renderPod(req, pl), nil
}

// EnrichDrivers returns the set's drivers with the Qemu entry completed (launcher socket;
// arch, smp, mem, disk_size from the parameters; UEFI firmware; hostname; ssh forward) and a
// TCP driver for the guest's ssh when the set has none. Keys the entry sets win.
func (p *Provisioner) EnrichDrivers(_ context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
	pl, err := newPlan(req)
	if err != nil {
		return nil, err
	}
	return enrichDrivers(req, pl)
}

// Cleanup does nothing: an instance lives entirely in its Pod and the Pod's volumes, which
// go with the Exporter that owns them.
func (p *Provisioner) Cleanup(context.Context, *provisioner.Request) error { return nil }
