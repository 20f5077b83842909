package soak

import (
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// The Available invariants. A status can be judged only against what it was computed
// from, so there are two:
//
//   - judgeAvailableStatus reads one status as the controller wrote it: the counters and
//     the conditions come from the same pass and the same update, so Available=True for
//     the set's current generation must agree with the counters beside it, on every watch
//     event, without grace;
//   - availableTracker recomputes the pool from the checker's own view of the objects and
//     flags a status that keeps saying Available=True while the objects show the floor or
//     the buffer broken for longer than a grace: the controller's and the checker's watches
//     lag each other, and the controller needs a pass to write what it saw.

// availableTrue returns the Available condition when it is True for the set's current
// generation (condition and status), nil otherwise: an older True says nothing about the
// spec the set has now.
func availableTrue(set *vtv1alpha1.ExporterSet) *metav1.Condition {
	c := apimeta.FindStatusCondition(set.Status.Conditions, vtv1alpha1.ConditionAvailable)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != set.Generation || set.Status.ObservedGeneration != set.Generation {
		return nil
	}
	return c
}

// judgeAvailableStatus returns why a set's own status contradicts Available=True, "" when
// it does not. The rule is the one documented on vtv1alpha1.ConditionAvailable:
//
//   - the buffer: availableReplicas >= minAvailableReplicas less the free boards its
//     hardware selector counts (boards.go);
//   - the floor: instances ready and not failing number at least minReplicas, so at least
//     readyReplicas >= minReplicas (the status has no counter of ready, non-failing ones);
//   - an empty pool must not be failing: availableReplicas == 0 implies failingReplicas == 0.
//
// Under WaitForFirstConsumer (reason WaitingForFirstConsumer) no instance is available
// while idle: the set must have at least minAvailableReplicas instances, and the empty-pool
// rule holds as well.
//
// The WaitForFirstConsumer count is of unleased instances (replicas - leasedReplicas), as
// the API doc says; the reconciler once counted leased ones too, which the soak found.
func judgeAvailableStatus(set *vtv1alpha1.ExporterSet) string {
	c := availableTrue(set)
	if c == nil {
		return ""
	}
	st, spec := set.Status, set.Spec
	base := fmt.Sprintf("Available=True (%s, generation %d) but ", c.Reason, set.Generation)
	if st.AvailableReplicas == 0 && st.FailingReplicas > 0 {
		return base + fmt.Sprintf("no instance is available and %d are failing", st.FailingReplicas)
	}
	// The status's own count of free boards: this judges the status against itself.
	buffer := expool.Buffer(spec.MinAvailableReplicas, st.HardwareAvailableReplicas)
	if c.Reason == string(vtv1alpha1.ReasonWaitForFirstConsumer) {
		if st.Replicas-st.LeasedReplicas < buffer {
			return base + fmt.Sprintf("the WaitForFirstConsumer set has %d unleased instances, minAvailableReplicas %d", st.Replicas-st.LeasedReplicas, spec.MinAvailableReplicas)
		}
		return ""
	}
	if st.AvailableReplicas < buffer {
		return base + fmt.Sprintf("availableReplicas %d < minAvailableReplicas %d less %d free boards", st.AvailableReplicas, spec.MinAvailableReplicas, st.HardwareAvailableReplicas)
	}
	if st.ReadyReplicas < spec.MinReplicas {
		return base + fmt.Sprintf("readyReplicas %d < minReplicas %d: the floor is not served by ready instances", st.ReadyReplicas, spec.MinReplicas)
	}
	return ""
}

// wffcLeasedCounted reports a WaitForFirstConsumer status that says Available=True with
// fewer unleased instances than minAvailableReplicas (now also a violation of
// judgeAvailableStatus; counted apart so the summary shows the old bug stays gone).
func wffcLeasedCounted(set *vtv1alpha1.ExporterSet) bool {
	c := availableTrue(set)
	return c != nil && c.Reason == string(vtv1alpha1.ReasonWaitForFirstConsumer) &&
		set.Status.Replicas-set.Status.LeasedReplicas < set.Spec.MinAvailableReplicas
}

// liveShortfall recomputes a set's pool from the objects (with the checker's diagnosis)
// and says how it breaks the Available rule, "" when it does not.
func liveShortfall(set *vtv1alpha1.ExporterSet, cond *metav1.Condition, instances []*expool.Instance, boards int32) string {
	problems := diagnosed(instances)
	counts := expool.ComputeStatus(instances, problems)
	serving := int32(0)
	for _, in := range instances {
		if in.Ready() && problems.Of(in) == nil {
			serving++
		}
	}
	spec := set.Spec
	buffer := expool.Buffer(spec.MinAvailableReplicas, boards) // free boards hold the rest (boards.go)
	switch {
	case counts.AvailableReplicas == 0 && counts.FailingReplicas > 0:
		return fmt.Sprintf("no instance is available and %d are failing", counts.FailingReplicas)
	case cond.Reason == string(vtv1alpha1.ReasonWaitForFirstConsumer):
		if counts.Replicas < buffer {
			return fmt.Sprintf("%d instances (WaitForFirstConsumer), minAvailableReplicas %d, %d free boards", counts.Replicas, spec.MinAvailableReplicas, boards)
		}
	case counts.AvailableReplicas < buffer:
		return fmt.Sprintf("%d available instances, minAvailableReplicas %d, %d free boards", counts.AvailableReplicas, spec.MinAvailableReplicas, boards)
	case serving < spec.MinReplicas:
		return fmt.Sprintf("%d ready, non-failing instances, minReplicas %d", serving, spec.MinReplicas)
	}
	return ""
}

// availableTracker remembers since when a set's status has said Available=True while the
// objects showed otherwise.
type availableTracker struct{ since time.Time }

// check judges one evaluation: shortfall is liveShortfall's verdict ("" when the objects
// agree, or the status does not say True), excused whether the controller cannot act.
func (t *availableTracker) check(now time.Time, set string, shortfall string, excused bool, grace time.Duration) (detail string) {
	if shortfall == "" || excused {
		t.since = time.Time{}
		return ""
	}
	if t.since.IsZero() {
		t.since = now
		return ""
	}
	if now.Sub(t.since) <= grace {
		return ""
	}
	since := t.since
	t.since = now // once per grace, not every check
	return fmt.Sprintf("set %s has said Available=True for %s while its objects show: %s", set, now.Sub(since).Round(time.Millisecond), shortfall)
}
