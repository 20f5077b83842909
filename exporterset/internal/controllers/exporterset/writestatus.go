package exporterset

import (
	"context"
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
)

// writeStatus writes the status once, and only when it changed. It builds on the set as
// this reconciler last wrote it when the cache still shows the version before that write.
// The pass itself works from the cache: its instance sequence must not run ahead of the
// Exporters it sees, or a stale Exporter view would get fresh names, not AlreadyExists.
func (r *Reconciler) writeStatus(ctx context.Context, p *pass, res passResult) error {
	orig := r.ownWrites().latest(p.set.DeepCopy())
	st := res.counts.Status()
	st.Selector = p.selector.String()
	st.ObservedGeneration = p.set.Generation
	st.InstanceSequence = max(res.act.seq, orig.Status.InstanceSequence)
	st.SurplusSince = p.set.Status.SurplusSince
	if res.plan != nil {
		st.SurplusSince = nil
		if res.plan.SurplusSince != nil {
			t := metav1.NewTime(*res.plan.SurplusSince)
			st.SurplusSince = &t
		}
	}
	st.Conditions = append([]metav1.Condition(nil), orig.Status.Conditions...)
	for _, c := range conditions(p.set, p.binding(), p.now, res) {
		if reason, action, byReason := problemEvent(res.blocked != nil, c); reason != "" {
			// One event per new problem, not one per reconcile. A failure's message moves
			// with its counts and backoff clock: only a new reason is a new problem.
			old := apimeta.FindStatusCondition(orig.Status.Conditions, c.Type)
			if old == nil || old.Reason != c.Reason || !byReason && old.Message != c.Message {
				r.warning(p.set, nil, reason, action, "%s", c.Message)
			}
		}
		if c.Type == vtv1alpha1.ConditionLeasesWait && res.boardPolicy != "" {
			// Once when the note appears, not on every pass that still shows it.
			if old := apimeta.FindStatusCondition(orig.Status.Conditions, c.Type); old == nil || !strings.Contains(old.Message, res.boardPolicy) {
				r.warning(p.set, nil, eventlog.BoardsNotPreferred, "Observe", "%s", res.boardPolicy)
			}
		}
		apimeta.SetStatusCondition(&st.Conditions, c)
	}
	r.Metrics.ObserveConditions(p.set.Namespace, p.set.Name, st.Conditions)
	if statusEqual(orig.Status, st) || r.pruned.unchangedAsStored(p.set, orig.Status, st) {
		return nil
	}
	p.set.ResourceVersion = orig.ResourceVersion
	p.set.Status = st
	// An update, not a merge patch: a patch would leave out counters equal to the cached
	// zero values, which the schema requires on the first write. The resourceVersion makes
	// it optimistic: a newer set (or a stale cache) fails it, and the next pass redoes it.
	if err := r.client.Status().Update(ctx, p.set); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("status changed while reconciling, will retry: %w", err)
		}
		return fmt.Errorf("writing status: %w", err)
	}
	r.pruned.noteWrite(p.set, st)
	r.ownWrites().wrote(orig.ResourceVersion, p.set)
	return nil
}

// problemEvent is the event (reason and action) a Degraded condition gets when it is new:
// the set is blocked, it waits for something a person must provide, or its instances fail
// (the event's reason is then the condition's, e.g. ImagePullFailed; byReason says only a
// change of reason is new). Other problems (failed creates) record their own events.
func problemEvent(blocked bool, c metav1.Condition) (reason eventlog.Reason, action string, byReason bool) {
	if c.Type == vtv1alpha1.ConditionLeasesWait && c.Status == metav1.ConditionFalse {
		return eventlog.LeasesRefused, "Reconcile", true // the condition quotes the core's rule
	}
	if c.Type != vtv1alpha1.ConditionDegraded {
		return "", "", false
	}
	switch cr := vtv1alpha1.ConditionReason(c.Reason); {
	case blocked && cr == vtv1alpha1.ReasonProvisionerError:
		return eventlog.ProvisionerError, "Reconcile", false
	case blocked:
		return eventlog.InvalidSpec, "Reconcile", false
	case cr == vtv1alpha1.ReasonCABundleMissing || cr == vtv1alpha1.ReasonCredentialsMissing:
		return eventlog.Waiting, "Configure", false
	case isFailureReason(cr) || cr == vtv1alpha1.ReasonRemoteUnreachable:
		return eventlog.Reason(cr), "Observe", true
	}
	return "", "", false
}

func statusEqual(a, b vtv1alpha1.ExporterSetStatus) bool { return apiequality.Semantic.DeepEqual(a, b) }
