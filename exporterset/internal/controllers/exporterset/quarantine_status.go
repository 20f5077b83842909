package exporterset

import (
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// breakerThreshold is how many quarantines in a row open the circuit breaker.
const breakerThreshold = 3

// reuseCount is a set's quarantines in a row, kept in its failure record (failurememory.go):
// a passing check, or a change of the set or its class, resets it.
type reuseCount struct {
	inRow int
	at    time.Time // the last quarantine
	last  string    // which instance, why, in its exporter's words
}

func (c *reuseCount) add(now time.Time, what string) { c.inRow, c.at, c.last = c.inRow+1, now, what }

// breaker is the circuit breaker as the pass sees it: open from breakerThreshold
// quarantines in a row, the replacements held until the failure backoff's delay for the
// quarantines beyond the threshold has passed since the last one.
func (c reuseCount) breaker(base, limit time.Duration) reuseBreaker {
	b := reuseBreaker{inRow: c.inRow, last: c.last}
	if c.inRow >= breakerThreshold {
		b.until = c.at.Add(pool.BackoffDelay(c.inRow-breakerThreshold+1, base, limit))
	}
	return b
}

// reuseBreaker is the circuit breaker's state in a pass.
type reuseBreaker struct {
	inRow int
	last  string
	until time.Time // replacements wait until then; zero when closed
}

func (b reuseBreaker) open() bool                { return b.inRow >= breakerThreshold }
func (b reuseBreaker) active(now time.Time) bool { return b.open() && now.Before(b.until) }

func (b reuseBreaker) message(now time.Time) string {
	msg := fmt.Sprintf("%d instances in a row failed the check between two leases and were quarantined; last: %s", b.inRow, b.last)
	if b.active(now) {
		return msg + fmt.Sprintf("; replacements back off until %s", b.until.UTC().Format(time.RFC3339))
	}
	return msg + "; replacements are tried, and the next that serves a lease and comes back Available clears this"
}

// reuseResult is what the conditions say of the quarantine.
type reuseResult struct {
	breaker  reuseBreaker
	kept     []string        // the quarantined instances kept, each with its mark
	problems []policyProblem // reuse-policy annotations that could not be read
}

// reuseResultOf sums up the quarantine step and plan for the conditions.
func reuseResultOf(breaker reuseBreaker, problems []policyProblem, obs *observation, qp pool.QuarantinePlan) reuseResult {
	gone := map[string]bool{}
	for _, in := range qp.Remove {
		gone[in.Name()] = true
	}
	res := reuseResult{breaker: breaker, problems: problems}
	for _, in := range obs.Instances {
		if in.Quarantined() && !in.Deleting() && !gone[in.Name()] {
			res.kept = append(res.kept, fmt.Sprintf("%s (%s)", in.Name(), in.Exporter.Annotations[pool.AnnotationQuarantined]))
		}
	}
	return res
}

// keptListLimit bounds how many quarantined instances a condition names.
const keptListLimit = 5

// withReuseNotes adds to the Degraded condition which instances are quarantined and which
// policy annotations are ignored, so that kubectl describe shows them.
func withReuseNotes(c metav1.Condition, rr reuseResult) metav1.Condition {
	if n := len(rr.kept); n > 0 {
		names := rr.kept[:min(n, keptListLimit)]
		more := ""
		if n > keptListLimit {
			more = fmt.Sprintf(" and %d more", n-keptListLimit)
		}
		c.Message += fmt.Sprintf("; %d quarantined for inspection: %s%s", n, strings.Join(names, ", "), more)
	}
	if note := policyNote(rr.problems); note != "" {
		c.Message += "; " + note
	}
	return c
}

// backoffMessage says why creates are held: the failure backoff's message, or the
// breaker's when it holds them longer.
func backoffMessage(res passResult, now time.Time) string {
	if b := res.reuse.breaker; b.active(now) && (!res.health.backoff.Active(now) || b.until.After(res.health.backoff.Until)) {
		return b.message(now)
	}
	return res.health.backoff.Message(now)
}

// policyNote is the conditions' note of the reuse-policy annotations that could not be read.
func policyNote(problems []policyProblem) string {
	if len(problems) == 0 {
		return ""
	}
	parts := make([]string, len(problems))
	for i, pp := range problems {
		parts[i] = pp.String()
	}
	return "ignored, defaults used: " + strings.Join(parts, "; ")
}

// surfacePolicyProblems records a Warning event for unreadable reuse-policy annotations
// when the set's Degraded condition does not say so yet (so once, not per pass, and not
// again after a restart); the condition's note follows from withReuseNotes.
func (r *Reconciler) surfacePolicyProblems(p *pass, problems []policyProblem) {
	note := policyNote(problems)
	if note == "" {
		return
	}
	last := r.ownWrites().latest(p.set.DeepCopy()) // the cache may not show our last write yet
	if c := apimeta.FindStatusCondition(last.Status.Conditions, vtv1alpha1.ConditionDegraded); c != nil && strings.Contains(c.Message, note) {
		return
	}
	r.warning(p.set, nil, eventlog.InvalidAnnotation, "Validate", "%s", note)
}
