package exporterset

import (
	"github.com/exporterset/exporterset/internal/tuning"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
)

// Option configures a Reconciler.
type Option func(*options)

// WithRecorder sends events (creates, retirements, recycles, errors) to rec. The default
// discards them.
func WithRecorder(rec events.EventRecorder) Option { return func(o *options) { o.set.Recorder = rec } }

// WithMetrics registers the reconciler's metrics with reg (e.g. controller-runtime's
// metrics.Registry). The default registers none.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(o *options) { o.metricsReg = reg }
}

// WithClaimUnknownProvisioners makes the reconciler report ProvisionerUnknown on sets whose
// class names a provisioner it does not serve. Use it when this is the only controller;
// without it such sets are left alone (another controller may serve them).
func WithClaimUnknownProvisioners() Option { return func(o *options) { o.set.ClaimUnknown = true } }

// WithMaxConcurrentReconciles sets how many sets are reconciled at once (default 4).
func WithMaxConcurrentReconciles(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.set.MaxConcurrent = n
		}
	}
}

// WithTuning sets the reconciler's timings (internal/tuning): for this module's tests and
// test machinery only, which shorten them; an embedder gets the defaults.
func WithTuning(k tuning.Knobs) Option {
	return func(o *options) {
		if k.RetryInterval > 0 {
			o.set.RetryInterval = k.RetryInterval
		}
		if k.InventoryInterval > 0 {
			o.set.InventoryInterval = k.InventoryInterval
		}
		if k.BackoffBase > 0 && k.BackoffLimit >= k.BackoffBase {
			o.set.BackoffBase, o.set.BackoffCap = k.BackoffBase, k.BackoffLimit
		}
		if k.RegistrationGrace > 0 {
			o.set.RegistrationGrace = k.RegistrationGrace
		}
	}
}

// WithCapacityBudgets makes the reconciler honour CapacityBudgets: SetupWithManager adds
// the budget controller (internal/controllers/capacitybudget), and a governed set reserves
// its creates in its budgets (internal/ledger) and takes their ceiling. Use it only where the
// CapacityBudget CRD is installed and the controller may read it and write its status: its
// informer cannot start otherwise.
func WithCapacityBudgets() Option { return func(o *options) { o.set.Budgets = true } }
