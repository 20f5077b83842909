package soak

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// retiringKey is the annotation the reconciler puts on an Exporter it disables to retire.
const retiringKey = expool.AnnotationRetiring

// quarantinedKey is the annotation the reconciler puts on an Exporter it quarantines (with
// spec.enabled=false in the same write).
const quarantinedKey = expool.AnnotationQuarantined

// instanceView is what the ceiling invariants need to know about one Exporter of a set. It
// is computed by the checker from its own cache, independently of the reconciler's code, so
// a bug in the reconciler's classification cannot hide itself.
type instanceView struct {
	name     string
	uid      types.UID
	deleting bool
	retiring bool // the reconciler's retiring annotation: disabled by the set to be removed
	// quarantined: the reconciler's quarantine mark on a disabled Exporter (one a person
	// enabled again is in service, whatever its mark says): kept for inspection, never
	// retired or recycled, counted against maxReplicas and not towards the warm buffer.
	quarantined bool
	leased      bool
	enabled     bool
	terminal    bool // every Pod not being deleted has completed, and there is at least one
}

func viewOf(e *jumpstarterv1alpha1.Exporter, pods []*corev1.Pod) instanceView {
	_, retiring := e.Annotations[retiringKey]
	_, marked := e.Annotations[quarantinedKey]
	v := instanceView{
		name:        e.Name,
		uid:         e.UID,
		deleting:    e.DeletionTimestamp != nil,
		retiring:    retiring,
		quarantined: marked && !e.IsEnabled() && !retiring, // a retired one is on its way out
		leased:      leaseOf(e) != "",
		enabled:     e.IsEnabled(),
	}
	live := 0
	v.terminal = true
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			v.terminal = false
		}
	}
	v.terminal = v.terminal && live > 0
	return v
}

// String is the view in one word per trait, for failure messages.
func (v instanceView) String() string {
	out := v.name
	for _, t := range []struct {
		on   bool
		word string
	}{{v.deleting, "deleting"}, {v.retiring, "retiring"}, {v.quarantined, "quarantined"}, {v.leased, "leased"}, {!v.enabled, "disabled"}, {v.terminal, "exited"}} {
		if t.on {
			out += " " + t.word
		}
	}
	return out
}

// handDisabled is an Exporter a person disabled (spec.enabled=false without the retiring
// annotation) or the set quarantined: the set must leave it alone (a quarantined one goes
// only by the quarantine's own rules), and it counts towards the ceiling.
func (v instanceView) handDisabled() bool { return !v.enabled && !v.retiring }

// recycling is an instance on its way out: being deleted, retiring, or (ExitAndReplace) whose
// exporter exited after its lease. Its replacement may already exist, so for a moment the
// set may have more instances than maxReplicas. A quarantined instance whose exporter exited
// (its failed afterLease hook, or onFailure exit) is not recycled: it is kept for inspection
// and occupies its place under the ceiling.
func (v instanceView) recycling(strategy vtv1alpha1.RecycleStrategy) bool {
	return v.deleting || v.retiring || (strategy != vtv1alpha1.RecycleInPlaceReuse && v.terminal && !v.leased && !v.quarantined)
}

func leaseOf(e *jumpstarterv1alpha1.Exporter) string {
	if e.Status.LeaseRef == nil {
		return ""
	}
	return e.Status.LeaseRef.Name
}

// controllerUID returns the UID of obj's controller of the given kind, if any.
func controllerUID(obj metav1.Object, kind string) (types.UID, bool) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != kind {
		return "", false
	}
	return ref.UID, true
}

// podsByController groups pods by the UID of their controlling Exporter.
func podsByController(pods []corev1.Pod) map[types.UID][]*corev1.Pod {
	out := map[types.UID][]*corev1.Pod{}
	for i := range pods {
		if uid, ok := controllerUID(&pods[i], "Exporter"); ok {
			out[uid] = append(out[uid], &pods[i])
		}
	}
	return out
}

// ownedBy returns the Exporters controlled by the set with this UID.
func ownedBy(exporters []jumpstarterv1alpha1.Exporter, set types.UID) []*jumpstarterv1alpha1.Exporter {
	var out []*jumpstarterv1alpha1.Exporter
	for i := range exporters {
		if uid, ok := controllerUID(&exporters[i], "ExporterSet"); ok && uid == set {
			out = append(out, &exporters[i])
		}
	}
	return out
}
