package leasehook

import (
	"context"
	"fmt"
	"time"

	"github.com/exporterset/exporterset/internal/exportercfg"
)

// Status is an exporterStatus value, spelled as the Exporter's status field spells it.
type Status string

// The statuses an exporter reports around its hooks.
const (
	StatusOffline               Status = "Offline"
	StatusAvailable             Status = "Available"
	StatusBeforeLeaseHook       Status = "BeforeLeaseHook"
	StatusLeaseReady            Status = "LeaseReady"
	StatusAfterLeaseHook        Status = "AfterLeaseHook"
	StatusBeforeLeaseHookFailed Status = "BeforeLeaseHookFailed"
	StatusAfterLeaseHookFailed  Status = "AfterLeaseHookFailed"
)

// Upstream's words.
const (
	// WarningPrefix opens the message of a hook that failed with onFailure warn
	// (upstream's HOOK_WARNING_PREFIX).
	WarningPrefix = "[HOOK_WARNING] "
	// MsgReady is the message of LeaseReady.
	MsgReady = "Ready for commands"
	// MsgAvailable is the message of Available after a lease.
	MsgAvailable = "Available for new lease"
)

// ReleaseDelay is how long an exporter shows a hook's endLease failure before it asks for
// the lease to be released (and, after afterLease, how long it waits before it is done).
const ReleaseDelay = time.Second

// Report is one status report.
type Report struct {
	Status  Status
	Message string
}

// Kind is which hook: Before (beforeLease) or After (afterLease).
type Kind int

// The two hooks.
const (
	Before Kind = iota
	After
)

// Name is the hook's key in the config: beforeLease or afterLease.
func (k Kind) Name() string {
	if k == Before {
		return "beforeLease"
	}
	return "afterLease"
}

// Of returns the hook of this kind in hooks, nil when there is none.
func (k Kind) Of(hooks *exportercfg.Hooks) *exportercfg.Hook {
	switch {
	case hooks == nil:
		return nil
	case k == Before:
		return hooks.BeforeLease
	default:
		return hooks.AfterLease
	}
}

// Running is the report while the hook runs.
func (k Kind) Running() Report {
	if k == Before {
		return Report{StatusBeforeLeaseHook, "Running beforeLease hook"}
	}
	return Report{StatusAfterLeaseHook, "Running afterLease hooks"}
}

// Done is the report when the hook did not fail (or there is none): LeaseReady before a
// lease's commands, Available after a lease.
func (k Kind) Done() Report {
	if k == Before {
		return Report{StatusLeaseReady, MsgReady}
	}
	return Report{StatusAvailable, MsgAvailable}
}

// Outcome is how a hook ended: Failure is "" on success, else upstream's error text, and
// Action is what the exporter does about it (warn, endLease or exit).
type Outcome struct {
	Kind    Kind
	Failure string
	Action  exportercfg.OnFailure
}

// Failed reports whether the hook failed.
func (o Outcome) Failed() bool { return o.Failure != "" }

// EndsLease reports whether the exporter asks for the lease to be released (endLease).
func (o Outcome) EndsLease() bool { return o.Failed() && o.Action == exportercfg.OnFailureEndLease }

// Exits reports whether the exporter goes offline and exits with code 1 (exit).
func (o Outcome) Exits() bool { return o.Failed() && o.Action == exportercfg.OnFailureExit }

// Reports are the reports that follow the hook, in order.
func (o Outcome) Reports() []Report {
	name := o.Kind.Name()
	done := o.Kind.Done()
	failed := StatusBeforeLeaseHookFailed
	if o.Kind == After {
		failed = StatusAfterLeaseHookFailed
	}
	switch {
	case !o.Failed():
		return []Report{done}
	case o.Action == exportercfg.OnFailureEndLease:
		return []Report{{failed, fmt.Sprintf("%s hook failed (on_failure=endLease): %s", name, o.Failure)}}
	case o.Action == exportercfg.OnFailureExit:
		return []Report{
			{failed, fmt.Sprintf("%s hook failed (on_failure=exit, shutting down): %s", name, o.Failure)},
			{StatusOffline, fmt.Sprintf("Exporter shutting down due to %s hook failure", name)},
		}
	default:
		return []Report{{done.Status, fmt.Sprintf("%s%s hook warning: %s", WarningPrefix, name, o.Failure)}}
	}
}

// RunKind runs the hook of this kind (there must be one) and returns its outcome.
func RunKind(ctx context.Context, k Kind, hooks *exportercfg.Hooks, env []string) Outcome {
	h := k.Of(hooks)
	return Outcome{Kind: k, Failure: Run(ctx, h, env, nil), Action: h.Action()}
}
