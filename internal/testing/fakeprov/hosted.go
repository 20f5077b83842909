package fakeprov

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// HostedName is the provisioner name the hosted fake serves.
const HostedName = "fake-hosted.jumpstarter.dev"

// AnnotationUnit is what the hosted fake's CreateExternal returns: its unit's name.
const AnnotationUnit = "fake-hosted.jumpstarter.dev/unit"

// Unit is one instance the hosted fake runs on its pretend lab host.
type Unit struct {
	Namespace, Set, Instance, InstanceUID string
	// Name is the value of AnnotationUnit.
	Name string
	// Config is the exporter config the unit was created with.
	Config []byte
	// Exit is the exporter's exit status once it exited (Exit), nil while it runs.
	Exit *int
}

// Hosted is a HostedProvisioner whose units run on a pretend lab host: the exporter runs
// with the config CreateExternal hands it, with no Pod. OnStart and OnStop are how the unit's
// exporter process reaches the Jumpstarter core (a test wires jumpsim's ConnectFromOutside
// and DisconnectFromOutside): called, without the fake's lock, when a unit starts, and when
// it exits or is removed. RenderPod refuses, as a hosted provisioner has no Pod to render.
type Hosted struct {
	OnStart, OnStop func(ctx context.Context, namespace, instance string) error

	mu        sync.Mutex
	createErr error
	units     map[string]*Unit // by namespace/instance/uid
	seq       int
	calls     map[string]int
}

var _ provisioner.HostedProvisioner = (*Hosted)(nil)

// NewHosted returns a Hosted with no units.
func NewHosted() *Hosted { return &Hosted{units: map[string]*Unit{}, calls: map[string]int{}} }

// Register adds the hosted fake to r under HostedName.
func (h *Hosted) Register(r *provisioner.Registry) error {
	return r.Register(HostedName, "fake-hosted", h)
}

// HostsExporter marks the capability.
func (h *Hosted) HostsExporter() {}

// Calls returns how often method was called.
func (h *Hosted) Calls(method string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[method]
}

// Units returns the units, sorted by name.
func (h *Hosted) Units() []Unit {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Unit, 0, len(h.units))
	for _, u := range h.units {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// FailCreates makes every CreateExternal fail with err until called with nil.
func (h *Hosted) FailCreates(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.createErr = err
}

// Exit makes the exporter of instance's unit exit with code, and stops its process.
func (h *Hosted) Exit(ctx context.Context, namespace, instance string, code int) error {
	h.mu.Lock()
	found := false
	for _, u := range h.units {
		if u.Namespace == namespace && u.Instance == instance && u.Exit == nil {
			u.Exit, found = &code, true
		}
	}
	h.mu.Unlock()
	if !found {
		return fmt.Errorf("no running unit of %s/%s", namespace, instance)
	}
	return h.stop(ctx, namespace, instance)
}

func (h *Hosted) stop(ctx context.Context, namespace, instance string) error {
	if h.OnStop == nil {
		return nil
	}
	return h.OnStop(ctx, namespace, instance)
}

// Describe reports HostedName.
func (h *Hosted) Describe(context.Context) (provisioner.Description, error) {
	return provisioner.Description{Names: []string{HostedName}, Version: "test"}, nil
}

// Validate accepts every request.
func (h *Hosted) Validate(context.Context, *provisioner.Request) error {
	h.count("Validate")
	return nil
}

// RenderPod refuses: a hosted instance has no Pod.
func (h *Hosted) RenderPod(context.Context, *provisioner.Request) (*corev1.Pod, error) {
	h.count("RenderPod")
	return nil, provisioner.Invalid(errors.New("fake-hosted: instances run on a lab host, with no Pod"))
}

// EnrichDrivers returns the drivers unchanged.
func (h *Hosted) EnrichDrivers(_ context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
	return append([]vtv1alpha1.DriverSpec(nil), req.Set.Spec.Template.Spec.Drivers...), nil
}

func (h *Hosted) count(method string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[method]++
}

// CreateExternal starts the instance's unit with req.ExporterConfig, or finds the one it
// started before (exited or not). A create without a config is refused.
func (h *Hosted) CreateExternal(ctx context.Context, req *provisioner.Request) (map[string]string, error) {
	h.count("CreateExternal")
	e := req.Exporter
	if e == nil || len(req.ExporterConfig) == 0 {
		return nil, provisioner.Invalid(errors.New("fake-hosted: CreateExternal needs the Exporter and its rendered config"))
	}
	k := remoteKey(e.Namespace, e.Name, string(e.UID))
	h.mu.Lock()
	if err := h.createErr; err != nil {
		h.mu.Unlock()
		return nil, err
	}
	u, ok := h.units[k]
	if !ok {
		h.seq++
		u = &Unit{Namespace: e.Namespace, Set: req.Set.Name, Instance: e.Name, InstanceUID: string(e.UID),
			Name: fmt.Sprintf("unit-%s-%d", e.Name, h.seq), Config: append([]byte(nil), req.ExporterConfig...)}
		h.units[k] = u
	}
	name := u.Name
	h.mu.Unlock()
	if !ok && h.OnStart != nil {
		if err := h.OnStart(ctx, e.Namespace, e.Name); err != nil {
			return nil, provisioner.Transient(err)
		}
	}
	return map[string]string{AnnotationUnit: name}, nil
}

// ObserveExternal reports Ready while the unit runs, Exited after a clean exit, Failed after
// any other, and Gone when there is no unit.
func (h *Hosted) ObserveExternal(_ context.Context, req *provisioner.Request) (provisioner.ExternalState, error) {
	h.count("ObserveExternal")
	e := req.Exporter
	h.mu.Lock()
	defer h.mu.Unlock()
	u, ok := h.units[remoteKey(e.Namespace, e.Name, string(e.UID))]
	switch {
	case !ok:
		return provisioner.ExternalState{Phase: provisioner.ExternalGone, Reason: "NotFound"}, nil
	case u.Exit == nil:
		return provisioner.ExternalState{Phase: provisioner.ExternalReady}, nil
	case *u.Exit == 0:
		return provisioner.ExternalState{Phase: provisioner.ExternalExited, Reason: "ProcessExited", Message: "fake-lab: the exporter exited with status 0"}, nil
	}
	return provisioner.ExternalState{Phase: provisioner.ExternalFailed, Reason: "ProcessExited", Message: fmt.Sprintf("fake-lab: the exporter exited with status %d", *u.Exit)}, nil
}

// InventoryExternal lists the units of req.Set.
func (h *Hosted) InventoryExternal(_ context.Context, req *provisioner.Request) ([]provisioner.ExternalResource, error) {
	h.count("InventoryExternal")
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []provisioner.ExternalResource
	for _, u := range h.units {
		if u.Namespace == req.Set.Namespace && u.Set == req.Set.Name {
			out = append(out, provisioner.ExternalResource{Instance: u.Instance, InstanceUID: u.InstanceUID,
				Kind: "FakeUnit", Name: u.Name, Annotations: map[string]string{AnnotationUnit: u.Name}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Cleanup stops and removes the instance's unit unless the class's reclaimPolicy is Retain.
func (h *Hosted) Cleanup(ctx context.Context, req *provisioner.Request) error {
	h.count("Cleanup")
	e := req.Exporter
	if e == nil || req.Class != nil && req.Class.Spec.ReclaimPolicy == vtv1alpha1.ReclaimRetain {
		return nil
	}
	h.mu.Lock()
	running := false
	for k, u := range h.units {
		if u.Namespace == e.Namespace && u.Instance == e.Name && (e.UID == "" || u.InstanceUID == string(e.UID)) {
			running = running || u.Exit == nil
			delete(h.units, k)
		}
	}
	h.mu.Unlock()
	if running {
		return h.stop(ctx, e.Namespace, e.Name)
	}
	return nil
}
