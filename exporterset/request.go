package exporterset

import (
	"context"
	"fmt"
	"time"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// validationEntry remembers a Validate verdict for one version of a set and its class:
// Validate is deterministic, and for a plugin it is a remote call.
type validationEntry struct {
	setUID          string
	setGeneration   int64
	classVersion    string
	defaultsVersion string
	err             error
}

type describeEntry struct {
	desc provisioner.Description
	at   time.Time
}

// prepareRequest builds and validates the provisioner request; bad input blocks the set.
func (r *Reconciler) prepareRequest(ctx context.Context, p *pass) error {
	desc, err := r.describe(ctx, p.class.Spec.Provisioner, p.prov)
	if err != nil {
		return r.provisionerFailed(p, "describing provisioner", err)
	}
	req, err := provisioner.NewRequest(p.set, p.class, desc.DefaultImages)
	if err == nil {
		err = r.validate(ctx, p, req, desc)
	}
	if err != nil {
		return r.provisionerFailed(p, "validating parameters", err)
	}
	p.req = req
	p.hash = specHash(req)
	return nil
}

// provisionerFailed maps a provisioner error: invalid input blocks the set (a person must
// fix it; no retry until it changes), anything else is retried with backoff.
func (r *Reconciler) provisionerFailed(p *pass, what string, err error) error {
	if provisioner.IsInvalid(err) {
		p.block(vtv1alpha1.ReasonInvalidParameters, "%v", err)
		return nil
	}
	// Its event is the Degraded condition's (problemEvent): once per new problem, not once
	// per retry.
	p.block(vtv1alpha1.ReasonProvisionerError, "%s: %v", what, err)
	return fmt.Errorf("%s: %w", what, err)
}

// validate calls the provisioner's Validate unless this version of the set and class was
// validated already. Only verdicts are remembered (success or invalid input), never a
// transient failure.
func (r *Reconciler) validate(ctx context.Context, p *pass, req *provisioner.Request, desc provisioner.Description) error {
	key := keyOf(p.set)
	want := validationEntry{setUID: string(p.set.UID), setGeneration: p.set.Generation, classVersion: string(p.class.UID) + "/" + p.class.ResourceVersion, defaultsVersion: desc.Version}
	if v, ok := r.validated.Load(key); ok {
		e := v.(validationEntry)
		if e.setUID == want.setUID && e.setGeneration == want.setGeneration && e.classVersion == want.classVersion && e.defaultsVersion == want.defaultsVersion {
			return e.err
		}
	}
	err := p.prov.Validate(ctx, req)
	if err == nil || provisioner.IsInvalid(err) {
		want.err = err
		r.validated.Store(key, want)
		r.warn(ctx, p, req) // once per verdict, like the verdict itself
	}
	return err
}

// warn records a Warning event per provisioner warning (provisioner.WarningValidator). A
// warning never blocks the set; failing to get them is only logged.
func (r *Reconciler) warn(ctx context.Context, p *pass, req *provisioner.Request) {
	wv, ok := p.prov.(provisioner.WarningValidator)
	if !ok {
		return
	}
	warnings, err := wv.Warnings(ctx, req)
	if err != nil {
		logf.FromContext(ctx).Info("provisioner warnings unavailable", "error", err.Error())
		return
	}
	for _, w := range warnings {
		r.recorder.Eventf(p.set, nil, "Warning", EventDriverWarning, "Validate", "%s", w.String())
	}
}

func (r *Reconciler) describe(ctx context.Context, name string, prov provisioner.Provisioner) (provisioner.Description, error) {
	r.describeMu.Lock()
	e, ok := r.describes[name]
	r.describeMu.Unlock()
	if ok && r.clock.Since(e.at) < describeTTL {
		return e.desc, nil
	}
	desc, err := prov.Describe(ctx)
	if err != nil {
		return desc, err
	}
	r.describeMu.Lock()
	r.describes[name] = describeEntry{desc: desc, at: r.clock.Now()}
	r.describeMu.Unlock()
	return desc, nil
}
