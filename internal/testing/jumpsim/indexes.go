package jumpsim

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Field indexes on the Simulator's cache; they keep every lookup O(matches) at 500 Exporters.
const (
	// indexOwnerUID maps an object to the UIDs of all its owners.
	indexOwnerUID = "jumpsim.owner-uid"
	// indexLeaseExporter maps a Lease to status.exporterRef.name.
	indexLeaseExporter = "jumpsim.lease-exporter"
	// indexLeaseWaiting maps a Lease that is neither ended nor assigned to "true".
	indexLeaseWaiting = "jumpsim.lease-waiting"
	// indexLeaseActive maps a Lease that is assigned and not ended to "true".
	indexLeaseActive = "jumpsim.lease-active"
	// indexPodRefs maps a Pod to the Secrets ("secret/<name>") and ConfigMaps
	// ("configmap/<name>") it needs before it can run.
	indexPodRefs = "jumpsim.pod-refs"
)

func ownerUIDs(obj client.Object) []string {
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, string(r.UID))
	}
	return out
}

func leaseExporterName(obj client.Object) []string {
	l := obj.(*jsv1.Lease)
	if l.Status.ExporterRef == nil || l.Status.ExporterRef.Name == "" {
		return nil
	}
	return []string{l.Status.ExporterRef.Name}
}

func leaseWaiting(obj client.Object) []string {
	l := obj.(*jsv1.Lease)
	if l.Status.Ended || l.Status.ExporterRef != nil || l.DeletionTimestamp != nil {
		return nil
	}
	return []string{"true"}
}

func leaseActive(obj client.Object) []string {
	l := obj.(*jsv1.Lease)
	if l.Status.Ended || l.Status.ExporterRef == nil {
		return nil
	}
	return []string{"true"}
}

func podRefKeys(obj client.Object) []string {
	var out []string
	for _, r := range podRequirements(obj.(*corev1.Pod)) {
		out = append(out, r.indexKey())
	}
	return out
}

// addIndexes registers the indexes the enabled components use, before the cache starts.
func (s *Simulator) addIndexes(ctx context.Context, gcKinds []client.Object) error {
	idx := s.mgr.GetFieldIndexer()
	owned := map[string]bool{}
	addOwner := func(obj client.Object) error {
		k := typeName(obj)
		if owned[k] {
			return nil
		}
		owned[k] = true
		return idx.IndexField(ctx, obj, indexOwnerUID, ownerUIDs)
	}
	// Presence and the kubelet find an Exporter's Pods by owner.
	if err := addOwner(&corev1.Pod{}); err != nil {
		return err
	}
	for _, k := range gcKinds {
		if err := addOwner(k); err != nil {
			return err
		}
	}
	if s.opts.controller || s.opts.kubelet {
		if err := idx.IndexField(ctx, &jsv1.Lease{}, indexLeaseExporter, leaseExporterName); err != nil {
			return err
		}
	}
	if s.opts.controller {
		if err := idx.IndexField(ctx, &jsv1.Lease{}, indexLeaseWaiting, leaseWaiting); err != nil {
			return err
		}
		if err := idx.IndexField(ctx, &jsv1.Lease{}, indexLeaseActive, leaseActive); err != nil {
			return err
		}
	}
	if s.opts.kubelet {
		if err := idx.IndexField(ctx, &corev1.Pod{}, indexPodRefs, podRefKeys); err != nil {
			return err
		}
	}
	return nil
}
