package instance

import (
	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// configure brings one live instance along its lifecycle (in, as observed, is only read):
// once the Jumpstarter controller
// has issued its credential and endpoint, write (and keep in sync) its config Secret; then,
// when the plan says so, start its Pod. ca is the CA bundle, nil when it is missing (the
// pass reports that): no config is written without it.
func (r *Reconciler) configure(ctx context.Context, b *build, ca []byte, in *pool.Instance, start bool) (res contract.Result, err error) {
	if !in.Credentialed() {
		res.WaitingCred = true
		return res, nil
	}
	if ca == nil {
		return res, nil
	}
	if !in.HasPod() && in.ConfigSecret == nil && r.podPending(b, in.Exporter.UID) {
		// Its Secret and Pod were created by an earlier reconcile after the cache this one
		// reads: writing them again would only be told AlreadyExists.
		return res, nil
	}
	secret, err := r.syncConfigSecret(ctx, b, ca, in, &res)
	if err != nil || secret == nil {
		return res, err
	}
	if in.HasPod() {
		r.podSeen(b.key, in.Exporter.UID)
		return res, nil
	}
	if !start || r.podPending(b, in.Exporter.UID) {
		return res, nil
	}
	if b.hosted {
		res.PodErr, err = r.startUnit(ctx, b, in, secret.Data[provisioner.ExporterConfigFile])
	} else {
		res.PodErr, err = r.startPod(ctx, b, in)
	}
	return res, err
}

// syncConfigSecret writes the exporter config Secret when missing or different. It returns
// nil without error when an input a person must provide is missing (said in res).
func (r *Reconciler) syncConfigSecret(ctx context.Context, b *build, ca []byte, in *pool.Instance, res *contract.Result) (*corev1.Secret, error) {
	e := in.Exporter
	token, missing, err := r.token(ctx, b, in)
	if err != nil || token == "" {
		res.CredMissing = missing
		return nil, err
	}
	data, podErr, err := r.config(ctx, b, e, token, ca)
	if err != nil || data == nil {
		res.PodErr = podErr
		return nil, err
	}
	name := objects.ConfigSecretName(e.Name)
	if s := in.ConfigSecret; s != nil {
		if bytes.Equal(s.Data[provisioner.ExporterConfigFile], data) && s.Annotations[pool.AnnotationCredential] == e.Status.Credential.Name {
			return s, nil
		}
		updated := s.DeepCopy()
		updated.Data = map[string][]byte{provisioner.ExporterConfigFile: data}
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[pool.AnnotationCredential] = e.Status.Credential.Name
		if err := r.Client.Update(ctx, updated); err != nil {
			return nil, objects.IgnoreConflict(fmt.Errorf("updating config secret %s: %w", name, err))
		}
		b.events.Add(eventlog.Configured, e.Name, updated)
		return updated, nil
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       e.Namespace,
			Labels:          map[string]string{pool.LabelSet: b.set.Name},
			Annotations:     map[string]string{pool.AnnotationCredential: e.Status.Credential.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(e, jumpstarterv1alpha1.GroupVersion.WithKind("Exporter"))},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{provisioner.ExporterConfigFile: data},
	}
	if err := r.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating config secret %s: %w", name, err)
	}
	return s, nil
}

// token returns the exporter's token from the Jumpstarter credential Secret. The Secret is
// not ours, so the label-restricted cache does not hold it at first: it is labelled, after
// which the cache holds and watches it (tokens rotate) and observe finds it with the set's
// other Secrets. The label is a merge patch, whose answer is the whole Secret: reading and
// labelling cost one request, not two.
func (r *Reconciler) token(ctx context.Context, b *build, in *pool.Instance) (token, missing string, err error) {
	e := in.Exporter
	key := client.ObjectKey{Namespace: e.Namespace, Name: e.Status.Credential.Name}
	s := in.Credential
	if s == nil {
		label, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{pool.LabelSet: b.set.Name}}})
		if err != nil {
			return "", "", err
		}
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		err = r.Client.Patch(ctx, s, client.RawPatch(types.MergePatchType, label))
		if apierrors.IsNotFound(err) {
			return "", fmt.Sprintf("credential Secret %s of %s not found", key.Name, e.Name), nil
		}
		if err != nil {
			return "", "", fmt.Errorf("labelling credential secret %s: %w", key.Name, err)
		}
	}
	tok := string(s.Data[objects.TokenKey])
	if tok == "" {
		return "", fmt.Sprintf("credential Secret %s of %s has no %q key", key.Name, e.Name, objects.TokenKey), nil
	}
	return tok, "", nil
}
