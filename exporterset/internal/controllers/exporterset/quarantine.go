package exporterset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// Quarantine (issue 31). An instance that fails the check between two leases leaves service
// at once and is kept for inspection: its exporter reports a failed lease hook
// (AfterLeaseHookFailed, BeforeLeaseHookFailed: transient under onFailure endLease, so the
// watch notes it as it comes, quarantine_watch.go), or, under InPlaceReuse, its exporter or
// runtime exits with an error after a lease (which was restarted before). The set disables
// it and marks it in one optimistic-locked patch, before it plans: the plan then counts it
// against maxReplicas and not towards the buffer, and a replacement is created in the same
// pass. pool.PlanQuarantine decides when a quarantined instance goes. Three quarantines in a
// row open a circuit breaker (quarantine_status.go): Degraded ReuseCheckFailing, and the
// replacements back off.

// reasonExitedAfterLease is the quarantine reason of an exporter (or its runtime) that
// exited with an error after a lease.
const reasonExitedAfterLease = "ExitedAfterLease"

// quarantineGrace is how long after being disabled a quarantined instance may be removed
// (retireGraceLeft's: the annotation's whole second plus retireGrace).
const quarantineGrace = time.Second + retireGrace

// quarantineCase is an instance found failing its check, to be quarantined.
type quarantineCase struct {
	in      *pool.Instance // as observed: the patch's base
	reason  string         // the exporterStatus reported, or reasonExitedAfterLease
	message string         // the exporter's own status message, or the container's exit
}

// quarantine is the pass's step after observe: it finds the instances that failed their
// check, quarantines them (under the pass's reuse policy), and notes the checks that passed.
// It returns the circuit breaker's state, and obs with the quarantined instances as patched
// (a copy; obs is not changed).
func (r *Reconciler) quarantine(ctx context.Context, p *pass, obs *observation) (reuseBreaker, *observation, error) {
	key := keyOf(p.set)
	s := r.memory.failures.SetOrPut(key, func() *setFailures { return &setFailures{} })
	var cases []quarantineCase
	for _, in := range obs.Instances {
		if in.Quarantined() {
			// A sighting noted after the pass that quarantined it must not quarantine it
			// again once a person has taken it back into service.
			r.memory.sightings.DropInstance(key, in.Exporter.UID)
		}
		if objects.OutOfPool(in) || in.Foreign() {
			continue
		}
		f := r.memory.instFailures.InstanceOrPut(key, in.Exporter.UID, func() *instanceFailures { return &instanceFailures{} })
		if c, ok := r.failedCheck(p, in, f); ok {
			cases = append(cases, c)
			continue
		}
		if f.checking && checkPassed(p.set.Spec.RecycleStrategy, in) {
			f.checking = false
			s.reuse = reuseCount{} // the check works: the breaker closes
		}
		if in.Leased() {
			f.checking = true
			f.leasedOn = in.Exporter.UID // served a lease, with no Pod seen
			if pod := currentPod(in); pod != nil {
				f.leasedOn = pod.UID
			}
		}
	}
	patched := map[string]*pool.Instance{}
	disabled := map[types.UID]bool{}
	var err error
	for _, c := range cases {
		if lastPlace(obs, c.in, disabled) {
			f, _ := r.memory.instFailures.ForInstance(key, c.in.Exporter.UID)
			r.renewInstead(p, c, f)
			s.reuse.add(p.now, fmt.Sprintf("instance %s: %s: %s", c.in.Name(), c.reason, c.message))
			continue
		}
		disabled[c.in.Exporter.UID] = true
		e, perr := r.quarantineOne(ctx, p, c)
		if perr != nil {
			err = perr
			continue
		}
		if e == nil {
			continue // it changed since the pass looked: decided again soon
		}
		s.reuse.add(p.now, fmt.Sprintf("instance %s: %s: %s", c.in.Name(), c.reason, c.message))
		r.Metrics.CountQuarantined(p.set.Namespace, p.set.Name, c.reason)
		patched[e.Name] = &pool.Instance{Exporter: e, Pods: c.in.Pods, ConfigSecret: c.in.ConfigSecret, Credential: c.in.Credential}
	}
	return s.reuse.breaker(r.BackoffBase, r.BackoffCap), obs.replacing(patched), err
}

// failedCheck reports whether in failed its check: a failed lease hook reported now or seen
// on the watch, or (InPlaceReuse) its current Pod, which has served a lease, has a
// container that exited with an error while it is unleased: the reuse left it broken. (A
// crash during a lease restarts the Pod for the lease holder, as before; a controller
// restarted since the lease treats the exit as a crash too.)
func (r *Reconciler) failedCheck(p *pass, in *pool.Instance, f *instanceFailures) (quarantineCase, bool) {
	if f.renewing && in.HookFailed() {
		return quarantineCase{}, false // renewed for it: the status is the old exporter's (quarantine_lastplace.go)
	}
	f.renewing = false
	if in.HookFailed() {
		st := in.Exporter.Status
		return quarantineCase{in: in, reason: string(st.ExporterStatusValue), message: st.StatusMessage}, true
	}
	if s, ok := r.memory.sightings.ForInstance(keyOf(p.set), in.Exporter.UID); ok {
		return quarantineCase{in: in, reason: string(s.value), message: s.message}, true
	}
	if p.set.Spec.RecycleStrategy != vtv1alpha1.RecycleInPlaceReuse || in.Leased() || f.leasedOn == "" {
		return quarantineCase{}, false
	}
	pod := currentPod(in)
	if pod == nil || pod.UID != f.leasedOn {
		return quarantineCase{}, false
	}
	if _, marked := in.Exporter.Annotations[pool.AnnotationQuarantined]; marked && !pod.CreationTimestamp.After(in.QuarantinedAt()) {
		// Quarantined while this Pod ran (for its exit, or for the hook failure the exit
		// follows), and a person enabled it again: theirs is the last word, and the Pod is
		// handled as any failed one. A fresh Pod is checked again.
		return quarantineCase{}, false
	}
	if pr := podProblem(pod, p.now); pr != nil && pr.Reason == vtv1alpha1.ReasonTargetCrashing {
		msg := pr.Message
		if pr.Container != "" {
			msg = fmt.Sprintf("container %s of Pod %s: %s", pr.Container, pod.Name, msg)
		}
		return quarantineCase{in: in, reason: reasonExitedAfterLease, message: msg}, true
	}
	return quarantineCase{}, false
}

// checkPassed reports whether an instance seen leased came back from its lease well:
// Available again and unleased (InPlaceReuse), or, under ExitAndReplace, its exporter
// exited cleanly after it.
func checkPassed(recycle vtv1alpha1.RecycleStrategy, in *pool.Instance) bool {
	if in.Leased() {
		return false
	}
	if recycle != vtv1alpha1.RecycleInPlaceReuse {
		pod := currentPod(in)
		return pod != nil && pod.Status.Phase == corev1.PodSucceeded
	}
	return in.Ready() && in.Enabled() && in.Exporter.Status.ExporterStatusValue == jumpstarterv1alpha1.ExporterStatusAvailable
}

// quarantineOne disables in and marks it quarantined in one patch, optimistic on the
// resourceVersion the pass saw; it returns the Exporter as patched, nil when the patch lost
// a race (the next pass decides again) or the Exporter is gone.
func (r *Reconciler) quarantineOne(ctx context.Context, p *pass, c quarantineCase) (*jumpstarterv1alpha1.Exporter, error) {
	e := c.in.Exporter
	var patched *jumpstarterv1alpha1.Exporter
	for try := 0; ; try++ {
		patched = e.DeepCopy()
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[pool.AnnotationQuarantined] = pool.QuarantineMark(c.reason, p.now)
		patched.Spec.Enabled = ptr.To(false)
		err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(e, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			break
		}
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("quarantining %s: %w", e.Name, err)
		}
		// Most likely the exporter's own status moved on (it reports Available again a
		// second after a failed hook): once more on a fresh read, which still shows
		// whether anyone quarantined, retired or re-created it meanwhile.
		var fresh jumpstarterv1alpha1.Exporter
		if try > 0 || r.apiReader.Get(ctx, client.ObjectKeyFromObject(e), &fresh) != nil || fresh.UID != e.UID ||
			(&pool.Instance{Exporter: &fresh}).Quarantined() || (&pool.Instance{Exporter: &fresh}).Retiring() || fresh.DeletionTimestamp != nil {
			p.requeueIn(100 * time.Millisecond)
			return nil, nil
		}
		e = &fresh
	}
	r.memory.sightings.DropInstance(keyOf(p.set), e.UID)
	pol := p.policy
	keep := fmt.Sprintf("kept for inspection until %s (quarantine-ttl %s, at most %d kept)", p.now.Add(pol.quarantineTTL).UTC().Format(time.RFC3339), pol.quarantineTTL, pol.maxQuarantined)
	if pol.maxQuarantined == 0 {
		keep = "removed shortly (max-quarantined 0)"
	}
	r.warning(p.set, patched, eventlog.InstanceQuarantined, "Quarantine", "quarantined instance %s: %s: %q; disabled, %s", e.Name, c.reason, c.message, keep)
	return patched, nil
}

// planQuarantine decides which quarantined instances go now (pool.PlanQuarantine) and
// records how many are kept; withQuarantine hands its decision to the plan.
func (r *Reconciler) planQuarantine(p *pass, in pool.PlanInput) pool.QuarantinePlan {
	qp := pool.PlanQuarantine(pool.QuarantineInput{Scale: in, TTL: p.policy.quarantineTTL, MaxKept: p.policy.maxQuarantined, Grace: quarantineGrace})
	p.requeueIn(qp.RequeueAfter)
	r.Metrics.ObserveQuarantined(p.set.Namespace, p.set.Name, int(qp.Kept))
	return qp
}

// withQuarantine is in with the quarantine's decisions: the quarantined instances removed
// now, and the circuit breaker's pause (reuseBreaker) as a backoff. in is a copy.
func withQuarantine(in pool.PlanInput, qp pool.QuarantinePlan, breaker reuseBreaker) pool.PlanInput {
	in.RemoveQuarantined = qp.Remove
	if breaker.until.After(in.BackoffUntil) {
		in.BackoffUntil = breaker.until
	}
	return in
}
