package exporterset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// observation is what one reconcile sees of a set, read from the cache. Its objects are
// shared with the cache and must not be modified.
type observation struct {
	// Instances are the Exporters controlled by the set and matching its selector, with
	// their Pods and config Secrets, sorted by name.
	Instances []*pool.Instance
	// Strays are Exporters the set controls that no longer match its selector (the selector
	// was edited); they are retired once unleased.
	Strays []*pool.Instance
	// WaitingLeases are Leases that wait for an exporter and would match the set's instances.
	WaitingLeases []*jumpstarterv1alpha1.Lease
	// Leases are the namespace's not-ended Leases (the cache holds no others), for the
	// lease metrics (slo.go).
	Leases []*jumpstarterv1alpha1.Lease
	// Bookings are Leases booked ahead for the set's instances, sorted by begin time.
	Bookings []pool.Booking
	// Boards are the free physical boards the set's hardware selector names, sorted
	// (hardware.go); none without one.
	Boards []string
	// BoardPolicy says why upstream's core may hand a Lease to a virtual instance while a
	// board is free ("" when it would not, or cannot be told; hardware_policy.go).
	BoardPolicy string
}

// replacing is a copy of o whose instances and strays named in by are replaced by
// by's; o itself when by is empty.
func (o *observation) replacing(by map[string]*pool.Instance) *observation {
	if len(by) == 0 {
		return o
	}
	swap := func(in []*pool.Instance) []*pool.Instance {
		out := make([]*pool.Instance, len(in))
		for i, x := range in {
			if y, ok := by[x.Name()]; ok {
				x = y
			}
			out[i] = x
		}
		return out
	}
	c := *o
	c.Instances, c.Strays = swap(o.Instances), swap(o.Strays)
	return &c
}

// uids are the UIDs of every Exporter the set controls (instances and strays).
func (o *observation) uids() map[types.UID]bool {
	out := make(map[types.UID]bool, len(o.Instances)+len(o.Strays))
	for _, in := range o.Instances {
		out[in.Exporter.UID] = true
	}
	for _, in := range o.Strays {
		out[in.Exporter.UID] = true
	}
	return out
}

// observe lists the set's objects. Every List error is returned: acting on a partial view
// could create or retire the wrong instances.
//
// The objects are the cache's own, not copies: copying every Pod, Secret and Exporter of a
// large pool on every pass was a fifth of the controller's CPU. Nothing may modify them;
// writes start from a DeepCopy, and provisioners get copies.
func (r *Reconciler) observe(ctx context.Context, set *vtv1alpha1.ExporterSet, selector, hardware labels.Selector) (*observation, error) {
	ns := client.InNamespace(set.Namespace)
	var mine client.ListOption = client.MatchingLabels{pool.LabelSet: set.Name}
	// Without the index every Exporter of the namespace is read: upstream-made instances
	// carry no label of ours (adopt.go); the owner check below picks the set's.
	var mineOrOwned client.ListOption = ns
	if r.indexed {
		mine = client.MatchingFields{setIndex: set.Name}
		mineOrOwned = mine
	}
	shared := client.UnsafeDisableDeepCopy

	var exporters jumpstarterv1alpha1.ExporterList
	if err := r.client.List(ctx, &exporters, ns, mineOrOwned, shared); err != nil {
		return nil, fmt.Errorf("listing exporters: %w", err)
	}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, ns, mine, shared); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var secrets corev1.SecretList
	if err := r.client.List(ctx, &secrets, ns, mine, shared); err != nil {
		return nil, fmt.Errorf("listing secrets: %w", err)
	}
	var leases jumpstarterv1alpha1.LeaseList
	if err := r.client.List(ctx, &leases, ns, shared); err != nil {
		return nil, fmt.Errorf("listing leases: %w", err)
	}

	podsByOwner := map[types.UID][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "Exporter" {
			podsByOwner[ref.UID] = append(podsByOwner[ref.UID], p)
		}
	}
	secretsByName := map[string]*corev1.Secret{}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		secretsByName[s.Name] = s
	}

	obs := &observation{}
	for i := range exporters.Items {
		e := &exporters.Items[i]
		ref := metav1.GetControllerOf(e)
		if ref == nil || ref.UID != set.UID {
			continue
		}
		in := &pool.Instance{Exporter: e, Pods: podsByOwner[e.UID]}
		if s := secretsByName[objects.ConfigSecretName(e.Name)]; s != nil && objects.IsControlledBy(s, e.UID) {
			in.ConfigSecret = s
		}
		if c := e.Status.Credential; c != nil && c.Name != "" {
			in.Credential = secretsByName[c.Name]
		}
		if selector.Matches(labels.Set(e.Labels)) {
			obs.Instances = append(obs.Instances, in)
		} else {
			obs.Strays = append(obs.Strays, in)
		}
	}
	pool.SortInstances(obs.Instances)
	pool.SortInstances(obs.Strays)
	if err := r.observeForeign(ctx, set, obs); err != nil {
		return nil, err
	}

	instanceLabels := labels.Set(objects.InstanceLabels(set, ""))
	for i := range leases.Items {
		l := &leases.Items[i]
		obs.Leases = append(obs.Leases, l)
		if waitingFor(l, instanceLabels) {
			obs.WaitingLeases = append(obs.WaitingLeases, l)
		} else if b, ok := pool.BookedFor(l, instanceLabels); ok {
			obs.Bookings = append(obs.Bookings, b)
		}
	}
	pool.SortBookings(obs.Bookings)
	var err error
	obs.Boards, obs.BoardPolicy, err = r.observeBoards(ctx, set, hardware, instanceLabels)
	return obs, err
}

// waitingFor reports whether lease waits for an exporter (not ended, not assigned, Pending)
// and its selector matches exporters with these labels. Pinned leases (spec.exporterRef)
// wait for one named exporter, which a new instance cannot be, so they add no demand.
func waitingFor(l *jumpstarterv1alpha1.Lease, exporterLabels labels.Set) bool {
	if l.Status.Ended || l.Spec.Release || l.Status.ExporterRef != nil || l.DeletionTimestamp != nil {
		return false
	}
	if l.Spec.ExporterRef != nil && l.Spec.ExporterRef.Name != "" {
		return false
	}
	if !apimeta.IsStatusConditionTrue(l.Status.Conditions, jumpstarterv1alpha1.LeaseConditionPending) {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(&l.Spec.Selector)
	if err != nil || sel.Empty() {
		return false // an empty selector matches everything; it is nobody's demand in particular
	}
	return sel.Matches(exporterLabels)
}
