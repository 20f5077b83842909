package exporterset

import (
	"fmt"
	"sort"
	"strings"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// failureOrder ranks failure reasons when as many instances share each: the one a person
// fixes first (an image or a node), then what follows from it.
var failureOrder = map[vtv1alpha1.ConditionReason]int{
	vtv1alpha1.ReasonImagePullFailed:         0,
	vtv1alpha1.ReasonUnschedulable:           1,
	vtv1alpha1.ReasonContainerCreateFailed:   2,
	vtv1alpha1.ReasonTargetCrashing:          3,
	vtv1alpha1.ReasonNotRegistering:          4,
	vtv1alpha1.ReasonEvicted:                 5,
	vtv1alpha1.ReasonNodeLost:                6,
	vtv1alpha1.ReasonStartupDeadlineExceeded: 7,
	vtv1alpha1.ReasonExternalTargetFailed:    8,
}

// failureSummary is the pool's failures as the conditions report them: the most common
// reason, one instance that shows it, and how many more share it.
type failureSummary struct {
	// Reason is the most common failure reason; "" when no instance fails.
	Reason vtv1alpha1.ConditionReason
	// Example is an instance with that reason, Problem its problem.
	Example string
	Problem *pool.Problem
	// Count is how many instances fail with Reason, Failing how many fail at all, Total
	// how many instances the pool has (not counting those being retired or deleted).
	Count, Failing, Total int
	// Others counts the instances per other reason.
	Others map[vtv1alpha1.ConditionReason]int
	// Serving counts the instances that are ready and not failing, leased or not: what
	// serves the floor.
	Serving int
}

// summarizeFailures groups the instances' problems. It is pure.
func summarizeFailures(instances []*pool.Instance, problems pool.Problems) failureSummary {
	var s failureSummary
	by := map[vtv1alpha1.ConditionReason][]*pool.Instance{}
	for _, in := range instances {
		if objects.OutOfPool(in) {
			continue // on their way out, or kept for inspection: not part of the pool any more
		}
		s.Total++
		if in.Ready() && problems.Of(in) == nil {
			s.Serving++
		}
		if pr := problems.Of(in); pr != nil {
			by[pr.Reason] = append(by[pr.Reason], in)
			s.Failing++
		}
	}
	if s.Failing == 0 {
		return s
	}
	reasons := make([]vtv1alpha1.ConditionReason, 0, len(by))
	for r := range by {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(a, b int) bool {
		x, y := reasons[a], reasons[b]
		if len(by[x]) != len(by[y]) {
			return len(by[x]) > len(by[y])
		}
		return failureOrder[x] < failureOrder[y]
	})
	top := by[reasons[0]]
	s.Reason, s.Count = reasons[0], len(top)
	s.Example, s.Problem = top[0].Name(), problems.Of(top[0])
	for _, r := range reasons[1:] {
		if s.Others == nil {
			s.Others = map[vtv1alpha1.ConditionReason]int{}
		}
		s.Others[r] = len(by[r])
	}
	return s
}

// message is the Degraded text: which instance, container and image, the kubelet's or
// scheduler's own words, and how many instances share the problem.
func (s failureSummary) message() string {
	if s.Reason == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d instances %s; e.g. instance %s", s.Count, s.Total, failureVerb(s.Reason), s.Example)
	if s.Problem.Container != "" {
		fmt.Fprintf(&b, ", container %s", s.Problem.Container)
	}
	if s.Problem.Image != "" {
		fmt.Fprintf(&b, ", image %q", s.Problem.Image)
	}
	fmt.Fprintf(&b, ": %s", s.Problem.Message)
	if len(s.Others) > 0 {
		others := make([]string, 0, len(s.Others))
		for r, n := range s.Others {
			others = append(others, fmt.Sprintf("%d %s", n, r))
		}
		sort.Strings(others)
		fmt.Fprintf(&b, " (also: %s)", strings.Join(others, ", "))
	}
	return b.String()
}

func failureVerb(reason vtv1alpha1.ConditionReason) string {
	switch reason {
	case vtv1alpha1.ReasonImagePullFailed:
		return "cannot pull an image"
	case vtv1alpha1.ReasonTargetCrashing:
		return "have a crashing container"
	case vtv1alpha1.ReasonUnschedulable:
		return "cannot be scheduled"
	case vtv1alpha1.ReasonContainerCreateFailed:
		return "cannot create a container"
	case vtv1alpha1.ReasonNotRegistering:
		return "run but do not register with Jumpstarter"
	case vtv1alpha1.ReasonEvicted:
		return "were evicted"
	case vtv1alpha1.ReasonNodeLost:
		return "lost their node"
	case vtv1alpha1.ReasonExternalTargetFailed:
		return "have a failed external target"
	case vtv1alpha1.ReasonReuseCheckFailing:
		return "failed their check between leases"
	case vtv1alpha1.ReasonStartupDeadlineExceeded:
		return "missed their startup deadline"
	default:
		return "fail (" + string(reason) + ")"
	}
}
