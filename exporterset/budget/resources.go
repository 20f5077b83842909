package budget

import corev1 "k8s.io/api/core/v1"

// Add returns a + b, per resource (a new list; nil when both are empty).
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(a)+len(b))
	for k, v := range a {
		out[k] = v.DeepCopy()
	}
	for k, v := range b {
		q := out[k]
		q.Add(v)
		out[k] = q
	}
	return out
}

// Fits reports whether used + add stays within limit for every resource limit names
// (resources it does not name are not limited).
func Fits(used, add, limit corev1.ResourceList) bool {
	for k, l := range limit {
		q := used[k].DeepCopy()
		q.Add(add[k])
		if q.Cmp(l) > 0 {
			return false
		}
	}
	return true
}
