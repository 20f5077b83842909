package pool

import (
	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// Problem is a known failure of one instance, read from its Pod's status (written by the
// kubelet and the scheduler) and its Exporter's (written by Jumpstarter).
type Problem struct {
	// Reason is one of the instance failure reasons (vtv1alpha1.ReasonImagePullFailed, ...).
	Reason vtv1alpha1.ConditionReason
	// Container and Image name what failed, when a container did.
	Container, Image string
	// Message quotes the kubelet's or scheduler's own message where there is one.
	Message string
	// Replace is true when waiting will not help: an unleased instance is replaced (a leased
	// one only when its lease ends).
	Replace bool
}

// Problems are what diagnosis found: each failing instance's Problem, by its Exporter's UID.
// They are passed explicitly to the pure status and plan functions; an Instance itself is
// read-only after observation.
type Problems map[types.UID]*Problem

// Of is in's Problem, nil when none is known (also for a nil Problems).
func (ps Problems) Of(in *Instance) *Problem { return ps[in.Exporter.UID] }

// Replaces reports whether in's Problem asks for replacement (waiting will not help).
func (ps Problems) Replaces(in *Instance) bool {
	p := ps.Of(in)
	return p != nil && p.Replace
}

// FailureReasons returns every reason diagnosis gives a Problem (a new slice), so that a
// set's failure counters can be exported at zero from its first pass: increase() cannot
// count a series' first sample, so a counter that appears at 1 hides the first failure.
func FailureReasons() []vtv1alpha1.ConditionReason {
	return []vtv1alpha1.ConditionReason{
		vtv1alpha1.ReasonImagePullFailed, vtv1alpha1.ReasonTargetCrashing, vtv1alpha1.ReasonUnschedulable,
		vtv1alpha1.ReasonContainerCreateFailed, vtv1alpha1.ReasonNotRegistering, vtv1alpha1.ReasonEvicted,
		vtv1alpha1.ReasonNodeLost, vtv1alpha1.ReasonStartupDeadlineExceeded, vtv1alpha1.ReasonExternalTargetFailed,
		vtv1alpha1.ReasonReuseCheckFailing,
	}
}
