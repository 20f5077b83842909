// Package contract is all the set controller and the instance controller share: what a
// set's last unblocked pass decided for its instances (Intents, one record per set, replaced
// whole by each pass), what building each instance met (Result), and the events the
// instance controller collects for the set's next pass. The set controller writes the
// intents and reads the results; the instance controller reads the intents and writes the
// results. Neither imports the other: the front wires both to one Board.
package contract

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/provisioner"
)

// Intents is one pass's decisions for its set's instances, and the inputs it decided them
// from. Nothing in it is modified once published.
type Intents struct {
	SetUID       types.UID
	Generation   int64
	ClassVersion string
	Class        *vtv1alpha1.VirtualTargetClass
	Prov         provisioner.Provisioner
	Req          *provisioner.Request // with a copy of the set of its own
	Hash         string               // the spec hash of Req and the hooks
	HooksCfg     *exportercfg.Hooks   // the set's lease hooks, nil for none
	Hooks        string               // HooksCfg as JSON
	Selector     labels.Selector
	BackoffUntil time.Time
	// Immediate: an instance of the current spec gets its Pod as soon as it is configured,
	// before a pass has seen it (the plan's StartNew, but not for an external provisioner,
	// whose Pod waits for its target).
	Immediate bool
	// Target is the request, with the class's credentials, that an external provisioner's
	// targets are created with; nil for a provisioner without targets, or while the
	// credentials cannot be read (the set reports that).
	Target *provisioner.Request
	// Version changes whenever something every instance's config depends on changes.
	Version   string
	Instances map[types.UID]Intent
}

// Intent is what the pass decided for one instance.
type Intent struct {
	Start   bool      // it should get a Pod now (plan.StartPods)
	Restart bool      // its terminal Pods are deleted so that a fresh one starts (plan.RestartPods)
	Broken  types.UID // with Restart: its current Pod, deleted too (waiting will not help)
	// CreateTarget: the pass observed no external target for it, so the instance
	// controller creates one (provisioner.ExternalProvisioner), unless the Exporter's
	// record of a created target (objects.AnnotationExternalRecorded) has changed from
	// SeenRecord since: a target made after the pass looked is not made twice.
	CreateTarget bool
	SeenRecord   string
}

// BackingOff reports whether the set's failure backoff holds Pod starts at now.
func (d *Intents) BackingOff(now time.Time) bool { return now.Before(d.BackoffUntil) }

// StartsPod is the one rule of when an instance without a Pod gets one: the pass decided
// it, or the set starts instances of the current spec at once (Immediate) and this one is
// enabled, current and selected. The failure backoff holds either (the caller asks to be
// looked at again when it ends).
func (d *Intents) StartsPod(it Intent, enabled bool, specHash string, instanceLabels labels.Set) bool {
	return it.Start || d.Immediate && enabled && specHash == d.Hash && d.Selector.Matches(instanceLabels)
}

// Result is what building one live instance met.
type Result struct {
	WaitingCred bool   // the Jumpstarter controller has not issued its credential yet
	CredMissing string // its credential Secret is missing or has no token
	PodErr      error  // its drivers or Pod are invalid, or its Pod could not be created
	TargetErr   error  // the provisioner refused to create its external target (provisioner.IsInvalid)
	// TargetWait is why its target (or hosted unit) could not be created yet, though a retry
	// may succeed: no free slot, a host that does not answer. "" when none failed.
	TargetWait string
	Version    string // the Intents.Version it was built with
}

// Same reports whether a and b say the same to a person (the set's conditions).
func Same(a, b Result) bool {
	msg := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	return a.WaitingCred == b.WaitingCred && a.CredMissing == b.CredMissing && msg(a.PodErr) == msg(b.PodErr) && msg(a.TargetErr) == msg(b.TargetErr) && a.TargetWait == b.TargetWait
}
