package exporterset

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// conditions derives the four conditions from what the pass saw and did.
func (r *Reconciler) conditions(p *pass) []metav1.Condition {
	gen := p.set.Generation
	var cond condFunc = func(typ string, ok bool, reason, format string, args ...any) metav1.Condition {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...), ObservedGeneration: gen}
	}
	c, spec := p.counts, p.set.Spec
	out := make([]metav1.Condition, 0, 4)

	fs, bo := p.failures, p.backoff
	failing := fs.Failing > 0 || bo.active(p.now)
	out = append(out, availableCondition(p, cond, failing))

	switch b := p.blocked; {
	case b != nil:
		out = append(out, cond(vtv1alpha1.ConditionDegraded, true, b.reason, "%s", b.message))
	case p.caProblem != "":
		out = append(out, cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonCABundleMissing, "%s", p.caProblem))
	case len(p.credMissing) > 0:
		out = append(out, cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonCredentialsMissing, "%s", strings.Join(p.credMissing, "; ")))
	case p.createErr != nil:
		out = append(out, cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonProvisionerError, "creating instances: %v", p.createErr))
	case p.podErr != nil:
		out = append(out, cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonProvisionerError, "starting pods: %v", p.podErr))
	case fs.Failing > 0:
		out = append(out, cond(vtv1alpha1.ConditionDegraded, true, fs.Reason, "%s%s", fs.message(), bo.suffix(p.now)))
	case bo.active(p.now):
		out = append(out, cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonBackingOff, "%s", bo.message(p.now)))
	case c.PodsFailed > 0:
		out = append(out, cond(vtv1alpha1.ConditionDegraded, true, vtv1alpha1.ReasonPodsFailing, "%d instance pods failed; they are being replaced", c.PodsFailed))
	default:
		out = append(out, cond(vtv1alpha1.ConditionDegraded, false, vtv1alpha1.ReasonAsExpected, "no problems"))
	}

	pl := p.plan
	switch {
	case p.blocked != nil:
		out = append(out, cond(vtv1alpha1.ConditionProgressing, false, p.blocked.reason, "blocked: %s", p.blocked.message))
	case pl.BackingOff:
		out = append(out, cond(vtv1alpha1.ConditionProgressing, false, vtv1alpha1.ReasonBackingOff, "%s", bo.message(p.now)))
	case pl.Outdated > 0:
		out = append(out, cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonRollingInstances,
			"rolling to the new spec: %d idle instances of an older spec left, each retired once a new one is available in its place; creating %d", pl.Outdated, pl.Create))
	case pl.Create > 0:
		out = append(out, cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonCreatingInstances, "creating %d instances (want %d)", pl.Create, pl.Wanted))
	case len(pl.Retire) > 0 || len(pl.Remove) > 0:
		out = append(out, cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonRetiringInstances, "retiring %d, removing %d instances", len(pl.Retire), len(pl.Remove)))
	case p.waitingCreds > 0:
		out = append(out, cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonWaitingForCredentials, "%d instances wait for the Jumpstarter controller's credential and endpoint", p.waitingCreds))
	case c.UnavailableReplicas > 0:
		out = append(out, cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonWaitingForInstances, "%d instances are not ready yet", c.UnavailableReplicas))
	case pl.SurplusSince != nil:
		out = append(out, cond(vtv1alpha1.ConditionProgressing, true, vtv1alpha1.ReasonScaleDownCoolingDown, "surplus instances are retired at %s (scaleDownCooldown)", pl.SurplusSince.Add(durationOf(spec.ScaleDownCooldown)).UTC().Format("15:04:05Z")))
	default:
		out = append(out, cond(vtv1alpha1.ConditionProgressing, false, vtv1alpha1.ReasonAsExpected, "pool is at its desired size"))
	}

	switch {
	case pl == nil:
		// Nothing was planned: keep what ScalingLimited said before.
	case pl.Limited:
		out = append(out, cond(vtv1alpha1.ConditionScalingLimited, true, vtv1alpha1.ReasonAtMaxReplicas, "wants %d instances, maxReplicas is %d", pl.Wanted, *spec.MaxReplicas))
	default:
		out = append(out, cond(vtv1alpha1.ConditionScalingLimited, false, vtv1alpha1.ReasonWithinLimits, "wants %d instances", pl.Wanted))
	}
	return out
}

// availableCondition applies the rule documented on vtv1alpha1.ConditionAvailable.
func availableCondition(p *pass, cond condFunc, failing bool) metav1.Condition {
	c, spec, fs := p.counts, p.set.Spec, p.failures
	why := func() (string, string) { // the most specific cause of False
		switch {
		case fs.Failing > 0:
			return fs.Reason, fs.message()
		case p.backoff.active(p.now):
			return vtv1alpha1.ReasonBackingOff, p.backoff.message(p.now)
		case p.caProblem != "":
			return vtv1alpha1.ReasonCABundleMissing, p.caProblem
		case len(p.credMissing) > 0:
			return vtv1alpha1.ReasonCredentialsMissing, strings.Join(p.credMissing, "; ")
		case fs.Serving < int(spec.MinReplicas):
			return vtv1alpha1.ReasonFloorNotMet, fmt.Sprintf("%d ready instances, minReplicas %d", fs.Serving, spec.MinReplicas)
		}
		return vtv1alpha1.ReasonWarmBufferNotMet, fmt.Sprintf("%d available, warm buffer %d", c.AvailableReplicas, spec.MinAvailableReplicas)
	}
	switch {
	case p.blocked != nil:
		return cond(vtv1alpha1.ConditionAvailable, false, p.blocked.reason, "blocked: %s", p.blocked.message)
	case p.class != nil && p.class.Spec.BindingMode == vtv1alpha1.BindingWaitForFirstConsumer:
		if failing {
			reason, msg := why()
			return cond(vtv1alpha1.ConditionAvailable, false, reason, "%s", msg)
		}
		return cond(vtv1alpha1.ConditionAvailable, c.Replicas-c.LeasedReplicas >= spec.MinAvailableReplicas, vtv1alpha1.ReasonWaitForFirstConsumer,
			"%d instances wait for their first lease; Pods start when a lease waits", c.Replicas-c.LeasedReplicas)
	case c.AvailableReplicas >= spec.MinAvailableReplicas && fs.Serving >= int(spec.MinReplicas) && !(c.AvailableReplicas == 0 && failing):
		return cond(vtv1alpha1.ConditionAvailable, true, vtv1alpha1.ReasonWarmBufferMet,
			"%d available, warm buffer %d; %d ready, floor %d", c.AvailableReplicas, spec.MinAvailableReplicas, fs.Serving, spec.MinReplicas)
	}
	reason, msg := why()
	return cond(vtv1alpha1.ConditionAvailable, false, reason, "%s", msg)
}

// condFunc builds a condition of the set's generation.
type condFunc func(typ string, ok bool, reason, format string, args ...any) metav1.Condition

func durationOf(d *metav1.Duration) (out time.Duration) {
	if d != nil {
		out = d.Duration
	}
	return out
}
