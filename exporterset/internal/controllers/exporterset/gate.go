package exporterset

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// gateRetry is how often a set left alone by the gate is looked at again: a process that
// has just taken over a lock starts on its sets within it.
const gateRetry = 2 * time.Second

// gated reports whether the gate keeps the reconciler off a provisioner's sets now, and
// if so schedules the next look.
func (r *Reconciler) gated(p *pass, provisioner string) bool {
	if r.Gate == nil || r.Gate(p.set.Namespace, provisioner) {
		return false
	}
	p.requeueIn(gateRetry)
	return true
}

// errGated says another process holds the Lease of the provisioner concerned.
var errGated = errors.New("another process holds this provisioner's lock")

// GateOpened tells the reconciler that its gate has just opened in namespace (this process
// took a lock there): the namespace's sets are reconciled now rather than at their next
// gateRetry, so the first set a process sees in a namespace waits for the lock's round trip
// only. It does nothing before SetupWithManager, and is safe for concurrent use.
func (r *Reconciler) GateOpened(ctx context.Context, namespace string) error {
	if r.setPokes == nil {
		return nil
	}
	var sets vtv1alpha1.ExporterSetList
	if err := r.client.List(ctx, &sets, client.InNamespace(namespace)); err != nil {
		return err
	}
	for i := range sets.Items {
		r.poke(ctx, r.setPokes, &sets.Items[i])
	}
	return nil
}
