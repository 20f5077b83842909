package exporterset

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// conditions derives the four conditions from a pass's results. It is pure: set gives
// the spec and generation, binding the class's binding mode ("" without a class).
func conditions(set *vtv1alpha1.ExporterSet, binding vtv1alpha1.BindingMode, now time.Time, res passResult) []metav1.Condition {
	cond := condOf(set.Generation)
	out := []metav1.Condition{
		availableCondition(cond, set.Spec, binding, now, res),
		withReuseNotes(degradedCondition(cond, now, res), res.reuse),
		progressingCondition(cond, set.Spec, now, res),
		leasesWaitCondition(cond, res),
	}
	if c, ok := scalingLimitedCondition(cond, set.Spec, res.plan, res.gov); ok {
		out = append(out, c)
	}
	if c, ok := budgetConflictCondition(cond, res.gov); ok {
		out = append(out, c)
	}
	return out
}

// degradedCondition says what is wrong, the most pressing problem first.
func degradedCondition(cond condFunc, now time.Time, res passResult) metav1.Condition {
	fs, bo, act := res.health.failures, res.health.backoff, res.act
	switch b := res.blocked; {
	case b != nil:
		return cond(vtv1alpha1.ConditionDegraded, true, b.reason, "%s", b.message)
	case res.external.unreachable != nil:
		return cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonRemoteUnreachable, "%s", res.external.message())
	case res.external.credentials != "":
		return cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonCredentialsMissing, "%s", res.external.credentials)
	case act.caProblem != "":
		return cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonCABundleMissing, "%s", act.caProblem)
	case len(act.credMissing()) > 0:
		return cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonCredentialsMissing, "%s", strings.Join(act.credMissing(), "; "))
	case act.createErr != nil:
		return cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonProvisionerError, "creating instances: %v", act.createErr)
	case act.podErr() != nil:
		return cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonProvisionerError, "starting pods: %v", act.podErr())
	case res.reuse.breaker.open():
		return cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonReuseCheckFailing, "%s", res.reuse.breaker.message(now))
	case fs.Failing > 0:
		return cond(vtv1alpha1.ConditionDegraded, true, fs.Reason, "%s%s", fs.message(), bo.Suffix(now))
	case bo.Failures > 0:
		// Also once the delay has passed: the replacements being tried now have not shown the
		// spec works yet, and "no problems" between two crashes would be a lie.
		return cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonBackingOff, "%s", bo.Message(now))
	case res.counts.PodsFailed > 0:
		return cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonPodsFailing, "%d instance pods failed; they are being replaced", res.counts.PodsFailed)
	}
	return cond(vtv1alpha1.ConditionDegraded, false, vtv1alpha1.ReasonAsExpected, "no problems")
}

// progressingCondition says what the pool is doing about its spec.
func progressingCondition(cond condFunc, spec vtv1alpha1.ExporterSetSpec, now time.Time, res passResult) metav1.Condition {
	pl := res.plan
	switch {
	case res.blocked != nil:
		return cond(vtv1alpha1.ConditionProgressing, false, res.blocked.reason, "blocked: %s", res.blocked.message)
	case res.external.holds():
		return cond(vtv1alpha1.ConditionProgressing, false, vtv1alpha1.ReasonRemoteUnreachable, "creating and starting nothing until the external targets' remote end answers")
	case pl == nil:
		return cond(vtv1alpha1.ConditionProgressing, false, vtv1alpha1.ReasonAsExpected, "nothing planned")
	case pl.BackingOff:
		return cond(vtv1alpha1.ConditionProgressing, false, vtv1alpha1.ReasonBackingOff, "%s", backoffMessage(res, now))
	case pl.Outdated > 0:
		return cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonRollingInstances,
			"rolling to the new spec: %d idle instances of an older spec left, each retired once a new one is available in its place; creating %d", pl.Outdated, pl.Create)
	case pl.Create > 0:
		return cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonCreatingInstances, "creating %d instances (want %d)", pl.Create, pl.Wanted)
	case len(pl.Retire) > 0 || len(pl.Remove) > 0:
		return cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonRetiringInstances, "retiring %d, removing %d instances", len(pl.Retire), len(pl.Remove))
	case res.act.waitingCreds() > 0:
		return cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonWaitingForCredentials, "%d instances wait for the Jumpstarter controller's credential and endpoint", res.act.waitingCreds())
	case res.counts.UnavailableReplicas > res.counts.RestingReplicas: // one at rest is not on its way
		return cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonWaitingForInstances, "%d instances are not ready yet", res.counts.UnavailableReplicas-res.counts.RestingReplicas)
	case pl.SurplusSince != nil:
		return cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonScaleDownCoolingDown, "surplus instances are retired at %s (scaleDownCooldown)", pl.SurplusSince.Add(durationOf(spec.ScaleDownCooldown)).UTC().Format("15:04:05Z"))
	}
	return cond(vtv1alpha1.ConditionProgressing, false, vtv1alpha1.ReasonAsExpected, "pool is at its desired size")
}

// scalingLimitedCondition says whether maxReplicas, or a CapacityBudget, holds the pool
// back. Without a plan (a blocked set) it says nothing (ok=false): what it said before stays.
func scalingLimitedCondition(cond condFunc, spec vtv1alpha1.ExporterSetSpec, pl *pool.Plan, g governance) (metav1.Condition, bool) {
	switch {
	case pl == nil:
		return metav1.Condition{}, false
	case pl.BudgetLimited && g.ceiling != nil:
		return cond(vtv1alpha1.ConditionScalingLimited, true, vtv1alpha1.ReasonBudgetExhausted, "wants %d instances, CapacityBudget %s allows %d now%s%s", pl.Wanted, g.strictest, *g.ceiling, maxReplicasNote(spec), bookingSuffix(pl)), true
	case pl.Limited:
		return cond(vtv1alpha1.ConditionScalingLimited, true, vtv1alpha1.ReasonAtMaxReplicas, "wants %d instances, maxReplicas is %d%s", pl.Wanted, *spec.MaxReplicas, bookingSuffix(pl)), true
	}
	return cond(vtv1alpha1.ConditionScalingLimited, false, vtv1alpha1.ReasonWithinLimits, "wants %d instances%s", pl.Wanted, bookingSuffix(pl)), true
}

// maxReplicasNote names maxReplicas beside a budget's lower ceiling.
func maxReplicasNote(spec vtv1alpha1.ExporterSetSpec) string {
	if spec.MaxReplicas == nil || *spec.MaxReplicas == 0 {
		return ""
	}
	return fmt.Sprintf(" (maxReplicas is %d)", *spec.MaxReplicas)
}

// availableCondition applies the rule documented on vtv1alpha1.ConditionAvailable.
func availableCondition(cond condFunc, spec vtv1alpha1.ExporterSetSpec, binding vtv1alpha1.BindingMode, now time.Time, res passResult) metav1.Condition {
	c, fs, bo, act := res.counts, res.health.failures, res.health.backoff, res.act
	failing := res.health.failing(now) || res.external.holds()
	// Free boards hold part of the buffer (hardware.go): the set's own instances the rest.
	buffer, boards := pool.Buffer(spec.MinAvailableReplicas, c.HardwareAvailableReplicas), boardsNote(res.boards, spec.MinAvailableReplicas)
	why := func() (vtv1alpha1.ConditionReason, string) { // the most specific cause of False
		switch {
		case res.external.unreachable != nil:
			return vtv1alpha1.ReasonRemoteUnreachable, res.external.message()
		case res.external.credentials != "":
			return vtv1alpha1.ReasonCredentialsMissing, res.external.credentials
		case fs.Failing > 0:
			return fs.Reason, fs.message()
		case bo.Active(now):
			return vtv1alpha1.ReasonBackingOff, bo.Message(now)
		case res.reuse.breaker.active(now):
			return vtv1alpha1.ReasonReuseCheckFailing, res.reuse.breaker.message(now)
		case act.caProblem != "":
			return vtv1alpha1.ReasonCABundleMissing, act.caProblem
		case len(act.credMissing()) > 0:
			return vtv1alpha1.ReasonCredentialsMissing, strings.Join(act.credMissing(), "; ")
		case fs.Serving < int(spec.MinReplicas):
			return vtv1alpha1.ReasonFloorNotMet, fmt.Sprintf("%d ready instances, minReplicas %d", fs.Serving, spec.MinReplicas)
		}
		msg := fmt.Sprintf("%d available, warm buffer %d%s", c.AvailableReplicas, spec.MinAvailableReplicas, boards)
		if w := act.targetWait(); w != "" {
			msg += "; " + w
		}
		return vtv1alpha1.ReasonWarmBufferNotMet, msg
	}
	switch {
	case res.blocked != nil:
		return cond(vtv1alpha1.ConditionAvailable, false, res.blocked.reason, "blocked: %s", res.blocked.message)
	case binding == vtv1alpha1.BindingWaitForFirstConsumer:
		if failing {
			reason, msg := why()
			return cond(vtv1alpha1.ConditionAvailable, false, reason, "%s", msg)
		}
		return cond(vtv1alpha1.ConditionAvailable, c.Replicas-c.LeasedReplicas >= buffer, vtv1alpha1.ReasonWaitForFirstConsumer,
			"%d instances wait for their first lease; Pods start when a lease waits%s", c.Replicas-c.LeasedReplicas, boards)
	case c.AvailableReplicas >= buffer && fs.Serving >= int(spec.MinReplicas) && !(c.AvailableReplicas == 0 && failing) && !res.external.holds():
		return cond(vtv1alpha1.ConditionAvailable, true, vtv1alpha1.ReasonWarmBufferMet,
			"%d available, warm buffer %d; %d ready, floor %d%s%s", c.AvailableReplicas, spec.MinAvailableReplicas, fs.Serving, spec.MinReplicas, restingSuffix(c.RestingReplicas), boards)
	}
	reason, msg := why()
	return cond(vtv1alpha1.ConditionAvailable, false, reason, "%s", msg)
}

// restingSuffix names the instances at rest in the Available message.
func restingSuffix(resting int32) string {
	if resting == 0 {
		return ""
	}
	return fmt.Sprintf("; %d at rest without a Pod, started when a Lease waits", resting)
}

// condOf returns a condFunc for conditions of generation gen.
func condOf(gen int64) condFunc {
	return func(typ string, ok bool, reason vtv1alpha1.ConditionReason, format string, args ...any) metav1.Condition {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: status, Reason: string(reason), Message: fmt.Sprintf(format, args...), ObservedGeneration: gen}
	}
}

// condFunc builds a condition of the set's generation.
type condFunc func(typ string, ok bool, reason vtv1alpha1.ConditionReason, format string, args ...any) metav1.Condition

func durationOf(d *metav1.Duration) (out time.Duration) {
	if d != nil {
		out = d.Duration
	}
	return out
}

// bookingSuffix adds what the set prepares for bookings (bookings.go) to a message.
func bookingSuffix(pl *pool.Plan) string {
	if pl.BookingNote == "" {
		return ""
	}
	return ": " + pl.BookingNote
}
