package capacitybudget

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/budget"
)

// Reasons of a CapacityBudget's conditions.
const (
	reasonDemandWaiting = "DemandWaiting"     // Exhausted: a set with waiting or booked Leases gets less than it wants
	reasonBuffersShort  = "BuffersShort"      // Exhausted: only warm buffers are short
	reasonWithinBudget  = "WithinBudget"      // not Exhausted
	reasonFloorsExceed  = "FloorsExceedLimit" // Overcommitted
	reasonFloorsFit     = "FloorsFit"         // not Overcommitted
	eventExhausted      = "Exhausted"
	eventReclaiming     = "Reclaiming"
	eventOvercommitted  = "Overcommitted"
)

// Status is the status a budget's pass writes (pure): usage, each set's counts and
// Allowed, the reservations still needed, and the two conditions.
func Status(cb *vtv1alpha1.CapacityBudget, in budget.Input, a budget.Allocation, reservations []vtv1alpha1.BudgetReservation, now time.Time) vtv1alpha1.CapacityBudgetStatus {
	st := vtv1alpha1.CapacityBudgetStatus{
		ObservedGeneration: cb.Generation,
		Used:               vtv1alpha1.BudgetUsage{Instances: a.UsedInstances, Resources: limitedOnly(a.UsedResources, cb.Spec.Limits.Resources)},
		Reservations:       reservations,
		Conditions:         append([]metav1.Condition(nil), cb.Status.Conditions...),
	}
	for i, s := range in.Sets {
		g := a.Grants[i]
		st.Sets = append(st.Sets, vtv1alpha1.BudgetSetStatus{Name: s.Name, Instances: s.Instances, Leased: s.Leased, Waiting: s.Waiting, Wanted: s.Wanted, Allowed: g.Allowed})
	}
	cond := func(t string, ok bool, reason, format string, args ...any) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: fmt.Sprintf(format, args...), ObservedGeneration: cb.Generation, LastTransitionTime: metav1.NewTime(now)}
	}
	used := fmt.Sprintf("%d of %d instances used", a.UsedInstances, cb.Spec.Limits.Instances)
	switch {
	case !a.Exhausted:
		apimeta.SetStatusCondition(&st.Conditions, cond(vtv1alpha1.ConditionBudgetExhausted, false, reasonWithinBudget, "every governed set has what it wants (%s)", used))
	default:
		reason := reasonBuffersShort
		for i := range in.Sets {
			if a.Grants[i].Demand {
				reason = reasonDemandWaiting
			}
		}
		apimeta.SetStatusCondition(&st.Conditions, cond(vtv1alpha1.ConditionBudgetExhausted, true, reason, "%s; short: %s", used, shortList(in, a)))
	}
	var floors int32
	for _, s := range in.Sets {
		floors += s.Min
	}
	if a.Overcommitted {
		apimeta.SetStatusCondition(&st.Conditions, cond(vtv1alpha1.ConditionBudgetOvercommitted, true, reasonFloorsExceed, "the governed sets' minReplicas add up to %d instances (or their requests to more than limits.resources); limits.instances is %d: not every floor can be served", floors, cb.Spec.Limits.Instances))
	} else {
		apimeta.SetStatusCondition(&st.Conditions, cond(vtv1alpha1.ConditionBudgetOvercommitted, false, reasonFloorsFit, "the governed sets' minReplicas add up to %d instances, within the limits", floors))
	}
	return st
}

// shortList names the sets that want more than they are allowed, those with waiting Leases
// first, with what they wait for.
func shortList(in budget.Input, a budget.Allocation) string {
	byName := map[string]int{}
	for i, s := range in.Sets {
		byName[s.Name] = i
	}
	var parts []string
	for _, name := range a.Short {
		i, ok := byName[name]
		if !ok {
			continue
		}
		s, g := in.Sets[i], a.Grants[i]
		what := fmt.Sprintf("%s wants %d, allowed %d", s.Name, s.Wanted, g.Allowed-s.Leaving)
		if s.Waiting+s.BookedDue > 0 {
			what += fmt.Sprintf(" (%d waiting, %d booked Leases)", s.Waiting, s.BookedDue)
		}
		parts = append(parts, what)
	}
	return strings.Join(parts, "; ")
}

// limitedOnly keeps the resources limit names.
func limitedOnly(rl, limit corev1.ResourceList) corev1.ResourceList {
	if len(limit) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for k := range limit {
		if q, ok := rl[k]; ok {
			out[k] = q
		} else {
			out[k] = *resource.NewQuantity(0, resource.DecimalSI)
		}
	}
	return out
}

// statusEqual compares statuses, ignoring conditions' transition times.
func statusEqual(a, b vtv1alpha1.CapacityBudgetStatus) bool {
	strip := func(s vtv1alpha1.CapacityBudgetStatus) vtv1alpha1.CapacityBudgetStatus {
		c := s
		c.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i, x := range s.Conditions {
			x.LastTransitionTime = metav1.Time{}
			c.Conditions[i] = x
		}
		if len(c.Sets) == 0 {
			c.Sets = nil
		}
		if len(c.Reservations) == 0 {
			c.Reservations = nil
		}
		if len(c.Conditions) == 0 {
			c.Conditions = nil
		}
		return c
	}
	return apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

// events records what changed on the budget: it became exhausted or overcommitted, or
// it now asks a set to give up idle instances.
func (b *Reconciler) events(cb *vtv1alpha1.CapacityBudget, st vtv1alpha1.CapacityBudgetStatus, a budget.Allocation) {
	became := func(t string) *metav1.Condition {
		now := apimeta.FindStatusCondition(st.Conditions, t)
		old := apimeta.FindStatusCondition(cb.Status.Conditions, t)
		if now != nil && now.Status == metav1.ConditionTrue && (old == nil || old.Status != metav1.ConditionTrue || old.Reason != now.Reason) {
			return now
		}
		return nil
	}
	if c := became(vtv1alpha1.ConditionBudgetExhausted); c != nil {
		b.Recorder.Eventf(cb, nil, corev1.EventTypeNormal, eventExhausted, "Allocate", "%s", c.Message)
	}
	if c := became(vtv1alpha1.ConditionBudgetOvercommitted); c != nil {
		b.Recorder.Eventf(cb, nil, corev1.EventTypeWarning, eventOvercommitted, "Allocate", "%s", c.Message)
	}
	before := map[string]int32{}
	for _, s := range cb.Status.Sets {
		before[s.Name] = s.Allowed
	}
	for i, g := range a.Grants {
		if g.Reclaim == 0 {
			continue
		}
		if old, ok := before[g.Name]; ok && old <= st.Sets[i].Allowed {
			continue // asked before
		}
		b.Recorder.Eventf(cb, nil, corev1.EventTypeNormal, eventReclaiming, "Allocate", "set %s gives up %d idle instances for waiting Leases (%s)", g.Name, g.Reclaim, shortListOfDemand(st))
	}
}

// shortListOfDemand names the sets whose Leases wait.
func shortListOfDemand(st vtv1alpha1.CapacityBudgetStatus) string {
	var parts []string
	for _, s := range st.Sets {
		if s.Waiting > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d waiting", s.Name, s.Waiting))
		}
	}
	if len(parts) == 0 {
		return "booked Leases due"
	}
	return strings.Join(parts, ", ")
}

// reservedRequests is what the set's live reservations say one instance requests (nil
// without any).
func reservedRequests(live []vtv1alpha1.BudgetReservation, set string) corev1.ResourceList {
	for _, r := range live {
		if r.Set == set && r.Resources != nil {
			return r.Resources
		}
	}
	return nil
}
