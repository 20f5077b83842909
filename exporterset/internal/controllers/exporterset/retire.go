package exporterset

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// retire disables an instance so the lease scheduler assigns it no more, then removes it if
// it is still unleased. The patch carries the resourceVersion the decision was made on: if
// a lease was assigned meanwhile, the patch conflicts and nothing happens. (The removal
// itself waits for retireGrace, so it is a later pass's.)
// why is counted in exporterset_retirements_total.
func (r *Reconciler) retire(ctx context.Context, p *pass, in *pool.Instance, why pool.RetirementReason) error {
	marked, ok, err := r.markRetiring(ctx, p, in.Exporter, why)
	if !ok || err != nil {
		return err
	}
	in = &pool.Instance{Exporter: marked, Pods: in.Pods, ConfigSecret: in.ConfigSecret, Credential: in.Credential}
	_, err = r.remove(ctx, p, in)
	return err
}

// markRetiring disables e and records when it was retired (pool.AnnotationRetiring), unless
// it is marked already. ok is false when e changed since it was read (a conflict: decide
// again soon) or is gone; marked is e as patched. An empty why marks without the Retiring
// event and counts: the removal is counted as a recycle.
func (r *Reconciler) markRetiring(ctx context.Context, p *pass, e *jumpstarterv1alpha1.Exporter, why pool.RetirementReason) (marked *jumpstarterv1alpha1.Exporter, ok bool, err error) {
	if e.Annotations[pool.AnnotationRetiring] != "" {
		return e, true, nil
	}
	patched := e.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[pool.AnnotationRetiring] = p.now.UTC().Format(time.RFC3339)
	patched.Spec.Enabled = ptr.To(false)
	if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(e, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			p.requeueIn(conflictRetry) // changed since we looked: decide again soon
			return nil, false, nil
		}
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("disabling %s: %w", e.Name, err)
	}
	if r.UseExpectations {
		r.expectations.expectRetiring(keyOf(p.set), p.now, e.Name)
	}
	if why != "" {
		r.countRetiring(p, patched, why)
	}
	return patched, true, nil
}

// countRetiring reports e marked retiring: the Retiring event and the counts.
func (r *Reconciler) countRetiring(p *pass, e *jumpstarterv1alpha1.Exporter, why pool.RetirementReason) {
	p.events.Add(eventlog.Retiring, e.Name, e)
	r.Metrics.CountRetired(p.set.Namespace, p.set.Name, 1)
	r.Metrics.CountRetirement(p.set.Namespace, p.set.Name, string(why))
}

// recycleReason is why an instance removed after its exporter stopped is counted retired.
func recycleReason(in *pool.Instance) pool.RetirementReason {
	if in.Failed() {
		return pool.RetiredFailed // its exporter failed rather than exiting after a lease
	}
	return pool.RetiredReleased
}

// retireGrace is how long a retired instance stays disabled before it is removed. The lease
// scheduler picks exporters from its own cache, and writes a Lease's status.exporterRef
// before the Exporter's status.leaseRef: it may have assigned this one just before its cache
// showed it disabled. After the grace no new assignment can come, and one made before shows
// in the Leases, which remove reads.
const retireGrace = 2 * time.Second

// conflictRetry is how soon a set is looked at again after a retirement or removal lost a
// race (a conflict): the write that won may be one the watches ignore (an Exporter
// heartbeat), and without a requeue the instance waited for the next unrelated event or the
// resync, minutes above maxReplicas.
const conflictRetry = time.Second

// remove deletes an unleased instance (or, under reclaimPolicy Retain, releases it from the
// set). It re-reads the Exporter from the API server first and deletes with that read's UID
// and resourceVersion as preconditions, so an instance that got a lease in between is never
// deleted; nor is one that a Lease not yet reflected in its leaseRef is assigned to (an
// uncached Lease list just before the delete). gone reports that the Exporter no longer
// exists as the set's: not found, deleted with no finalizer left, or released from the set.
// Only then may a replacement take its place under maxReplicas (act.go).
// (Deleting on the cache's resourceVersion without the re-read was tried: in a lease storm
// about half the deletes conflicted, the exited exporter's status having moved on, and the
// conflict and the read after it made removals longer, not shorter.)
func (r *Reconciler) remove(ctx context.Context, p *pass, in *pool.Instance) (gone bool, err error) {
	if wait := retireGraceLeft(in.Exporter, p.now); wait > 0 {
		p.requeueIn(wait)
		return false, nil
	}
	var fresh jumpstarterv1alpha1.Exporter
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(in.Exporter), &fresh); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	if fresh.UID != in.Exporter.UID {
		return true, nil // a namesake: the instance decided on is gone
	}
	done, gone, err := r.deleteUnleased(ctx, p, in, &fresh)
	if !done && err == nil {
		p.requeueIn(conflictRetry) // it changed since the re-read (maybe a lease): decide again soon
	}
	return gone, err
}

// deleteUnleased deletes (or releases) e, the Exporter of in as of some read, unless it is
// leased. done is false only when the delete conflicted: e is not the Exporter as it is now.
// gone is true once e no longer exists as the set's (see remove).
func (r *Reconciler) deleteUnleased(ctx context.Context, p *pass, in *pool.Instance, e *jumpstarterv1alpha1.Exporter) (done, gone bool, err error) {
	log := logf.FromContext(ctx)
	if !objects.IsControlledBy(e, p.set.UID) {
		return true, true, nil // released from the set already
	}
	if e.DeletionTimestamp != nil {
		return true, false, nil // its finalizers hold it
	}
	if e.Status.LeaseRef != nil && e.Status.LeaseRef.Name != "" {
		log.Info("instance got a lease before it could be removed; keeping it until the lease ends", "exporter", e.Name, "lease", e.Status.LeaseRef.Name)
		return true, false, nil
	}
	lease, err := r.assignedLease(ctx, e)
	if err != nil {
		return true, false, fmt.Errorf("reading the leases of %s: %w", e.Name, err)
	}
	if lease != "" {
		log.Info("a lease was assigned to the instance before it could be removed; keeping it until the lease ends", "exporter", e.Name, "lease", lease)
		p.requeueIn(retireGrace) // its leaseRef normally follows (and a reconcile with it), but a pinned lease's end maps to no set
		return true, false, nil
	}
	recycled := !in.Retiring() && !in.Quarantined() // removed because its exporter exited, not retired or quarantined
	if recycled {
		if (&pool.Instance{Exporter: e, Pods: in.Pods}).Renewing() {
			// A pass renewed it in place after the cache this pass read (renew.go): it is
			// restarting, not exited. The next pass sees the mark.
			p.requeueIn(conflictRetry)
			return true, false, nil
		}
		if fresh, err := r.freshPod(ctx, e); err != nil || fresh {
			return true, false, err
		}
	}
	if recycled && objects.Hosted(p.prov) {
		// The clean-up removes the unit, which the set reads as this instance's Pod: were the
		// delete below to conflict, the next pass would see an instance with no Pod and start
		// a unit for it again. Marked retiring first, the removal outlives such a conflict.
		marked, ok, err := r.markRetiring(ctx, p, e, "")
		if err != nil || !ok {
			return ok, false, err
		}
		e = marked
	}
	req, err := r.cleanupRequest(ctx, p)
	if err != nil {
		return true, false, fmt.Errorf("cleaning up %s: %w", e.Name, err)
	}
	if err := p.prov.Cleanup(ctx, req.ForExporter(e.DeepCopy(), objects.ConfigSecretName(e.Name))); err != nil {
		// Reported, and tried again at a steady pace: as the pass's error, every failed
		// attempt doubled the set's workqueue backoff, so an instance whose host was down a
		// while could wait minutes after the host came back.
		r.warning(p.set, e, eventlog.ProvisionerError, "Cleanup", "cleaning up %s: %v", e.Name, err)
		p.requeueIn(externalRetry)
		if recycled {
			// The removal is decided but waits for the target's host. Recorded on the
			// Exporter (retiring, disabled), it outlives the failure it was decided on: a
			// unit that answers again once its host is back is not working again, and
			// without the mark the set kept it and scaled down its healthy replacement.
			// A later pass removes it as a retirement, so it is counted as one now.
			if objects.Hosted(p.prov) {
				r.countRetiring(p, e, recycleReason(in)) // marked above, before the clean-up
				return true, false, nil
			}
			_, _, err := r.markRetiring(ctx, p, e, recycleReason(in))
			return true, false, err
		}
		return true, false, nil
	}
	if p.class.Spec.ReclaimPolicy == vtv1alpha1.ReclaimRetain {
		released, err := r.release(ctx, p, e)
		return true, released, err
	}
	uid, rv := e.UID, e.ResourceVersion
	err = r.client.Delete(ctx, e.DeepCopy(), client.Preconditions{UID: &uid, ResourceVersion: &rv}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsConflict(err) {
		return false, false, nil
	}
	if apierrors.IsNotFound(err) {
		return true, true, nil
	}
	if err != nil {
		return true, false, fmt.Errorf("deleting %s: %w", e.Name, err)
	}
	gone, err = r.dropCleanedFinalizer(ctx, e)
	if err != nil {
		err = fmt.Errorf("finalizing %s: %w", e.Name, err) // finalizeDeleting retries it
	}
	r.InstanceRetired(keyOf(p.set), e.UID) // its rendered config holds the token
	if recycled {
		p.events.Add(eventlog.Recycled, e.Name, e)
		r.Metrics.CountRecycled(p.set.Namespace, p.set.Name, 1)
		r.Metrics.CountRetirement(p.set.Namespace, p.set.Name, string(recycleReason(in)))
	} else {
		p.events.Add(eventlog.Retired, e.Name, e)
		if in.Quarantined() && !in.Retiring() {
			// Kept for inspection, now removed (PlanQuarantine): it never went through retire.
			r.Metrics.CountRetirement(p.set.Namespace, p.set.Name, string(pool.RetiredQuarantined))
		}
	}
	return true, gone, err
}

// freshPod reports whether e, decided on as exited, runs a Pod that has not completed,
// read from the API server: the pass may have seen its completed Pod in a cache that does
// not show it replaced yet (an instance renewed in place at the ceiling, pool/leasewait.go).
// Such an instance is a fresh target and is not removed.
func (r *Reconciler) freshPod(ctx context.Context, e *jumpstarterv1alpha1.Exporter) (bool, error) {
	var pod corev1.Pod
	if err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, &pod); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	done := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	return objects.IsControlledBy(&pod, e.UID) && pod.DeletionTimestamp == nil && !done, nil
}

// dropCleanedFinalizer drops FinalizerExternal from e, just deleted after its Cleanup, so
// that it is gone now rather than after a later pass's finalizeDeleting: its replacement at
// the ceiling waits for that. gone reports that no finalizer holds e any more.
func (r *Reconciler) dropCleanedFinalizer(ctx context.Context, e *jumpstarterv1alpha1.Exporter) (gone bool, err error) {
	switch {
	case len(e.Finalizers) == 0:
		return true, nil
	case !slices.Equal(e.Finalizers, []string{FinalizerExternal}):
		return false, nil // another's finalizer: it holds the Exporter until it lets go
	}
	patched := e.DeepCopy()
	patched.Finalizers = nil
	if err := r.client.Patch(ctx, patched, client.MergeFrom(e)); err != nil {
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	return true, nil
}

// retireGraceLeft is how long a retiring Exporter must still wait before removal; 0 for
// one that exited after its lease (not retired) or whose annotation is not a time.
func retireGraceLeft(e *jumpstarterv1alpha1.Exporter, now time.Time) time.Duration {
	at, err := time.Parse(time.RFC3339, e.Annotations[pool.AnnotationRetiring])
	if err != nil {
		return 0
	}
	// The annotation has whole seconds, rounded down: count from the next one.
	return at.Add(time.Second + retireGrace).Sub(now)
}

// assignedLease returns a Lease that has not ended and is assigned to e (status.exporterRef),
// read from the API server: the cache may not show an assignment made a moment ago.
func (r *Reconciler) assignedLease(ctx context.Context, e *jumpstarterv1alpha1.Exporter) (string, error) {
	var leases jumpstarterv1alpha1.LeaseList
	if err := r.apiReader.List(ctx, &leases, client.InNamespace(e.Namespace), client.MatchingLabelsSelector{Selector: objects.NotEndedLeases()}); err != nil {
		return "", err
	}
	for i := range leases.Items {
		l := &leases.Items[i]
		if l.Status.Ended || l.Status.ExporterRef == nil || l.Status.ExporterRef.Name != e.Name {
			continue
		}
		if ref := metav1.GetControllerOf(l); ref != nil && ref.Kind == "Exporter" && ref.UID != e.UID {
			continue // assigned to an earlier Exporter of the same name
		}
		return l.Name, nil
	}
	return "", nil
}

// release keeps a retired instance for inspection (reclaimPolicy Retain): disabled, no
// longer owned or counted by the set, its Pod and data left in place.
// released reports that the patch went through: the Exporter is no longer the set's.
func (r *Reconciler) release(ctx context.Context, p *pass, fresh *jumpstarterv1alpha1.Exporter) (released bool, err error) {
	patched := fresh.DeepCopy()
	patched.Spec.Enabled = ptr.To(false)
	delete(patched.Labels, pool.LabelSet)
	if patched.Labels == nil {
		patched.Labels = map[string]string{}
	}
	patched.Labels[pool.LabelRetainedFrom] = p.set.Name
	var refs []metav1.OwnerReference
	for _, ref := range patched.OwnerReferences {
		if ref.UID != p.set.UID {
			refs = append(refs, ref)
		}
	}
	patched.OwnerReferences = refs
	// Cleanup has applied Retain to its external resources: no set will finalize it now.
	patched.Finalizers = slices.DeleteFunc(patched.Finalizers, func(f string) bool { return f == FinalizerExternal })
	if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(fresh, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			p.requeueIn(conflictRetry)
			return false, nil
		}
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("releasing %s: %w", fresh.Name, err)
	}
	p.events.Add(eventlog.Retained, fresh.Name, patched)
	return true, nil
}
