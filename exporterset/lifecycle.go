package exporterset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

// configure brings one live instance along its lifecycle (in, as observed, is only read):
// once the Jumpstarter controller
// has issued its credential and endpoint, write (and keep in sync) its config Secret; then,
// when the plan says so, start its Pod. ca is the CA bundle, nil when it is missing (the
// pass reports that): no config is written without it.
func (r *Reconciler) configure(ctx context.Context, p *pass, ca []byte, in *pool.Instance, start bool) (res configureResult, err error) {
	if !in.Credentialed() {
		res.waitingCred = true
		return res, nil
	}
	if ca == nil {
		return res, nil
	}
	if !in.HasPod() && in.ConfigSecret == nil && r.memory.podPending(p, in.Exporter.UID) {
		// Its Secret and Pod were created by an earlier reconcile after the cache this one
		// reads: writing them again would only be told AlreadyExists.
		return res, nil
	}
	secret, err := r.syncConfigSecret(ctx, p, ca, in, &res)
	if err != nil || secret == nil {
		return res, err
	}
	if in.HasPod() {
		r.memory.podSeen(keyOf(p.set), in.Exporter.UID)
		return res, nil
	}
	if !start || r.memory.podPending(p, in.Exporter.UID) {
		return res, nil
	}
	res.podErr, err = r.startPod(ctx, p, in)
	return res, err
}

// syncConfigSecret writes the exporter config Secret when missing or different. It returns
// nil without error when an input a person must provide is missing (said in res).
func (r *Reconciler) syncConfigSecret(ctx context.Context, p *pass, ca []byte, in *pool.Instance, res *configureResult) (*corev1.Secret, error) {
	e := in.Exporter
	token, missing, err := r.token(ctx, p, in)
	if err != nil || token == "" {
		res.credMissing = missing
		return nil, err
	}
	data, podErr, err := r.config(ctx, p, e, token, ca)
	if err != nil || data == nil {
		res.podErr = podErr
		return nil, err
	}
	name := ConfigSecretName(e.Name)
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
		if err := r.client.Update(ctx, updated); err != nil {
			return nil, ignoreConflict(fmt.Errorf("updating config secret %s: %w", name, err))
		}
		p.events.add(eventConfigured, e.Name, updated)
		return updated, nil
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       e.Namespace,
			Labels:          map[string]string{pool.LabelSet: p.set.Name},
			Annotations:     map[string]string{pool.AnnotationCredential: e.Status.Credential.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(e, jumpstarterv1alpha1.GroupVersion.WithKind("Exporter"))},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{provisioner.ExporterConfigFile: data},
	}
	if err := r.client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating config secret %s: %w", name, err)
	}
	return s, nil
}

// config returns the exporter's config.yaml, remembered per Exporter with the inputs it was
// rendered from: every pass compares every instance's config with its Secret, and
// rendering it (driver enrichment, JSON, then YAML) again each time was most of the
// controller's CPU in a large pool. podErr says why the drivers are invalid.
func (r *Reconciler) config(ctx context.Context, p *pass, e *jumpstarterv1alpha1.Exporter, token string, ca []byte) (yaml []byte, podErr, err error) {
	inputs := configInputs{
		endpoint: e.Status.Endpoint,
		token:    token,
		recycle:  p.set.Spec.RecycleStrategy,
		drivers:  driversVersion(p, e),
		hooks:    p.hooks,
	}
	if c, ok := r.memory.configs.forInstance(keyOf(p.set), e.UID); ok {
		if c.inputs == inputs && bytes.Equal(c.ca, ca) {
			return c.yaml, nil, nil
		}
	}
	drivers, podErr, err := r.enrichDrivers(ctx, p, e)
	if err != nil || podErr != nil {
		return nil, podErr, err
	}
	y, err := renderExporterConfig(e, token, ca, p.set.Spec.RecycleStrategy, drivers, p.hooksCfg)
	if err != nil {
		return nil, nil, provisioner.Invalid(err)
	}
	r.memory.configs.putInstance(keyOf(p.set), e.UID, configEntry{inputs: inputs, ca: ca, yaml: y})
	return y, nil, nil
}

// configInputs are what an exporter's config depends on besides its name and the CA bundle.
type configInputs struct {
	endpoint, token string
	recycle         vtv1alpha1.RecycleStrategy
	drivers         string // the spec hashes the drivers were enriched for
	hooks           string // the set's lease hooks as JSON
}

// configEntry is what config remembers of one Exporter; ca and yaml are shared, never
// modified.
type configEntry struct {
	inputs configInputs
	ca     []byte
	yaml   []byte
}

// caBundle returns the PEM bundle exporters trust, or the problem a person must fix. The
// ConfigMap is read uncached (caching every ConfigMap of the cluster to watch one would
// cost memory), and a bundle found is reused for caTTL, so a busy set does not cost a read
// per reconcile.
func (r *Reconciler) caBundle(ctx context.Context, p *pass) (ca []byte, problem string, err error) {
	name, key := DefaultCAConfigMap, DefaultCAKey
	if ref := p.class.Spec.CABundleConfigMapRef; ref != nil {
		name, key = ref.Name, ref.Key
		if key == "" {
			key = vtv1alpha1.DefaultCABundleKey
		}
	}
	set, source := keyOf(p.set), name+"/"+key
	if e, ok := r.memory.ca.forSet(set); ok && e.source == source && r.clock.Since(e.at) < caTTL {
		return e.pem, "", nil
	}
	var cm corev1.ConfigMap
	if err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: p.set.Namespace, Name: name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			r.memory.ca.dropSet(set)
			return nil, fmt.Sprintf("CA bundle ConfigMap %s/%s not found", p.set.Namespace, name), nil
		}
		return nil, "", fmt.Errorf("reading CA bundle ConfigMap %s: %w", name, err)
	}
	pem, ok := cm.Data[key]
	if !ok {
		if b, bin := cm.BinaryData[key]; bin {
			pem, ok = string(b), true
		}
	}
	if !ok || pem == "" {
		r.memory.ca.dropSet(set)
		return nil, fmt.Sprintf("CA bundle ConfigMap %s/%s has no key %q", p.set.Namespace, name, key), nil
	}
	ca = []byte(pem)
	r.memory.ca.putSet(set, caEntry{source: source, pem: ca, at: r.clock.Now()})
	return ca, "", nil
}

// caTTL bounds how long a CA bundle read is reused; a rotated CA reaches the config Secrets
// within it (the reconciler also looks at every set again within resyncInterval).
const caTTL = 30 * time.Second

// knownCA is the CA bundle last read for the set, nil when none was read (non-nil and
// empty when the read found none): read once per pass, an input of its diagnosis. The
// memo's bundle is never modified, so it is returned as it is.
func (r *Reconciler) knownCA(set string) []byte {
	e, ok := r.memory.ca.forSet(set)
	switch {
	case !ok:
		return nil
	case e.pem == nil:
		return []byte{}
	}
	return e.pem
}

type caEntry struct {
	source string // ConfigMap name/key
	pem    []byte
	at     time.Time
}

// token returns the exporter's token from the Jumpstarter credential Secret. The Secret is
// not ours, so the label-restricted cache does not hold it at first: it is labelled, after
// which the cache holds and watches it (tokens rotate) and observe finds it with the set's
// other Secrets. The label is a merge patch, whose answer is the whole Secret: reading and
// labelling cost one request, not two.
func (r *Reconciler) token(ctx context.Context, p *pass, in *pool.Instance) (token, missing string, err error) {
	e := in.Exporter
	key := client.ObjectKey{Namespace: e.Namespace, Name: e.Status.Credential.Name}
	s := in.Credential
	if s == nil {
		label, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{pool.LabelSet: p.set.Name}}})
		if err != nil {
			return "", "", err
		}
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		err = r.client.Patch(ctx, s, client.RawPatch(types.MergePatchType, label))
		if apierrors.IsNotFound(err) {
			return "", fmt.Sprintf("credential Secret %s of %s not found", key.Name, e.Name), nil
		}
		if err != nil {
			return "", "", fmt.Errorf("labelling credential secret %s: %w", key.Name, err)
		}
	}
	tok := string(s.Data[TokenKey])
	if tok == "" {
		return "", fmt.Sprintf("credential Secret %s of %s has no %q key", key.Name, e.Name, TokenKey), nil
	}
	return tok, "", nil
}

// driversVersion names what an instance's enriched drivers depend on: the set's spec hash
// now and the one the instance was built with.
func driversVersion(p *pass, e *jumpstarterv1alpha1.Exporter) string {
	return p.hash + "/" + e.Labels[pool.LabelSpecHash]
}

// enrichDrivers asks the provisioner for the instance's drivers, remembering the answer per
// Exporter and spec hash: it is deterministic, and for a plugin it is a remote call.
func (r *Reconciler) enrichDrivers(ctx context.Context, p *pass, e *jumpstarterv1alpha1.Exporter) (drivers []vtv1alpha1.DriverSpec, podErr, err error) {
	hash := driversVersion(p, e)
	if d, ok := r.memory.drivers.forInstance(keyOf(p.set), e.UID); ok && d.hash == hash {
		var out []vtv1alpha1.DriverSpec
		if err := json.Unmarshal(d.json, &out); err == nil {
			return out, nil, nil
		}
	}
	drivers, err = p.prov.EnrichDrivers(ctx, p.req.ForExporter(e.DeepCopy(), ConfigSecretName(e.Name)))
	if err != nil {
		if provisioner.IsInvalid(err) {
			return nil, err, nil
		}
		return nil, nil, fmt.Errorf("enriching drivers of %s: %w", e.Name, err)
	}
	if b, err := json.Marshal(drivers); err == nil {
		r.memory.drivers.putInstance(keyOf(p.set), e.UID, driversEntry{hash: hash, json: b})
	}
	return drivers, nil, nil
}

// startPod renders the instance Pod with the provisioner and creates it, owned by the
// Exporter. Its name is the Exporter's, so a stale cache cannot start a second one. podErr
// is what a person must look at (an invalid render, a refused Pod).
func (r *Reconciler) startPod(ctx context.Context, p *pass, in *pool.Instance) (podErr, err error) {
	e := in.Exporter
	pod, err := p.prov.RenderPod(ctx, p.req.ForExporter(e.DeepCopy(), ConfigSecretName(e.Name)))
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
	pod.Labels[pool.LabelSet] = p.set.Name
	pod.Labels[upstreamLabelSet] = p.set.Name // upstream's controller, put back, finds it (adopt.go)
	pod.Labels[pool.LabelSpecHash] = e.Labels[pool.LabelSpecHash]
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(e, jumpstarterv1alpha1.GroupVersion.WithKind("Exporter"))}
	if err := r.client.Create(ctx, pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			r.memory.podStarted(keyOf(p.set), e.UID, p.now)
			return nil, nil
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			podErr = err // the spec or a policy is wrong: a person must look
		}
		return podErr, fmt.Errorf("creating pod of %s: %w", e.Name, err)
	}
	r.memory.podStarted(keyOf(p.set), e.UID, p.now)
	p.events.add(eventPodStarted, e.Name, pod)
	return nil, nil
}

// ignoreConflict drops optimistic-concurrency conflicts: the next reconcile works from the
// newer object.
func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}
