package exporterset

import (
	"time"

	"github.com/exporterset/exporterset/exporterset/internal/metrics"
	"github.com/exporterset/exporterset/exporterset/internal/state"
)

// The set controller remembers a few things between passes, to spare remote calls and CPU
// and to keep what the cache and the API server cannot tell it: a provisioner's description,
// a Validate verdict, the status it last wrote, what it poked instances with, the creates and
// retirements the cache may not show yet (expectations.go), the failure count and backoff
// (failurememory.go, pool/backoff.go), the status fields upstream's CRD prunes (pruned.go),
// the start-up samples (startup.go), the metrics' bookkeeping (metrics.go). Its memos are
// registered in the one state.Memory the instance controller, the contract Board and the
// CA reader register theirs in, under one rule (internal/state): a set's record is every
// memo's entry for it, and one forget and one sweep reach them all.
type memory struct {
	*state.Memory

	describes *state.Memo[describeEntry]   // per set: its provisioner's Description
	validated *state.Memo[validationEntry] // per set: the last Validate verdict
	own       *state.Memo[ownWrite]        // per set: the status it last wrote
	poked     *state.Memo[pokeKey]         // per instance: what it was last poked with

	credentials *state.Memo[credentialsEntry] // per set: its class's credentials (external provisioners)
	inventory   *state.Memo[time.Time]        // per set: when its external inventory was last swept
	startup     *state.Memo[startupMemory]    // per set: its measured start-up times (startup.go)

	expectations *state.Memo[*setExpectations]  // per set: creates and retirements not yet seen (expectations.go)
	failures     *state.Memo[*setFailures]      // per set: consecutive failures, the backoff (failurememory.go, pool/backoff.go)
	instFailures *state.Memo[*instanceFailures] // per instance: ever ready, failure counted (failurememory.go, pool/backoff.go)
	pruned       *state.Memo[prunedFields]      // per set: status fields upstream's CRD drops (pruned.go)
	metrics      *state.Memo[*metrics.Set]      // per set: the metrics' bookkeeping (metrics.go, slo.go)
	sightings    *state.Memo[hookSighting]      // per instance: a failed lease hook seen on the watch (quarantine_watch.go)
	policies     *state.Memo[policiesEntry]     // per set: its namespace's ExporterAccessPolicies (hardware_policy.go)
}

func newMemory(mem *state.Memory) *memory {
	return &memory{
		Memory:       mem,
		describes:    state.Register[describeEntry](mem, "describes"),
		validated:    state.Register[validationEntry](mem, "validated"),
		own:          state.Register[ownWrite](mem, "own"),
		poked:        state.Register[pokeKey](mem, "poked"),
		credentials:  state.Register[credentialsEntry](mem, "credentials"),
		inventory:    state.Register[time.Time](mem, "inventory"),
		startup:      state.Register[startupMemory](mem, "startup"),
		expectations: state.Register[*setExpectations](mem, "expectations"),
		failures:     state.Register[*setFailures](mem, "failures"),
		instFailures: state.Register[*instanceFailures](mem, "instFailures"),
		pruned:       state.Register[prunedFields](mem, "pruned"),
		metrics:      state.Register[*metrics.Set](mem, "metrics"),
		sightings:    state.Register[hookSighting](mem, "sightings"),
		policies:     state.Register[policiesEntry](mem, "policies"),
	}
}
