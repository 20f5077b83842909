package instance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/provisioner"
)

// ensureTarget creates the instance's external target when its set's pass asked for one
// (it.CreateTarget), with createTarget. The instance controller is thus the one creator of
// targets, as of Pods; the set controller observes them and cleans them up. invalid is a refusal a person must look at; err is transient.
func (r *Reconciler) ensureTarget(ctx context.Context, b *build, e *jumpstarterv1alpha1.Exporter, it contract.Intent) (invalid, err error) {
	ext, ok := b.d.Prov.(provisioner.ExternalProvisioner)
	if !ok || !it.CreateTarget || b.d.Target == nil || e.DeletionTimestamp != nil {
		return nil, nil
	}
	if e.Annotations[objects.AnnotationExternalRecorded] != it.SeenRecord {
		return nil, nil // created since the pass looked: the next pass observes it
	}
	return r.createTarget(ctx, b, ext, e, nil)
}

// createTarget creates e's target with CreateExternal, config being the exporter config a
// hosted target runs its exporter with (nil for any other): first the finalizer and the
// class's name on the Exporter, so that a target is never created that nothing would clean
// up; then CreateExternal; then its annotations and the record of the create.
func (r *Reconciler) createTarget(ctx context.Context, b *build, ext provisioner.ExternalProvisioner, e *jumpstarterv1alpha1.Exporter, config []byte) (invalid, err error) {
	if !slices.Contains(e.Finalizers, objects.FinalizerExternal) || e.Annotations[objects.AnnotationClass] != b.d.Class.Name {
		patched := e.DeepCopy()
		if !slices.Contains(patched.Finalizers, objects.FinalizerExternal) {
			patched.Finalizers = append(patched.Finalizers, objects.FinalizerExternal)
		}
		metav1.SetMetaDataAnnotation(&patched.ObjectMeta, objects.AnnotationClass, b.d.Class.Name)
		// Optimistically locked: a changed Exporter (its credential issued meanwhile) is read
		// again, and the create retried, by the error's requeue; nothing else would ask again.
		if err := r.Client.Patch(ctx, patched, client.MergeFromWithOptions(e, client.MergeFromWithOptimisticLock{})); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		e = patched
	}
	req := b.d.Target.ForExporter(e.DeepCopy(), objects.ConfigSecretName(e.Name))
	req.ExporterConfig = config
	annotations, err := ext.CreateExternal(ctx, req)
	if err != nil {
		if provisioner.IsInvalid(err) {
			return err, nil
		}
		return nil, &waitError{fmt.Errorf("creating the external resources of %s: %w", e.Name, err)}
	}
	patched := e.DeepCopy()
	for k, v := range annotations {
		metav1.SetMetaDataAnnotation(&patched.ObjectMeta, k, v)
	}
	// To the nanosecond: SeenRecord tells a target created after a pass looked from the one
	// it saw gone, even within one second.
	metav1.SetMetaDataAnnotation(&patched.ObjectMeta, objects.AnnotationExternalRecorded, b.now.UTC().Format(time.RFC3339Nano))
	if err := r.Client.Patch(ctx, patched, client.MergeFrom(e)); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	b.events.Add(eventlog.ExternalCreated, e.Name, patched)
	return nil, nil
}

// waitError is a create the provisioner could not make yet, though a retry may (no free
// slot, a host that does not answer): shown in the set's status (contract.Result.TargetWait),
// since nothing else would say why an instance waits, and retried every targetRetry: left to
// the workqueue's exponential backoff (up to 1000 s), the retries of a long wait would grow
// minutes apart, and no event asks again when a slot frees.
type waitError struct{ err error }

// targetRetry is how soon a create that could not be made yet is tried again.
const targetRetry = 10 * time.Second

func (e *waitError) Error() string { return e.err.Error() }
func (e *waitError) Unwrap() error { return e.err }

// waitOf is the message of err's waitError, "" when it holds none.
func waitOf(err error) string {
	var w *waitError
	if errors.As(err, &w) {
		return w.Error()
	}
	return ""
}
