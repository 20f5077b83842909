package baremetal

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// AnnotationHost is the Exporter annotation CreateExternal returns: the name of the lab host
// (hosts[].name) the instance runs on. The reconciler records it on the Exporter, so that
// ObserveExternal and Cleanup go straight to that host, also after a controller restart.
const AnnotationHost = ProvisionerName + "/host"

// Provisioner is the qemu-baremetal.jumpstarter.dev provisioner: each instance is a QEMU
// process and the Jumpstarter exporter driving it, started over SSH on one of the class's lab
// hosts. It holds a cache of SSH connections and the placements in flight, each guarded by a
// mutex, so it is safe for concurrent use. Close it to close its connections.
//
// Its instances have no Pod: it is a provisioner.HostedProvisioner, which the reconciler does
// not support yet.
type Provisioner struct {
	version string
	now     func() time.Time
	conns   *connPool
	placing *reservations
}

var _ provisioner.HostedProvisioner = (*Provisioner)(nil)

// Option configures a Provisioner.
type Option func(*Provisioner)

// WithClock sets the clock that stamps instance metadata and times idle connections and
// placements in flight; time.Now by default.
func WithClock(now func() time.Time) Option {
	return func(p *Provisioner) {
		if now != nil {
			p.now = now
		}
	}
}

// WithDial replaces how lab hosts are connected to (DialConn by default), so tests can run
// the provisioner against fake hosts or bound the dial time of real ones.
func WithDial(dial DialFunc) Option {
	return func(p *Provisioner) {
		if dial != nil {
			p.conns.dial = dial
		}
	}
}

// New returns a Provisioner changed by opts.
func New(opts ...Option) *Provisioner {
	p := &Provisioner{version: provisioner.ModuleVersion(), now: time.Now, placing: &reservations{}}
	p.conns = newConnPool(DialConn, func() time.Time { return p.now() })
	for _, opt := range opts {
		opt(p)
	}
	return p
}

// Close closes every cached SSH connection. Calls in flight on them fail; the Provisioner
// must not be used afterwards.
func (p *Provisioner) Close() error { return p.conns.Close() }

// HostsExporter marks the provisioner.HostedProvisioner capability: the exporter runs on the
// lab host next to QEMU, not in a Pod.
func (p *Provisioner) HostsExporter() {}

// Describe returns the name served and the version. There are no default images: nothing of
// this provisioner runs in a container.
func (p *Provisioner) Describe(context.Context) (provisioner.Description, error) {
	return provisioner.Description{Names: []string{ProvisionerName}, Version: p.version}, nil
}

// Validate checks the merged parameters and that credentials will reach the provisioner:
// the reconciler hands over the Secret the class's spec.credentialsSecretRef names, so that
// must be set, and parameters.credentialsSecretRef, when given too, must name the same
// Secret. Bad input gives an error for which provisioner.IsInvalid is true, with one field
// error per problem.
func (p *Provisioner) Validate(_ context.Context, req *provisioner.Request) error {
	_, errs := checkRequest(req)
	return provisioner.InvalidFields(errs)
}

// RenderPod refuses: an instance of this provisioner runs on a lab host and has no Pod. The
// controller starts it with CreateExternal instead (provisioner.HostedProvisioner), so a
// call is a caller's mistake.
func (p *Provisioner) RenderPod(context.Context, *provisioner.Request) (*corev1.Pod, error) {
	return nil, provisioner.Invalid(errors.New("qemu-baremetal: this provisioner's instances have no Pod (they run on lab hosts over SSH); " +
		"they are started with CreateExternal (provisioner.HostedProvisioner)"))
}

// EnrichDrivers returns a copy of the set's drivers, unchanged. (Pointing the exporter at
// the instance's QMP socket is not built yet.)
func (p *Provisioner) EnrichDrivers(_ context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
	return provisioner.TemplateDrivers(req), nil
}

// credentialsPath is where the credentials errors point: the parameter that names the Secret.
var credentialsPath = parametersPath.Child("credentialsSecretRef")

// checkRequest parses the parameters and checks the credentials reference against the
// class's. It returns the parameters only when there is no error.
func checkRequest(req *provisioner.Request) (*Parameters, field.ErrorList) {
	if req == nil {
		return nil, field.ErrorList{field.InternalError(parametersPath, errors.New("no request"))}
	}
	params, errs := ParseParameters(req.Parameters)
	if len(errs) > 0 {
		return nil, errs
	}
	var classRef *corev1.LocalObjectReference
	if req.Class != nil && req.Class.Spec.CredentialsSecretRef != nil && req.Class.Spec.CredentialsSecretRef.Name != "" {
		classRef = req.Class.Spec.CredentialsSecretRef
	}
	paramRef := params.CredentialsSecretRef
	switch {
	case classRef == nil && paramRef == nil:
		errs = append(errs, field.Required(credentialsPath, fmt.Sprintf(
			"credentials (SSH key and known_hosts) are required: set the class's spec.credentialsSecretRef to a Secret holding %q and %q",
			SecretKeyPrivateKey, SecretKeyKnownHosts)))
	case classRef == nil:
		// Only the class's reference is read by the reconciler: a Secret named here alone
		// would never reach CreateExternal.
		errs = append(errs, field.Invalid(credentialsPath.Child("name"), paramRef.Name,
			"the class's spec.credentialsSecretRef must name this Secret too: only that one is handed to the provisioner"))
	case paramRef != nil && paramRef.Name != classRef.Name:
		errs = append(errs, field.Invalid(credentialsPath.Child("name"), paramRef.Name,
			fmt.Sprintf("must agree with the class's spec.credentialsSecretRef.name %q, the Secret handed to the provisioner", classRef.Name)))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return params, nil
}

// target is what the external calls work from: the checked parameters and the parsed
// credentials, with the identity of the credentials' content for the connection cache.
type target struct {
	params  *Parameters
	creds   *Credentials
	credsID string
}

// target checks req and parses its credentials. Both failures are invalid input: a person
// must fix the class or the Secret.
func (p *Provisioner) target(req *provisioner.Request) (*target, error) {
	params, errs := checkRequest(req)
	if len(errs) > 0 {
		return nil, provisioner.InvalidFields(errs)
	}
	creds, err := ParseCredentials(req.Credentials)
	if err != nil {
		return nil, provisioner.Invalid(fmt.Errorf("qemu-baremetal: %w", err))
	}
	return &target{params: params, creds: creds, credsID: credentialsID(req.Credentials)}, nil
}

// onHost runs fn with a Machine for h over a cached connection.
func (p *Provisioner) onHost(ctx context.Context, t *target, h Host, fn func(*Machine) error) error {
	return p.conns.with(ctx, h, t.params.User, t.creds, t.credsID, func(r Runner) error {
		m := NewMachine(h.Name, r, t.params.Root)
		m.now = p.now
		return fn(m)
	})
}
