package pool

// Labels and annotations the reconciler puts on the objects it creates. The prefix is ours,
// not jumpstarter.dev/, which the exporter rewrites when it registers.
const (
	// LabelSet names the owning ExporterSet on its Exporters, Pods and Secrets (and on the
	// Jumpstarter credential Secrets it reads), so the caches can be restricted to them.
	LabelSet = "virtualtarget.jumpstarter.dev/exporterset"
	// LabelSpecHash is the hash of everything an instance was built from; an instance whose
	// hash differs from the set's is rolled once idle.
	LabelSpecHash = "virtualtarget.jumpstarter.dev/spec-hash"
	// LabelRetainedFrom marks an instance a set retired under reclaimPolicy Retain.
	LabelRetainedFrom = "virtualtarget.jumpstarter.dev/retained-from"
	// AnnotationRetiring is set (to the RFC 3339 time) on an Exporter the set is retiring:
	// it was disabled by the set and is deleted once unleased.
	AnnotationRetiring = "virtualtarget.jumpstarter.dev/retiring"
	// AnnotationCredential records which credential Secret a config Secret was written from.
	AnnotationCredential = "virtualtarget.jumpstarter.dev/credential"
	// AnnotationRenewedPod names (by UID) the completed Pod of an instance renewed in place
	// (leasewait.go): written by the set before it asks for the Pod's restart, it tells every
	// later pass that the exit has been answered, so the instance is restarting, not exited,
	// until that Pod is gone and its fresh one runs.
	AnnotationRenewedPod = "virtualtarget.jumpstarter.dev/renewed-pod"
)
