package instance

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

// Hosted instances (provisioner.HostedProvisioner): the unit on a lab host is the
// instance's Pod (objects.UnitPod). It is started, with the instance's rendered config,
// where a Pod would be, and removed where a Pod would be deleted. Its state is remote: the
// set's pass observes it; this controller only knows whether a unit was made (its record on
// the Exporter) and whether the pass saw that unit gone.

// withUnit shows in's unit as its Pod, for the rules of building it: a unit was recorded,
// and the pass did not ask for a new one having seen that very unit gone (it.SeenRecord).
// The Pod carries only the unit's UID: its state is the pass's to read.
func withUnit(in *pool.Instance, it contract.Intent) {
	in.Pods = nil
	e := in.Exporter
	rec := e.Annotations[objects.AnnotationExternalRecorded]
	if rec == "" || it.Start && rec == it.SeenRecord {
		return
	}
	in.Pods = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace, UID: objects.UnitUID(e)}}}
}

// startUnit makes in's unit on a host, handing it the rendered config (createTarget). A
// start the pass asked for having seen an older unit gone is made only while the record is
// the one it saw.
func (r *Reconciler) startUnit(ctx context.Context, b *build, in *pool.Instance, config []byte) (podErr, err error) {
	ext, ok := b.d.Prov.(provisioner.ExternalProvisioner)
	e := in.Exporter
	if !ok || b.d.Target == nil || e.DeletionTimestamp != nil {
		return nil, nil // no credentials read: the set reports why
	}
	podErr, err = r.createTarget(ctx, b, ext, e, config)
	if podErr == nil && err == nil {
		r.podStarted(b.key, e.UID, b.now)
	}
	return podErr, err
}

// restartUnit removes in's unit, as restartPods deletes a terminal or broken Pod, so that a
// fresh one is made: the pass decided it on the unit named it.Broken, or on a unit it saw
// completed (it.Broken empty). The record stays: the next pass sees the unit gone and asks
// for a new one (withUnit). A unit now leased keeps serving, as a Pod would.
func (r *Reconciler) restartUnit(ctx context.Context, b *build, in *pool.Instance, it contract.Intent) error {
	e := in.Exporter
	uid := objects.UnitUID(e)
	if uid == "" || b.d.Target == nil || it.Broken != "" && (it.Broken != uid || in.Leased()) {
		return nil
	}
	req := b.d.Target.ForExporter(e.DeepCopy(), objects.ConfigSecretName(e.Name))
	// A restart replaces the unit's processes, as deleting a Pod does: reclaimPolicy governs
	// what outlives a retired instance, not a restart (a retained unit would be adopted
	// again, exited as it is).
	if req.Class != nil {
		class := req.Class.DeepCopy()
		class.Spec.ReclaimPolicy = vtv1alpha1.ReclaimDelete
		req.Class = class
	}
	if err := b.d.Prov.Cleanup(ctx, req); err != nil {
		return fmt.Errorf("removing the unit of %s: %w", e.Name, err)
	}
	r.podSeen(b.key, e.UID)
	b.events.Add(eventlog.PodRestarted, fmt.Sprintf("%s (unit %s)", e.Name, uid), e)
	return nil
}
