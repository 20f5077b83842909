package provisioner

import "context"

// ExternalProvisioner is the optional capability of a provisioner whose instances own
// resources outside their Pod: a VirtualMachine on a remote KubeVirt cluster, a cloud VM. The
// reconciler checks for it with a type assertion (or, for a plugin, by the protocol version it
// negotiated), so Pod-only provisioners and existing plugins need no change.
//
// Every method gets a Request whose Credentials hold the class's credentials Secret (see
// Request.Credentials); Exporter is the instance's Exporter, with the annotations that
// CreateExternal returned recorded on it once the reconciler has written them.
//
// The lifecycle of one instance is: CreateExternal (repeated until it succeeds, and again
// after a controller restart: it must be idempotent, keyed by the Exporter's namespace, name
// and UID), ObserveExternal on every pass, and Cleanup (the Provisioner method) when the
// instance is retired; Cleanup honours the set's reclaimPolicy and must succeed for an
// instance it never created. InventoryExternal lets the reconciler sweep orphans: resources
// created just before a crash, before the Exporter recorded them, or left by a deleted set.
type ExternalProvisioner interface {
	Provisioner

	// CreateExternal creates the instance's external resources, or finds them when they exist
	// already, and returns the annotations that identify them (they are recorded on the
	// Exporter so that a restarted controller finds them). Keys must be qualified names
	// (e.g. "kubevirt.jumpstarter.dev/vm"). A remote end that cannot be reached is a
	// transient error (Errorf); input the remote side refuses is Invalid.
	CreateExternal(ctx context.Context, req *Request) (map[string]string, error)

	// ObserveExternal reports the state of the instance's external resources. It returns an
	// error only when it cannot tell (the remote end is unreachable); a failed or missing
	// resource is a state, not an error.
	ObserveExternal(ctx context.Context, req *Request) (ExternalState, error)

	// InventoryExternal lists every external resource this provisioner holds for req.Set
	// (req.Exporter is nil), whatever the state of its Exporter. The reconciler deletes, with
	// Cleanup, those whose instance no longer exists.
	InventoryExternal(ctx context.Context, req *Request) ([]ExternalResource, error)
}

// HostedProvisioner is the optional capability of an ExternalProvisioner whose target runs
// the exporter itself, outside any Pod (a lab host reached over SSH): its instances have no
// Pod, so RenderPod has nothing to render, and CreateExternal gets the instance's rendered
// exporter config in Request.ExporterConfig to hand to the target. HostsExporter is a marker
// that only says so.
//
// The reconciler treats the hosted unit as the instance's Pod: the instance controller
// creates it (CreateExternal, once the instance's config is rendered) where it would start a
// Pod, and removes it (Cleanup, with the class's reclaimPolicy set to Delete: a restart
// replaces the processes) where it would delete one; the set controller reads its
// ExternalState as it reads a Pod's phase. CreateExternal must adopt a unit of the same
// Exporter UID, exited or not, rather than start a second. Served in process only: the plugin
// protocol does not carry ExporterConfig.
type HostedProvisioner interface {
	ExternalProvisioner

	// HostsExporter marks the capability; it does nothing.
	HostsExporter()
}

// ExternalPhase is the state of an instance's external resources.
type ExternalPhase string

const (
	// ExternalPending: created, not ready yet (a VM scheduling or booting).
	ExternalPending ExternalPhase = "Pending"
	// ExternalReady: the target runs and the exporter can reach it.
	ExternalReady ExternalPhase = "Ready"
	// ExternalFailed: the target failed; Reason and Message say why. The reconciler treats it
	// like a failed Pod: reported, backed off, replaced per the recycle strategy.
	ExternalFailed ExternalPhase = "Failed"
	// ExternalExited: the exporter a hosted target runs (HostedProvisioner) exited of its own
	// accord with status 0, as it does after a lease when the set's recycle strategy asks it
	// to. The reconciler treats it like a Pod that Succeeded: recycled, not a failure. Only a
	// HostedProvisioner reports it; any other exit is Failed.
	ExternalExited ExternalPhase = "Exited"
	// ExternalGone: nothing exists for the instance (never created, or deleted behind the
	// reconciler's back); it is created again.
	ExternalGone ExternalPhase = "Gone"
)

// ExternalState is what ObserveExternal saw.
type ExternalState struct {
	// Phase is the resources' state.
	Phase ExternalPhase `json:"phase"`
	// Reason is a CamelCase cause for Pending and Failed, e.g. "ErrorUnschedulable".
	Reason string `json:"reason,omitempty"`
	// Message is the remote side's own message, quoted in the set's conditions.
	Message string `json:"message,omitempty"`
}

// ExternalResource is one resource an ExternalProvisioner holds for a set.
type ExternalResource struct {
	// Instance is the name of the Exporter the resource was created for.
	Instance string `json:"instance"`
	// InstanceUID is that Exporter's UID, when the resource recorded it: an Exporter of the
	// same name but another UID is a different instance.
	InstanceUID string `json:"instanceUID,omitempty"`
	// Kind and Name say what the resource is, for events and logs (e.g.
	// "VirtualMachine", "vms/pool-abc12").
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Annotations are what CreateExternal returned for it, so that Cleanup can find it
	// without its Exporter.
	Annotations map[string]string `json:"annotations,omitempty"`
}
