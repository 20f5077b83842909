package kubevirt

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// Name is the provisioner name a VirtualTargetClass's spec.provisioner gives to select this
// provisioner.
const Name = "kubevirt.jumpstarter.dev"

// Provisioner is the kubevirt.jumpstarter.dev provisioner. Besides its configuration it holds
// only a cache of remote clients, guarded by a mutex, so it is safe for concurrent use.
type Provisioner struct {
	defaults provisioner.Images
	version  string
	remotes  clients
}

var _ provisioner.ExternalProvisioner = (*Provisioner)(nil)

// New returns a Provisioner with the built-in default images, changed by opts.
func New(opts ...Option) *Provisioner {
	p := &Provisioner{defaults: DefaultImages(), version: provisioner.ModuleVersion()}
	for _, opt := range opts {
		opt(p)
	}
	return p
}

// Describe returns the name served, the version and the default images.
func (p *Provisioner) Describe(context.Context) (provisioner.Description, error) {
	return provisioner.Description{Names: []string{Name}, Version: p.version, DefaultImages: p.defaults}, nil
}

// Validate checks the merged parameters, the class's credentials Secret reference (the
// kubeconfig comes from it) and the set's TcpNetwork driver entries. Bad input gives an error
// for which provisioner.IsInvalid is true, with one field error per problem.
func (p *Provisioner) Validate(_ context.Context, req *provisioner.Request) error {
	_, err := newPlan(req)
	return err
}

// RenderPod returns the exporter Pod: the exporter and a port-forward sidecar that reaches
// the VM through the remote cluster's API with the class's kubeconfig.
func (p *Provisioner) RenderPod(_ context.Context, req *provisioner.Request) (*corev1.Pod, error) {
	pl, err := newPlan(req)
	if err != nil {
		return nil, err
	}
	if req.ConfigSecretName == "" || req.Exporter == nil {
		return nil, provisioner.Errorf("kubevirt: RenderPod needs the Exporter and its config Secret's name")
	}
	return renderPod(req, pl), nil
}

// EnrichDrivers returns the set's drivers with a TcpNetwork driver for each forward (ssh and
// forwardPorts) that the set does not define itself, pointing at the sidecar's local port.
func (p *Provisioner) EnrichDrivers(_ context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
	pl, err := newPlan(req)
	if err != nil {
		return nil, err
	}
	return enrichDrivers(req, pl)
}
