package exporterset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// retire disables an instance so the lease scheduler assigns it no more, then removes it if
// it is still unleased. The patch carries the resourceVersion the decision was made on: if
// a lease was assigned meanwhile, the patch conflicts and nothing happens.
func (r *Reconciler) retire(ctx context.Context, p *pass, in *Instance) error {
	e := in.Exporter
	if e.Annotations[AnnotationRetiring] == "" {
		patched := e.DeepCopy()
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[AnnotationRetiring] = p.now.UTC().Format(time.RFC3339)
		patched.Spec.Enabled = ptr.To(false)
		if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(e, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil // changed or gone since we looked: the next reconcile decides again
			}
			return fmt.Errorf("disabling %s: %w", e.Name, err)
		}
		if r.useExpectations {
			r.expectations.expectRetiring(keyOf(p.set), p.now, e.Name)
		}
		r.recorder.Eventf(p.set, patched, "Normal", EventRetiring, "Retire", "disabled instance %s to retire it", e.Name)
		p.retired++
		r.metrics.countRetired(p.set.Namespace, p.set.Name, 1)
		in = &Instance{Exporter: patched, Pods: in.Pods, ConfigSecret: in.ConfigSecret}
	}
	return r.remove(ctx, p, in)
}

// remove deletes an unleased instance (or, under reclaimPolicy Retain, releases it from the
// set). It re-reads the Exporter from the API server first and deletes with that read's
// resourceVersion as a precondition, so an instance that got a lease in between is never
// deleted.
func (r *Reconciler) remove(ctx context.Context, p *pass, in *Instance) error {
	log := logf.FromContext(ctx)
	var fresh jumpstarterv1alpha1.Exporter
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(in.Exporter), &fresh); err != nil {
		return ignoreNotFound(err)
	}
	if !isControlledBy(&fresh, p.set.UID) || fresh.DeletionTimestamp != nil {
		return nil
	}
	if fresh.Status.LeaseRef != nil && fresh.Status.LeaseRef.Name != "" {
		log.Info("instance got a lease before it could be removed; keeping it until the lease ends", "exporter", fresh.Name, "lease", fresh.Status.LeaseRef.Name)
		return nil
	}
	recycled := !in.Retiring() // removed because its exporter exited, not because it was retired
	if err := p.prov.Cleanup(ctx, p.req.ForExporter(&fresh, ConfigSecretName(fresh.Name))); err != nil {
		r.recorder.Eventf(p.set, &fresh, "Warning", EventProvisionerError, "Cleanup", "cleaning up %s: %v", fresh.Name, err)
		return fmt.Errorf("cleaning up %s: %w", fresh.Name, err)
	}
	if p.class.Spec.ReclaimPolicy == vtv1alpha1.ReclaimRetain {
		return r.release(ctx, p, &fresh)
	}
	err := r.client.Delete(ctx, &fresh, client.Preconditions{UID: &fresh.UID, ResourceVersion: &fresh.ResourceVersion}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // it changed since the re-read (maybe a lease): decide again next time
	}
	if err != nil {
		return fmt.Errorf("deleting %s: %w", fresh.Name, err)
	}
	r.drivers.Delete(fresh.Namespace + "/" + fresh.Name)
	if recycled {
		r.recorder.Eventf(p.set, &fresh, "Normal", EventRecycled, "Recycle", "deleted instance %s after its exporter exited; a fresh one replaces it", fresh.Name)
		r.metrics.countRecycled(p.set.Namespace, p.set.Name, 1)
	} else {
		r.recorder.Eventf(p.set, &fresh, "Normal", EventRetired, "Retire", "deleted retired instance %s", fresh.Name)
	}
	return nil
}

// release keeps a retired instance for inspection (reclaimPolicy Retain): disabled, no
// longer owned or counted by the set, its Pod and data left in place.
func (r *Reconciler) release(ctx context.Context, p *pass, fresh *jumpstarterv1alpha1.Exporter) error {
	patched := fresh.DeepCopy()
	patched.Spec.Enabled = ptr.To(false)
	delete(patched.Labels, LabelSet)
	if patched.Labels == nil {
		patched.Labels = map[string]string{}
	}
	patched.Labels[LabelRetainedFrom] = p.set.Name
	var refs []metav1.OwnerReference
	for _, ref := range patched.OwnerReferences {
		if ref.UID != p.set.UID {
			refs = append(refs, ref)
		}
	}
	patched.OwnerReferences = refs
	if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(fresh, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("releasing %s: %w", fresh.Name, err)
	}
	r.recorder.Eventf(p.set, patched, "Normal", EventRetained, "Retain", "released instance %s from the set; it is kept disabled until deleted by hand (reclaimPolicy Retain)", fresh.Name)
	return nil
}

// restartPods deletes an instance's terminal Pods (InPlaceReuse), so a fresh Pod starts for
// the same Exporter on a later reconcile: upstream leaves such an instance dead.
func (r *Reconciler) restartPods(ctx context.Context, p *pass, in *Instance) error {
	for _, pod := range in.Pods {
		if pod.DeletionTimestamp != nil || (pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded) {
			continue
		}
		uid := pod.UID
		if err := r.client.Delete(ctx, pod, client.Preconditions{UID: &uid}); ignoreNotFound(err) != nil {
			return fmt.Errorf("deleting terminal pod %s: %w", pod.Name, err)
		}
		r.recorder.Eventf(p.set, pod, "Normal", EventPodRestarted, "Restart", "pod %s of %s was %s; starting a new one", pod.Name, in.Name(), pod.Status.Phase)
	}
	return nil
}
