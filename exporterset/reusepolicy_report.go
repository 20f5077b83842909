package exporterset

import (
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// policyNote surfaces the reuse policy's unreadable annotations (reusePolicyOf): it returns
// the text the Degraded condition's message ends with ("" for none) and records a Warning
// event when that text is not in the set's condition yet, so a typo is said once, not on
// every pass.
func (r *Reconciler) policyNote(p *pass, problems []policyProblem) string {
	if len(problems) == 0 {
		return ""
	}
	parts := make([]string, len(problems))
	for i, pp := range problems {
		parts[i] = pp.String()
	}
	note := "ignored (default kept): " + strings.Join(parts, "; ")
	if c := apimeta.FindStatusCondition(p.set.Status.Conditions, vtv1alpha1.ConditionDegraded); c == nil || !strings.Contains(c.Message, note) {
		r.warning(p.set, nil, eventInvalidAnnotation, "Reconcile", "%s", note)
	}
	return note
}
