package exporterset

import (
	"context"
	"fmt"
	"time"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
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
	name string // the provisioner's
	desc provisioner.Description
	at   time.Time
}

// prepareRequest builds and validates the provisioner request into p; bad input blocks the
// set.
func (r *Reconciler) prepareRequest(ctx context.Context, p *pass) (*blocker, error) {
	desc, err := r.describe(ctx, p)
	if err != nil {
		return provisionerFailed("describing provisioner", err)
	}
	req, hooks, err := newRequest(p.set, p.class, desc.DefaultImages)
	if err == nil {
		err = r.validate(ctx, p, req, desc)
	}
	if err != nil {
		return provisionerFailed("validating parameters", err)
	}
	p.req = req
	p.hooks = hooksJSON(hooks)
	p.hooksCfg = hooks
	p.hash = specHash(req, p.hooks)
	return nil, nil
}

// provisionerFailed maps a provisioner error: invalid input blocks the set (a person must
// fix it; no retry until it changes), anything else is retried with backoff. Its event is
// the Degraded condition's (problemEvent): once per new problem, not once per retry.
func provisionerFailed(what string, err error) (*blocker, error) {
	if provisioner.IsInvalid(err) {
		return blocked(vtv1alpha1.ReasonInvalidParameters, "%v", err), nil
	}
	return blocked(vtv1alpha1.ReasonProvisionerError, "%s: %v", what, err), fmt.Errorf("%s: %w", what, err)
}

// validate calls the provisioner's Validate unless this version of the set and class was
// validated already. Only verdicts are remembered (success or invalid input), never a
// transient failure.
func (r *Reconciler) validate(ctx context.Context, p *pass, req *provisioner.Request, desc provisioner.Description) error {
	key := keyOf(p.set)
	want := validationEntry{setUID: string(p.set.UID), setGeneration: p.set.Generation, classVersion: string(p.class.UID) + "/" + p.class.ResourceVersion, defaultsVersion: desc.Version}
	if e, ok := r.memory.validated.ForSet(key); ok {
		if e.setUID == want.setUID && e.setGeneration == want.setGeneration && e.classVersion == want.classVersion && e.defaultsVersion == want.defaultsVersion {
			return e.err
		}
	}
	err := p.prov.Validate(ctx, req)
	if err == nil || provisioner.IsInvalid(err) {
		want.err = err
		r.memory.validated.PutSet(key, want)
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
		r.warning(p.set, nil, eventlog.DriverWarning, "Validate", "%s", w.String())
	}
}

func (r *Reconciler) describe(ctx context.Context, p *pass) (provisioner.Description, error) {
	set, name := keyOf(p.set), p.class.Spec.Provisioner
	if e, ok := r.memory.describes.ForSet(set); ok && e.name == name && r.Clock.Since(e.at) < describeTTL {
		return e.desc, nil
	}
	desc, err := p.prov.Describe(ctx)
	if err != nil {
		return desc, err
	}
	r.memory.describes.PutSet(set, describeEntry{name: name, desc: desc, at: r.Clock.Now()})
	return desc, nil
}
