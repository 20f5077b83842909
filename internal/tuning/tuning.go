// Package tuning holds the reconciler's timing knobs that only this module's tests and test
// machinery set (exporterset.WithTuning). Code outside the module cannot import it, so the
// knobs are not part of the library's API: an embedder gets the defaults.
package tuning

import "time"

// Knobs are the reconciler's timings; a zero field keeps its default.
type Knobs struct {
	// RetryInterval is how soon a set waiting on something that is not watched (a CA
	// ConfigMap, a credential) is looked at again (default 10s).
	RetryInterval time.Duration
	// InventoryInterval is how often a set of an external provisioner has its remote
	// inventory swept for orphans (default 1m).
	InventoryInterval time.Duration
	// BackoffBase and BackoffLimit are the failure backoff: after n consecutive instance
	// failures, new instances and Pods wait BackoffBase * 2^(n-1), at most BackoffLimit
	// (defaults 2s and 5m). Both are set together, the limit at least the base.
	BackoffBase, BackoffLimit time.Duration
	// RegistrationGrace is how long an instance's Pod may run before an exporter that has
	// not registered is reported NotRegistering (default 1m).
	RegistrationGrace time.Duration
}
