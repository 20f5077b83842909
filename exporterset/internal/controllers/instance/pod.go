package instance

import (
	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"context"
	"fmt"

	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startPod renders the instance Pod with the provisioner and creates it, owned by the
// Exporter. Its name is the Exporter's, so a stale cache cannot start a second one. podErr
// is what a person must look at (an invalid render, a refused Pod).
func (r *Reconciler) startPod(ctx context.Context, b *build, in *pool.Instance) (podErr, err error) {
	e := in.Exporter
	pod, err := b.d.Prov.RenderPod(ctx, b.d.Req.ForExporter(e.DeepCopy(), objects.ConfigSecretName(e.Name)))
	if err != nil {
		if provisioner.IsInvalid(err) {
			return err, nil
		}
		return err, fmt.Errorf("rendering pod of %s: %w", e.Name, err)
	}
	pod = pod.DeepCopy()
	pod.Name, pod.GenerateName, pod.Namespace = e.Name, "", e.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[pool.LabelSet] = b.set.Name
	pod.Labels[objects.UpstreamLabelSet] = b.set.Name // upstream's controller, put back, finds it (adopt.go)
	pod.Labels[pool.LabelSpecHash] = e.Labels[pool.LabelSpecHash]
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(e, jumpstarterv1alpha1.GroupVersion.WithKind("Exporter"))}
	if err := r.Client.Create(ctx, pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			r.podStarted(b.key, e.UID, b.now)
			return nil, nil
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			podErr = err // the spec or a policy is wrong: a person must look
		}
		return podErr, fmt.Errorf("creating pod of %s: %w", e.Name, err)
	}
	r.podStarted(b.key, e.UID, b.now)
	b.events.Add(eventlog.PodStarted, e.Name, pod)
	return nil, nil
}

// restartPods deletes an instance's terminal Pods (InPlaceReuse), and the Pod broken when
// the pass found that waiting will not help (a crash loop, a lost node), so a fresh Pod
// starts for the same Exporter: upstream leaves such an instance dead. The instance
// controller does it, as its set's pass decided (contract.Intent.Restart).
func (r *Reconciler) restartPods(ctx context.Context, b *build, in *pool.Instance, broken types.UID) error {
	for _, pod := range in.Pods {
		terminal := pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
		if pod.DeletionTimestamp != nil || (broken == "" || pod.UID != broken) && !terminal {
			continue
		}
		if !terminal && in.Leased() {
			continue // a lease came since the pass decided: its holder keeps the Pod
		}
		uid := pod.UID
		if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting terminal pod %s: %w", pod.Name, err)
		}
		b.events.Add(eventlog.PodRestarted, fmt.Sprintf("%s (pod %s)", in.Name(), pod.Status.Phase), pod)
	}
	return nil
}
