package objects

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// Names of Jumpstarter objects and keys the controllers read (the front re-exports them).
const (
	// DefaultCAConfigMap is the namespace's CA ConfigMap used when a class names none.
	DefaultCAConfigMap = "jumpstarter-service-ca-cert"
	// DefaultCAKey is the key of DefaultCAConfigMap.
	DefaultCAKey = "ca.crt"
	// TokenKey is the key of the Jumpstarter credential Secret holding the token.
	TokenKey = "token"
)

// UpstreamLabelSet is the label upstream's controller puts on its Pods and config Secrets,
// naming the set. Ours carry it too, so upstream's controller, put back, finds them.
const UpstreamLabelSet = "exporterset.jumpstarter.dev/name"

// PodControllerIndex indexes Pods by the UID of the object controlling them: the instance
// controller reads one instance's Pods by it. Read by the set's index, every reconcile of an
// instance copied all the set's Pods out of the cache, and a 0 -> 500 scale-up spent a
// fifth of the controller's CPU doing so (bench-scale's CPU profile, 2026-12-05).
const PodControllerIndex = "metadata.controllerUID"

// OutOfPool reports an instance on its way out: deleted, retiring or quarantined. It keeps
// what it has until removed, and counts toward nothing.
func OutOfPool(in *pool.Instance) bool { return in.Deleting() || in.Retiring() || in.Quarantined() }

// IgnoreConflict drops optimistic-concurrency conflicts: the next reconcile works from the
// newer object.
func IgnoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// OfASet reports an Exporter a set may own: ours (the set label) or one controlled by an
// ExporterSet (upstream's, to be taken over).
func OfASet(e *jumpstarterv1alpha1.Exporter) bool {
	if e.Labels[pool.LabelSet] != "" {
		return true
	}
	ref := metav1.GetControllerOf(e)
	return ref != nil && ref.Kind == "ExporterSet"
}

// What the controllers record on the Exporter of an external instance
// (provisioner.ExternalProvisioner). The instance controller writes all three as it creates
// the target; the set controller drops the finalizer once the target is cleaned up.
const (
	// FinalizerExternal holds an Exporter of an external provisioner until its remote
	// resources are cleaned up.
	FinalizerExternal = "virtualtarget.jumpstarter.dev/external-cleanup"
	// AnnotationClass records on an external instance's Exporter the class it was created
	// with: once its set is gone, the class names the provisioner, its parameters and
	// credentials.
	AnnotationClass = "virtualtarget.jumpstarter.dev/class"
	// AnnotationExternalRecorded marks an Exporter whose external resources were created
	// and whose CreateExternal annotations are recorded beside it; its value is when.
	AnnotationExternalRecorded = "virtualtarget.jumpstarter.dev/external-created"
)
