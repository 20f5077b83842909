package exporterset

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exporterset/exporterset/exporterset/internal/cabundle"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	setcontroller "github.com/exporterset/exporterset/exporterset/internal/controllers/exporterset"
	"github.com/exporterset/exporterset/exporterset/internal/controllers/instance"
	"github.com/exporterset/exporterset/exporterset/internal/metrics"
	"github.com/exporterset/exporterset/exporterset/internal/state"
	"github.com/exporterset/exporterset/provisioner"
)

// Reconciler keeps ExporterSets' pools: the set controller, the instance controller and,
// with WithCapacityBudgets, the CapacityBudget controller, wired together. Create it with
// NewReconciler and add it to a manager with SetupWithManager.
type Reconciler struct {
	opts      options
	client    client.Client
	mem       *state.Memory
	set       *setcontroller.Reconciler
	instances *instance.Reconciler
}

// options is what the Options set: the set controller's configuration, from which the
// others take theirs.
type options struct {
	set        setcontroller.Config
	metricsReg prometheus.Registerer // WithMetrics; nil: no metrics
}

// NewReconciler returns a Reconciler that reads through c (normally the manager's cached
// client), re-reads through apiReader (uncached) before it deletes anything, and renders
// instances with the provisioners of registry.
func NewReconciler(c client.Client, apiReader client.Reader, registry *provisioner.Registry, opts ...Option) *Reconciler {
	o := options{set: setcontroller.DefaultConfig()}
	for _, opt := range opts {
		opt(&o)
	}
	// After the options, so that an injected clock is everyone's, and gives the start too.
	if o.metricsReg != nil {
		o.set.Metrics = metrics.New(o.metricsReg, o.set.Clock.Now())
	}
	mem := state.NewMemory()
	board := contract.NewBoard(mem)
	ca := cabundle.New(mem, apiReader, o.set.Clock)
	inst := instance.New(instance.Config{
		Client: c, Clock: o.set.Clock, Board: board, CA: ca, Memory: mem,
		Gate: o.set.Gate, RetryInterval: o.set.RetryInterval,
	})
	set := setcontroller.New(c, apiReader, registry, o.set, setcontroller.Shared{
		Memory: mem, Board: board, CA: ca, InstanceRetired: inst.Retired,
	})
	return &Reconciler{opts: o, client: c, mem: mem, set: set, instances: inst}
}

// Reconcile moves one ExporterSet's pool towards its spec and writes its status once (the
// set controller's reconcile).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.set.Reconcile(ctx, req)
}

// GateOpened tells the reconciler that its gate has just opened in namespace (this process
// took a lock there): the namespace's sets are reconciled now rather than at their next
// look, so the first set a process sees in a namespace waits for the lock's round trip
// only. It does nothing before SetupWithManager, and is safe for concurrent use.
func (r *Reconciler) GateOpened(ctx context.Context, namespace string) error {
	return r.set.GateOpened(ctx, namespace)
}
