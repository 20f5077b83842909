package jumpsim

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// TokenKey is the key of the token in an Exporter's credential Secret.
const TokenKey = "token"

// rotationAnnotation on a credential Secret counts the rotations, so the token stays
// deterministic across Simulator restarts.
const rotationAnnotation = "jumpsim.jumpstarter.dev/rotation"

type credentialState struct {
	paused atomic.Bool
	seen   *sightings
}

// Token returns the token the Simulator issues to the Exporter namespace/name with this UID
// after rotation rotations (0 for the first issue). It is deterministic so tests can predict
// it, and includes the UID so a recreated Exporter of the same name gets a new one.
func Token(namespace, name string, uid types.UID, rotation int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "jumpsim\x00%s\x00%s\x00%s\x00%d", namespace, name, uid, rotation))
	return "jumpsim." + base64.RawURLEncoding.EncodeToString(sum[:])
}

// CredentialSecretName returns the name of the token Secret the Simulator creates for an
// Exporter.
func (s *Simulator) CredentialSecretName(exporter string) string {
	return exporter + s.opts.credentialSuffix
}

// PauseCredentials stops issuing credentials to new Exporters until ResumeCredentials.
func (s *Simulator) PauseCredentials() { s.creds.paused.Store(true) }

// ResumeCredentials issues credentials again, including to the Exporters that waited.
func (s *Simulator) ResumeCredentials(ctx context.Context) error {
	s.creds.paused.Store(false)
	var list jsv1.ExporterList
	if err := s.client.List(ctx, &list); err != nil {
		return err
	}
	for i := range list.Items {
		if list.Items[i].Status.Credential == nil {
			s.poke(ctx, s.exporterPokes, &list.Items[i])
		}
	}
	return nil
}

// ensureCredential makes sure an Exporter still waiting for its credential has a token
// Secret. It reports whether the credential can be written to status now, or how long to
// wait before trying again.
func (s *Simulator) ensureCredential(ctx context.Context, ex *jsv1.Exporter) (ready bool, wait time.Duration, err error) {
	if ex.Status.Credential != nil {
		return false, 0, nil
	}
	if s.creds.paused.Load() {
		return false, 0, nil
	}
	if s.opts.credentialDelay > 0 {
		if d := time.Until(s.creds.seen.first(ex.UID).Add(s.opts.credentialDelay)); d > 0 {
			return false, d, nil
		}
		s.creds.seen.forget(ex.UID)
	}
	name := s.CredentialSecretName(ex.Name)
	var sec corev1.Secret
	err = s.client.Get(ctx, types.NamespacedName{Namespace: ex.Namespace, Name: name}, &sec)
	if apierrors.IsNotFound(err) {
		sec = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   ex.Namespace,
				Name:        name,
				Annotations: map[string]string{rotationAnnotation: "0"},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{TokenKey: []byte(Token(ex.Namespace, ex.Name, ex.UID, 0))},
		}
		if err := controllerutil.SetControllerReference(ex, &sec, s.scheme); err != nil {
			return false, 0, err
		}
		err = s.client.Create(ctx, &sec)
		if apierrors.IsAlreadyExists(err) {
			// The cache lags behind: read what is there and judge it below.
			err = s.reader.Get(ctx, client.ObjectKeyFromObject(&sec), &sec)
		}
	}
	if err != nil {
		return false, 0, err
	}
	owner := metav1.GetControllerOf(&sec)
	switch {
	case owner != nil && owner.UID == ex.UID && len(sec.Data[TokenKey]) > 0:
		return true, 0, nil
	case owner != nil && owner.Kind == "Exporter" && owner.Name == ex.Name && owner.UID != ex.UID:
		// Left over from an earlier Exporter of the same name (the garbage collector may be
		// off or behind): replace it, as the real controller's owner-scoped Secret would be.
		uid := sec.UID
		if err := s.client.Delete(ctx, &sec, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return false, 0, err
		}
		return false, 100 * time.Millisecond, nil
	default:
		// Someone else's Secret has the name the Jumpstarter controller wants (for example the
		// controller under test named its config Secret like this). Report it and wait: the
		// real controller would fail here too.
		s.record("credentials", ActionAnomaly, "Secret", sec.Namespace, sec.Name,
			"secret wanted for exporter %s credentials exists but is not a token Secret controlled by it", ex.Name)
		return false, 5 * time.Second, nil
	}
}

// applyCredential writes status.credential (when ready) and keeps status.endpoint current.
func (s *Simulator) applyCredential(ex *jsv1.Exporter, ready bool) bool {
	changed := false
	if ready && ex.Status.Credential == nil {
		ex.Status.Credential = &corev1.LocalObjectReference{Name: s.CredentialSecretName(ex.Name)}
		changed = true
	}
	if ex.Status.Credential != nil && ex.Status.Endpoint != s.opts.endpoint {
		ex.Status.Endpoint = s.opts.endpoint
		changed = true
	}
	return changed
}

// RotateToken replaces the token in the credential Secret of the Exporter namespace/name, as
// a token rotation by the Jumpstarter controller does, and returns the new token. The
// Exporter object itself does not change.
func (s *Simulator) RotateToken(ctx context.Context, namespace, name string) (string, error) {
	var ex jsv1.Exporter
	if err := s.direct.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &ex); err != nil {
		return "", err
	}
	if ex.Status.Credential == nil {
		return "", fmt.Errorf("jumpsim: exporter %s/%s has no credential yet", namespace, name)
	}
	var token string
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		var sec corev1.Secret
		if err := s.direct.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ex.Status.Credential.Name}, &sec); err != nil {
			return err
		}
		n, _ := strconv.Atoi(sec.Annotations[rotationAnnotation])
		n++
		token = Token(namespace, name, ex.UID, n)
		if sec.Annotations == nil {
			sec.Annotations = map[string]string{}
		}
		sec.Annotations[rotationAnnotation] = strconv.Itoa(n)
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[TokenKey] = []byte(token)
		return s.direct.Update(ctx, &sec)
	})
	if err != nil {
		return "", err
	}
	s.record("credentials", ActionTokenRotated, "Exporter", namespace, name, "token in secret %s rotated", ex.Status.Credential.Name)
	return token, nil
}
