package instance

import (
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"

	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/provisioner"
)

// config returns the exporter's config.yaml, remembered per Exporter with the inputs it was
// rendered from: every reconcile compares the instance's config with its Secret, and
// rendering it (driver enrichment, JSON, then YAML) again each time was most of the
// controller's CPU in a large pool. podErr says why the drivers are invalid.
func (r *Reconciler) config(ctx context.Context, b *build, e *jumpstarterv1alpha1.Exporter, token string, ca []byte) (yaml []byte, podErr, err error) {
	inputs := configInputs{
		endpoint: e.Status.Endpoint,
		token:    token,
		recycle:  b.set.Spec.RecycleStrategy,
		drivers:  driversVersion(b, e),
		hooks:    b.d.Hooks,
	}
	if c, ok := r.configs.ForInstance(b.key, e.UID); ok {
		if c.inputs == inputs && bytes.Equal(c.ca, ca) {
			return c.yaml, nil, nil
		}
	}
	drivers, podErr, err := r.enrichDrivers(ctx, b, e)
	if err != nil || podErr != nil {
		return nil, podErr, err
	}
	y, err := RenderConfig(e, token, ca, b.set.Spec.RecycleStrategy, drivers, b.d.HooksCfg)
	if err != nil {
		return nil, nil, provisioner.Invalid(err)
	}
	r.configs.PutInstance(b.key, e.UID, configEntry{inputs: inputs, ca: ca, yaml: y})
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

// driversVersion names what an instance's enriched drivers depend on: the set's spec hash
// now and the one the instance was built with.
func driversVersion(b *build, e *jumpstarterv1alpha1.Exporter) string {
	return b.d.Hash + "/" + e.Labels[pool.LabelSpecHash]
}

// enrichDrivers asks the provisioner for the instance's drivers, remembering the answer per
// Exporter and spec hash: it is deterministic, and for a plugin it is a remote call.
func (r *Reconciler) enrichDrivers(ctx context.Context, b *build, e *jumpstarterv1alpha1.Exporter) (drivers []vtv1alpha1.DriverSpec, podErr, err error) {
	hash := driversVersion(b, e)
	if d, ok := r.drivers.ForInstance(b.key, e.UID); ok && d.hash == hash {
		var out []vtv1alpha1.DriverSpec
		if err := json.Unmarshal(d.json, &out); err == nil {
			return out, nil, nil
		}
	}
	drivers, err = b.d.Prov.EnrichDrivers(ctx, b.d.Req.ForExporter(e.DeepCopy(), objects.ConfigSecretName(e.Name)))
	if err != nil {
		if provisioner.IsInvalid(err) {
			return nil, err, nil
		}
		return nil, nil, fmt.Errorf("enriching drivers of %s: %w", e.Name, err)
	}
	if raw, err := json.Marshal(drivers); err == nil {
		r.drivers.PutInstance(b.key, e.UID, driversEntry{hash: hash, json: raw})
	}
	return drivers, nil, nil
}

type driversEntry struct {
	hash string
	json []byte
}

// RenderConfig returns the config.yaml of an exporter (contract §3), as
// internal/exportercfg renders it: deterministic, so comparing bytes tells whether the
// Secret needs an update. The exporter exits after its lease unless the set reuses it. hooks
// (the set's parameters.hooks, checked) are written when there are some.
func RenderConfig(e *jumpstarterv1alpha1.Exporter, token string, caPEM []byte, recycle vtv1alpha1.RecycleStrategy, drivers []vtv1alpha1.DriverSpec, hooks *exportercfg.Hooks) ([]byte, error) {
	cfg := exportercfg.Config{
		APIVersion:     exportercfg.APIVersion,
		Kind:           exportercfg.Kind,
		Metadata:       exportercfg.Metadata{Namespace: e.Namespace, Name: e.Name},
		Endpoint:       e.Status.Endpoint,
		TLS:            exportercfg.TLS{CA: base64.StdEncoding.EncodeToString(caPEM)},
		Token:          token,
		ExitOnLeaseEnd: recycle != vtv1alpha1.RecycleInPlaceReuse,
		Export:         make(map[string]exportercfg.Driver, len(drivers)),
		Hooks:          hooks,
	}
	for _, d := range drivers {
		if _, dup := cfg.Export[d.Name]; dup {
			return nil, fmt.Errorf("driver %q is listed twice", d.Name)
		}
		x := exportercfg.Driver{Type: d.Type, Ref: d.Ref}
		if d.Config != nil {
			x.Config = d.Config.Raw
		}
		cfg.Export[d.Name] = x
	}
	return exportercfg.Render(&cfg)
}
