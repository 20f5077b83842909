package jumpsim

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// The scheduler's node filters other than resources: taints and tolerations (as the
// TaintToleration plugin), nodeSelector and required node affinity (as NodeAffinity).

// tolerates reports whether tolerations cover every NoSchedule and NoExecute taint.
func tolerates(tolerations []corev1.Toleration, taints []corev1.Taint) bool {
	for _, t := range taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		ok := false
		for _, tol := range tolerations {
			if toleratesTaint(tol, t) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func toleratesTaint(tol corev1.Toleration, t corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpEqual, "":
		return tol.Key != "" && tol.Value == t.Value
	}
	return false
}

// matchesNode reports whether the node's labels (and name) satisfy the Pod's nodeSelector
// and its required node affinity.
func matchesNode(pod *corev1.Pod, labels map[string]string, name string) bool {
	for k, v := range pod.Spec.NodeSelector {
		if have, ok := labels[k]; !ok || have != v {
			return false
		}
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue // an empty term matches nothing
		}
		if matchesTerm(term, labels, name) {
			return true
		}
	}
	return false
}

func matchesTerm(term corev1.NodeSelectorTerm, labels map[string]string, name string) bool {
	for _, r := range term.MatchExpressions {
		v, ok := labels[r.Key]
		if !matchesRequirement(r, v, ok) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if r.Key != "metadata.name" || !matchesRequirement(r, name, true) {
			return false
		}
	}
	return true
}

func matchesRequirement(r corev1.NodeSelectorRequirement, value string, present bool) bool {
	in := func() bool {
		for _, v := range r.Values {
			if v == value {
				return true
			}
		}
		return false
	}
	compare := func(less bool) bool {
		if !present || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if less {
			return have < want
		}
		return have > want
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return present && in()
	case corev1.NodeSelectorOpNotIn:
		return !present || !in()
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt:
		return compare(false)
	case corev1.NodeSelectorOpLt:
		return compare(true)
	}
	return false
}
