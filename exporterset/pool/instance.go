package pool

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Instance is one member of a pool: an Exporter owned by the set, with the Pods and config
// Secret it owns. Its methods read state only; they never change the objects.
type Instance struct {
	// Exporter is the instance's Exporter.
	Exporter *jumpstarterv1alpha1.Exporter
	// Pods are the Pods controlled by the Exporter (normally one).
	Pods []*corev1.Pod
	// ConfigSecret is the exporter config Secret, nil until written.
	ConfigSecret *corev1.Secret
	// Credential is the Jumpstarter credential Secret (status.credential), nil until the
	// reconciler has labelled it into its cache.
	Credential *corev1.Secret
}

// Name is the Exporter's name.
func (i *Instance) Name() string { return i.Exporter.Name }

// Online reports the Jumpstarter controller's Online condition.
func (i *Instance) Online() bool {
	return apimeta.IsStatusConditionTrue(i.Exporter.Status.Conditions, jumpstarterv1alpha1.ExporterConditionOnline)
}

// Registered reports the Jumpstarter controller's Registered condition.
func (i *Instance) Registered() bool {
	return apimeta.IsStatusConditionTrue(i.Exporter.Status.Conditions, jumpstarterv1alpha1.ExporterConditionRegistered)
}

// Ready is Online and Registered: what the lease scheduler requires.
func (i *Instance) Ready() bool { return i.Online() && i.Registered() }

// Enabled reports spec.enabled (nil means enabled).
func (i *Instance) Enabled() bool { return i.Exporter.IsEnabled() }

// Leased reports whether a lease holds the exporter.
func (i *Instance) Leased() bool {
	return i.Exporter.Status.LeaseRef != nil && i.Exporter.Status.LeaseRef.Name != ""
}

// Available is ready, enabled, unleased and not failing (no Problem among problems, what
// diagnosis found): a member of the warm pool.
func (i *Instance) Available(problems Problems) bool {
	return i.Ready() && i.Enabled() && !i.Leased() && problems.Of(i) == nil
}

// Deleting reports whether the Exporter is being deleted.
func (i *Instance) Deleting() bool { return i.Exporter.DeletionTimestamp != nil }

// Retiring reports whether the set has disabled the instance to remove it.
func (i *Instance) Retiring() bool {
	_, ok := i.Exporter.Annotations[AnnotationRetiring]
	return ok
}

// DisabledByPerson reports an instance someone else disabled (not retired or quarantined by
// the set): the set leaves it alone, and it counts against the ceiling but not towards the
// warm buffer.
func (i *Instance) DisabledByPerson() bool { return !i.Enabled() && !i.Retiring() && !i.Quarantined() }

// Credentialed reports whether the Jumpstarter controller has issued the credential and
// endpoint the config Secret needs.
func (i *Instance) Credentialed() bool {
	s := i.Exporter.Status
	return s.Credential != nil && s.Credential.Name != "" && s.Endpoint != ""
}

// SpecHash is the hash label the instance was built with.
func (i *Instance) SpecHash() string { return i.Exporter.Labels[LabelSpecHash] }

// ActivePod returns a Pod that is not terminal and not being deleted, if any.
func (i *Instance) ActivePod() *corev1.Pod {
	for _, p := range i.Pods {
		if p.DeletionTimestamp == nil && !podTerminal(p) {
			return p
		}
	}
	return nil
}

// Terminal reports an instance whose Pods have all completed (at least one, none active):
// under ExitAndReplace the exporter exited after its lease and the instance is recycled.
// Pods being deleted, and a Pod whose restart its renewal asked for (Renewing), are not
// looked at.
func (i *Instance) Terminal() bool {
	live := 0
	for _, p := range i.Pods {
		if p.DeletionTimestamp != nil || i.renewedPod(p) {
			continue
		}
		if !podTerminal(p) {
			return false
		}
		live++
	}
	return live > 0
}

// Failed reports whether any of the instance's Pods (not being deleted, nor restarting for
// a renewal) is in phase Failed.
func (i *Instance) Failed() bool {
	for _, p := range i.Pods {
		if p.DeletionTimestamp == nil && !i.renewedPod(p) && p.Status.Phase == corev1.PodFailed {
			return true
		}
	}
	return false
}

// Renewing reports an instance renewed in place whose completed Pod, named by
// AnnotationRenewedPod, is still there: its restart is under way (or held by a backoff),
// so it is neither exited nor failed.
func (i *Instance) Renewing() bool {
	for _, p := range i.Pods {
		if p.DeletionTimestamp == nil && i.renewedPod(p) {
			return true
		}
	}
	return false
}

// CompletedPod returns a completed Pod (not being deleted) that no renewal has answered yet:
// the one a renewal in place marks before asking for its restart.
func (i *Instance) CompletedPod() *corev1.Pod {
	for _, p := range i.Pods {
		if p.DeletionTimestamp == nil && podTerminal(p) && !i.renewedPod(p) {
			return p
		}
	}
	return nil
}

func (i *Instance) renewedPod(p *corev1.Pod) bool {
	uid := i.Exporter.Annotations[AnnotationRenewedPod]
	return uid != "" && string(p.UID) == uid && podTerminal(p)
}

// Foreign reports an instance that another controller (upstream's) created: it has none of
// our labels.
func (i *Instance) Foreign() bool { return i.Exporter.Labels[LabelSet] == "" }

// HasPod reports whether any Pod (in any state) exists for the instance.
func (i *Instance) HasPod() bool { return len(i.Pods) > 0 }

func podTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// SortInstances orders instances by name, so every step sees them in the same order.
func SortInstances(in []*Instance) {
	sort.Slice(in, func(a, b int) bool { return in[a].Name() < in[b].Name() })
}
