package fakeprov

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// ExternalName is the provisioner name the external fake serves.
const ExternalName = "fake-external.jumpstarter.dev"

// AnnotationRemote is what CreateExternal returns: the name of the instance's remote
// resource.
const AnnotationRemote = "fake-external.jumpstarter.dev/vm"

// Remote is one resource the external fake holds on its pretend remote side, as a remote
// cluster would hold a VirtualMachine: labelled with its set and instance.
type Remote struct {
	Namespace, Set string
	// Instance and InstanceUID are the Exporter it was created for.
	Instance, InstanceUID string
	// Name identifies it remotely (the value of AnnotationRemote).
	Name    string
	Created time.Time
}

// External is an ExternalProvisioner over a Fake (which renders its Pods, and whose
// injected failures apply to it too), with an in-memory remote side that a test controls:
// it can be made unreachable, and resources can be deleted or left behind on it as a crash
// or a person would. A remote resource is Pending for ReadyAfter, then Ready.
type External struct {
	*Fake
	// ReadyAfter is how long a remote resource stays Pending after its creation.
	ReadyAfter time.Duration

	mu          sync.Mutex
	remote      map[string]*Remote // by namespace/instance/uid
	unreachable error
	seq         int
}

var _ provisioner.ExternalProvisioner = (*External)(nil)

// NewExternal returns an External whose Pods and injected failures are f's.
func NewExternal(f *Fake) *External {
	return &External{Fake: f, remote: map[string]*Remote{}}
}

// Register adds the external fake to r under ExternalName.
func (x *External) Register(r *provisioner.Registry) error {
	return r.Register(ExternalName, "fake-external", x)
}

// Describe reports ExternalName.
func (x *External) Describe(ctx context.Context) (provisioner.Description, error) {
	d, err := x.Fake.Describe(ctx)
	d.Names = []string{ExternalName}
	return d, err
}

// SetUnreachable makes every call that reaches the remote side fail with a transient
// "connection refused" while on is true.
func (x *External) SetUnreachable(on bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.unreachable = nil
	if on {
		x.unreachable = provisioner.Transient(errors.New("dial tcp 192.0.2.10:6443: connect: connection refused"))
	}
}

// Remotes returns the remote resources, sorted by name.
func (x *External) Remotes() []Remote {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]Remote, 0, len(x.remote))
	for _, r := range x.remote {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DeleteRemote deletes an instance's remote resource behind the reconciler's back (a
// person, or the remote side's own garbage collection) and reports whether there was one.
func (x *External) DeleteRemote(namespace, instance string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	found := false
	for k, r := range x.remote {
		if r.Namespace == namespace && r.Instance == instance {
			delete(x.remote, k)
			found = true
		}
	}
	return found
}

// Leave creates a remote resource for an instance as CreateExternal would, without anyone
// recording it: what a controller killed between the remote create and the local record
// leaves behind.
func (x *External) Leave(namespace, set, instance, uid string) Remote {
	x.mu.Lock()
	defer x.mu.Unlock()
	return *x.put(namespace, set, instance, uid)
}

func remoteKey(namespace, instance, uid string) string {
	return namespace + "/" + instance + "/" + uid
}

// put creates the resource of an instance, or returns the existing one. Under x.mu.
func (x *External) put(namespace, set, instance, uid string) *Remote {
	k := remoteKey(namespace, instance, uid)
	if r, ok := x.remote[k]; ok {
		return r
	}
	x.seq++
	r := &Remote{Namespace: namespace, Set: set, Instance: instance, InstanceUID: uid,
		Name: fmt.Sprintf("vm-%s-%d", instance, x.seq), Created: time.Now()}
	x.remote[k] = r
	return r
}

// reach records the call (and returns an injected failure), then fails when the remote side
// is unreachable. It returns with x.mu held when err is nil.
func (x *External) reach(method string) error {
	if err := x.record(method); err != nil {
		return err
	}
	x.mu.Lock()
	if err := x.unreachable; err != nil {
		x.mu.Unlock()
		return err
	}
	return nil
}

// CreateExternal creates the instance's remote resource, keyed by its Exporter's
// namespace, name and UID, or finds the one it created before.
func (x *External) CreateExternal(_ context.Context, req *provisioner.Request) (map[string]string, error) {
	if req.Exporter == nil {
		return nil, provisioner.Invalid(errors.New("CreateExternal without an Exporter"))
	}
	if err := x.reach("CreateExternal"); err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	e := req.Exporter
	r := x.put(e.Namespace, req.Set.Name, e.Name, string(e.UID))
	return map[string]string{AnnotationRemote: r.Name}, nil
}

// ObserveExternal reports Gone, Pending (for ReadyAfter after creation) or Ready.
func (x *External) ObserveExternal(_ context.Context, req *provisioner.Request) (provisioner.ExternalState, error) {
	if err := x.reach("ObserveExternal"); err != nil {
		return provisioner.ExternalState{}, err
	}
	defer x.mu.Unlock()
	e := req.Exporter
	r, ok := x.remote[remoteKey(e.Namespace, e.Name, string(e.UID))]
	switch {
	case !ok:
		return provisioner.ExternalState{Phase: provisioner.ExternalGone}, nil
	case time.Since(r.Created) < x.ReadyAfter:
		return provisioner.ExternalState{Phase: provisioner.ExternalPending, Reason: "Starting", Message: r.Name + " is starting"}, nil
	}
	return provisioner.ExternalState{Phase: provisioner.ExternalReady}, nil
}

// InventoryExternal lists the remote resources of req.Set.
func (x *External) InventoryExternal(_ context.Context, req *provisioner.Request) ([]provisioner.ExternalResource, error) {
	if err := x.reach("InventoryExternal"); err != nil {
		return nil, err
	}
	defer x.mu.Unlock()
	var out []provisioner.ExternalResource
	for _, r := range x.remote {
		if r.Namespace == req.Set.Namespace && r.Set == req.Set.Name {
			out = append(out, provisioner.ExternalResource{Instance: r.Instance, InstanceUID: r.InstanceUID,
				Kind: "FakeVM", Name: r.Name, Annotations: map[string]string{AnnotationRemote: r.Name}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Cleanup deletes the instance's remote resource unless the class's reclaimPolicy is
// Retain; an instance it never created is no error. An Exporter without a UID (a stub
// rebuilt from an inventory entry that recorded none) matches by name.
func (x *External) Cleanup(_ context.Context, req *provisioner.Request) error {
	if err := x.reach("Cleanup"); err != nil {
		return err
	}
	defer x.mu.Unlock()
	e := req.Exporter
	if e == nil || req.Class != nil && req.Class.Spec.ReclaimPolicy == vtv1alpha1.ReclaimRetain {
		return nil
	}
	for k, r := range x.remote {
		if r.Namespace == e.Namespace && r.Instance == e.Name && (e.UID == "" || r.InstanceUID == string(e.UID)) {
			delete(x.remote, k)
		}
	}
	return nil
}
