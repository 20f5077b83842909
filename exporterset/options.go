package exporterset

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
)

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithRecorder sends events (creates, retirements, recycles, errors) to rec. The default
// discards them.
func WithRecorder(rec events.EventRecorder) Option { return func(r *Reconciler) { r.recorder = rec } }

// WithMetrics registers the reconciler's metrics with reg (e.g. controller-runtime's
// metrics.Registry). The default registers none.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(r *Reconciler) { r.metricsReg = reg }
}

// WithClaimUnknownProvisioners makes the reconciler report ProvisionerUnknown on sets whose
// class names a provisioner it does not serve. Use it when this is the only controller;
// without it such sets are left alone (another controller may serve them).
func WithClaimUnknownProvisioners() Option { return func(r *Reconciler) { r.claimUnknown = true } }

// WithMaxConcurrentReconciles sets how many sets are reconciled at once (default 4).
func WithMaxConcurrentReconciles(n int) Option {
	return func(r *Reconciler) {
		if n > 0 {
			r.maxConcurrent = n
		}
	}
}

// WithRetryInterval sets how soon a set waiting on something that is not watched (a CA
// ConfigMap, a credential) is looked at again (default 10s).
func WithRetryInterval(d time.Duration) Option {
	return func(r *Reconciler) {
		if d > 0 {
			r.retryInterval = d
		}
	}
}

// WithInventoryInterval sets how often a set of an external provisioner has its remote
// inventory swept for orphans (default 1m).
func WithInventoryInterval(d time.Duration) Option {
	return func(r *Reconciler) {
		if d > 0 {
			r.inventoryInterval = d
		}
	}
}

// WithCapacityBudgets makes the reconciler honour CapacityBudgets: SetupWithManager adds
// the budget controller (internal/controllers/capacitybudget), and a governed set reserves
// its creates in its budgets (internal/ledger) and takes their ceiling. Use it only where the
// CapacityBudget CRD is installed and the controller may read it and write its status: its informer cannot
// start otherwise.
func WithCapacityBudgets() Option { return func(r *Reconciler) { r.budgets = true } }

// WithFailureBackoff sets the failure backoff: after n consecutive instance failures, new
// instances and Pods wait base * 2^(n-1), at most limit (defaults 2s and 5m).
func WithFailureBackoff(base, limit time.Duration) Option {
	return func(r *Reconciler) {
		if base > 0 && limit >= base {
			r.backoffBase, r.backoffCap = base, limit
		}
	}
}

// WithRegistrationGrace sets how long an instance's Pod may run before an exporter that has
// not registered is reported NotRegistering (default 1m).
func WithRegistrationGrace(d time.Duration) Option {
	return func(r *Reconciler) {
		if d > 0 {
			r.registrationGrace = d
		}
	}
}
