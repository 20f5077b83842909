package exporterset

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// coreRule is the Jumpstarter controller's rule a refused Lease meets, quoted in the
// LeasesWait condition and its warning.
const coreRule = "a Lease for its instances ends Unsatisfiable at once (the Jumpstarter controller ends a Lease that no enabled Exporter matches: NoAccess, or AllDisabled when every match is disabled)"

// leasesWaitCondition says whether a Lease for the set's instances waits for one or is
// refused (vtv1alpha1.ConditionLeasesWait). It is pure.
func leasesWaitCondition(cond condFunc, res passResult) metav1.Condition {
	c, pl := res.counts, res.plan
	enabled := c.Replicas - c.ExportersDisabled
	switch {
	case res.blocked != nil && enabled == 0:
		return cond(vtv1alpha1.ConditionLeasesWait, false, res.blocked.reason, "blocked (%s), and no enabled Exporter matches spec.selector: %s", res.blocked.message, coreRule)
	case res.blocked != nil:
		return cond(vtv1alpha1.ConditionLeasesWait, true, vtv1alpha1.ReasonEnabledExporter, "%d enabled Exporters match spec.selector; the set is blocked and creates nothing", enabled)
	case pl != nil && res.gov.ceiling != nil && *res.gov.ceiling <= 0:
		return cond(vtv1alpha1.ConditionLeasesWait, enabled > 0, vtv1alpha1.ReasonNoRoom, "CapacityBudget %s allows the set no instance (%d enabled Exporters left); once none is left, %s", res.gov.strictest, enabled, coreRule)
	case pl != nil && pl.LeasesRefused:
		return cond(vtv1alpha1.ConditionLeasesWait, false, vtv1alpha1.ReasonNoEnabledExporter, "no enabled Exporter of the set stays: every one is disabled (quarantined, retiring or disabled by a person) or being replaced, and the ceiling leaves no room for another beside them: %s", coreRule)
	}
	return cond(vtv1alpha1.ConditionLeasesWait, true, vtv1alpha1.ReasonEnabledExporter, "%s; a Lease for the set waits Pending until an instance serves it%s", enabledNote(enabled, c.RestingReplicas), boardPolicySuffix(res.boardPolicy))
}

// boardPolicySuffix adds to the LeasesWait message why leases may not go to the boards
// first (hardware_policy.go).
func boardPolicySuffix(note string) string {
	if note == "" {
		return ""
	}
	return "; boards first not assured: " + note
}

// enabledNote counts the enabled Exporters, and those at rest.
func enabledNote(enabled, resting int32) string {
	if resting == 0 {
		return fmt.Sprintf("%d enabled Exporters match spec.selector", enabled)
	}
	return fmt.Sprintf("%d enabled Exporters match spec.selector, %d of them at rest without a Pod (started when a Lease waits)", enabled, resting)
}
