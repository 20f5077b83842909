package exporterset

// Event reasons, one per kind of change or failure the reconciler reports.
const (
	// EventCreated: an instance (Exporter) was created.
	EventCreated = "Created"
	// EventCreateFailed: creating an instance failed.
	EventCreateFailed = "CreateFailed"
	// EventConfigured: an instance's exporter config Secret was written.
	EventConfigured = "Configured"
	// EventPodStarted: an instance's Pod was created.
	EventPodStarted = "PodStarted"
	// EventPodRestarted: a terminal Pod was deleted so the instance starts afresh (InPlaceReuse).
	EventPodRestarted = "PodRestarted"
	// EventRetiring: an instance was disabled to be removed once unleased.
	EventRetiring = "Retiring"
	// EventRetired: a retired instance was deleted.
	EventRetired = "Retired"
	// EventRetained: a retired instance was released from the set and kept (reclaimPolicy Retain).
	EventRetained = "Retained"
	// EventRecycled: an instance whose exporter exited after its lease was deleted to be replaced.
	EventRecycled = "Recycled"
	// EventInvalidSpec: the class, the parameters or the selector are wrong.
	EventInvalidSpec = "InvalidSpec"
	// EventProvisionerError: the provisioner failed.
	EventProvisionerError = "ProvisionerError"
	// EventWaiting: the set waits for something a person must provide (CA bundle, credentials).
	EventWaiting = "Waiting"
)
