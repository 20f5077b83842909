package jumpsim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kubeRootCA is published into every namespace by kube-controller-manager, which envtest
// lacks; waiting for it would keep Pods with projected service-account tokens Pending forever.
const kubeRootCA = "kube-root-ca.crt"

// podRequirement is a Secret or ConfigMap (optionally one key of it) a Pod needs before its
// containers can start, as a kubelet resolves volumes and environment.
type podRequirement struct {
	kind string // "secret" or "configmap"
	name string
	keys []string
	// env marks environment references: a kubelet reports CreateContainerConfigError for
	// those, ContainerCreating (volume mount failures) for the rest.
	env bool
}

func (r podRequirement) indexKey() string { return r.kind + "/" + r.name }

func keysOf(items []corev1.KeyToPath) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

func notOptional(b *bool) bool { return b == nil || !*b }

// podRequirements lists the non-optional Secrets and ConfigMaps a Pod references.
func podRequirements(pod *corev1.Pod) []podRequirement {
	var out []podRequirement
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil && notOptional(v.Secret.Optional):
			out = append(out, podRequirement{kind: "secret", name: v.Secret.SecretName, keys: keysOf(v.Secret.Items)})
		case v.ConfigMap != nil && notOptional(v.ConfigMap.Optional):
			out = append(out, podRequirement{kind: "configmap", name: v.ConfigMap.Name, keys: keysOf(v.ConfigMap.Items)})
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil && notOptional(src.Secret.Optional) {
					out = append(out, podRequirement{kind: "secret", name: src.Secret.Name, keys: keysOf(src.Secret.Items)})
				}
				if src.ConfigMap != nil && notOptional(src.ConfigMap.Optional) && src.ConfigMap.Name != kubeRootCA {
					out = append(out, podRequirement{kind: "configmap", name: src.ConfigMap.Name, keys: keysOf(src.ConfigMap.Items)})
				}
			}
		}
	}
	containers := append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range containers {
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil && notOptional(ef.SecretRef.Optional) {
				out = append(out, podRequirement{kind: "secret", name: ef.SecretRef.Name, env: true})
			}
			if ef.ConfigMapRef != nil && notOptional(ef.ConfigMapRef.Optional) {
				out = append(out, podRequirement{kind: "configmap", name: ef.ConfigMapRef.Name, env: true})
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil && notOptional(r.Optional) {
				out = append(out, podRequirement{kind: "secret", name: r.Name, keys: []string{r.Key}, env: true})
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil && notOptional(r.Optional) {
				out = append(out, podRequirement{kind: "configmap", name: r.Name, keys: []string{r.Key}, env: true})
			}
		}
	}
	return out
}

// unmetRequirement returns the first requirement of pod that is missing, with the waiting
// reason a kubelet would report, or ok when all are met.
func (s *Simulator) unmetRequirement(ctx context.Context, pod *corev1.Pod) (reason, message string, ok bool, err error) {
	for _, r := range podRequirements(pod) {
		key := types.NamespacedName{Namespace: pod.Namespace, Name: r.name}
		var have map[string]bool
		var obj client.Object
		switch r.kind {
		case "secret":
			obj = &corev1.Secret{}
		default:
			obj = &corev1.ConfigMap{}
		}
		gerr := s.client.Get(ctx, key, obj)
		if gerr != nil && !apierrors.IsNotFound(gerr) {
			return "", "", false, gerr
		}
		reason := "ContainerCreating"
		if r.env {
			reason = "CreateContainerConfigError"
		}
		if apierrors.IsNotFound(gerr) {
			return reason, fmt.Sprintf("%s %q not found", r.kind, r.name), false, nil
		}
		have = map[string]bool{}
		switch o := obj.(type) {
		case *corev1.Secret:
			for k := range o.Data {
				have[k] = true
			}
		case *corev1.ConfigMap:
			for k := range o.Data {
				have[k] = true
			}
			for k := range o.BinaryData {
				have[k] = true
			}
		}
		for _, k := range r.keys {
			if !have[k] {
				return reason, fmt.Sprintf("couldn't find key %s in %s %s/%s", k, r.kind, pod.Namespace, r.name), false, nil
			}
		}
	}
	return "", "", true, nil
}
