package quantity

import v1 "k8s.io/api/core/v1"

// ListsEqual reports whether two resource lists hold the same resources in equal
// quantities (Cmp, so 1 and 1000m are equal; an empty list is a nil one), as
// apiequality.Semantic compares them, without its reflective call per quantity: the pod and
// node statuses compare lists at every sync and status update.
func ListsEqual(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}
