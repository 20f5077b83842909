package instance

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
)

// SetupWithManager registers the controller under name: one reconcile per Exporter, woken
// by its inputs (the credential, enabled, labels), its Pods going, its config Secret
// changing, and the pokes of the set controller on pokes. It registers the Pod index it
// reads an instance's Pods by (objects.PodControllerIndex).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, name string, pokes <-chan event.GenericEvent, maxConcurrent int) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, objects.PodControllerIndex, controllerUIDOf); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&jumpstarterv1alpha1.Exporter{}, builder.WithPredicates(instanceInputsChanged)).
		Owns(&corev1.Pod{}, builder.WithPredicates(goneOnly)).
		Owns(&corev1.Secret{}, builder.WithPredicates(notCreated)).
		WatchesRawSource(source.Channel(pokes, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}

func controllerUIDOf(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return nil
}
