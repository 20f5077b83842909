package exporterset

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/state"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/provisioner"
)

// A pass is one reconcile of one set. It runs its steps in one direction, each with typed
// inputs and a typed result, and nothing is written back into an earlier step's data:
//
//	inputs (class, provisioner, request) → blocker
//	observe                              → observation
//	diagnose                             → health (each Instance.Problem, failures, backoff)
//	ComputeStatus                        → Counts
//	plan (PlanScale)                     → Plan
//	act                                  → actResult
//	conditions(passResult)               → the status conditions (pure)

// pass is what a pass works from, read-only once its request is prepared, plus two sinks
// that its concurrent steps share: the events to record and the soonest requeue asked for.
type pass struct {
	set      *vtv1alpha1.ExporterSet // the set as the cache showed it (a copy)
	now      time.Time
	class    *vtv1alpha1.VirtualTargetClass // nil when it does not exist
	prov     provisioner.Provisioner        // nil when the class names none served here
	req      *provisioner.Request           // nil until prepared (never for a blocked set)
	hash     string                         // the spec hash of req and hooks
	hooksCfg *exportercfg.Hooks             // parameters.hooks, nil for none (taken out of req)
	hooks    string                         // hooksCfg as JSON, "" for none
	selector labels.Selector
	policy   reusePolicy // the set's reuse policy (reusepolicy.go)
	gov      governance  // the CapacityBudgets selecting the set (budgetgov.go)

	events  *eventlog.Batch
	requeue *state.Soonest
}

func (p *pass) requeueIn(d time.Duration) { p.requeue.In(d) }

// binding is the class's binding mode, "" without a class.
func (p *pass) binding() vtv1alpha1.BindingMode {
	if p.class == nil {
		return ""
	}
	return p.class.Spec.BindingMode
}

// blocker is why a set cannot act at all (class missing, invalid parameters...): a person
// must change something.
type blocker struct {
	reason  vtv1alpha1.ConditionReason
	message string
}

func blocked(reason vtv1alpha1.ConditionReason, format string, args ...any) *blocker {
	return &blocker{reason: reason, message: fmt.Sprintf(format, args...)}
}

// health is diagnose's result: each instance's Problem, the pool's diagnosed failures and
// the set's failure backoff.
type health struct {
	problems pool.Problems
	failures failureSummary
	backoff  pool.Backoff
}

// failing reports whether instances fail or the set backs off after failures.
func (h health) failing(now time.Time) bool { return h.failures.Failing > 0 || h.backoff.Active(now) }

// actResult is what act did and met.
type actResult struct {
	seq        int64 // the next instance sequence number
	createErr  error // the batch of creates that failed
	caProblem  string
	configured []contract.Result // one per live instance, in instance order
}

func (a actResult) waitingCreds() (n int) {
	for _, c := range a.configured {
		if c.WaitingCred {
			n++
		}
	}
	return n
}

func (a actResult) credMissing() (out []string) {
	for _, c := range a.configured {
		if c.CredMissing != "" {
			out = append(out, c.CredMissing)
		}
	}
	return out
}

// targetWait says why instances' targets could not be created yet (the first cause, and
// how many wait), "" when none waits.
func (a actResult) targetWait() string {
	n, first := 0, ""
	for _, c := range a.configured {
		if c.TargetWait != "" {
			if n == 0 {
				first = c.TargetWait
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d instance targets not created yet, retried: %s", n, first)
}

// podErr is the last instance's Pod error: one is enough to say what is wrong.
func (a actResult) podErr() (err error) {
	for _, c := range a.configured {
		if c.PodErr != nil {
			err = c.PodErr
		}
	}
	return err
}

// passResult is every step's result: what the status and its conditions are made of.
type passResult struct {
	blocked  *blocker
	counts   pool.Counts
	health   health
	plan     *pool.Plan // nil when blocked: nothing was planned
	act      actResult
	external externalResult // external provisioners only
	reuse    reuseResult    // the quarantine (quarantine_status.go)
	gov      governance     // the budgets selecting the set
	boards   []string       // the free boards counted toward the buffer (hardware.go)
	// boardPolicy is why leases may not go to the boards first (hardware_policy.go).
	boardPolicy string
}
