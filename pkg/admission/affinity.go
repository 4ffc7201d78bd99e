package admission

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// MatchesNode reports whether the pod's nodeSelector and required node affinity admit a node
// with this name and these labels (upstream PodMatchesNodeSelectorAndAffinityTerms).
func MatchesNode(pod *v1.Pod, nodeName string, nodeLabels map[string]string) bool {
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(nodeLabels)) {
		return false
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	// The terms are ORed; an empty list matches nothing.
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termMatches(term, nodeName, nodeLabels) {
			return true
		}
	}
	return false
}

// termMatches: every expression and field of the term holds; an empty term matches nothing.
func termMatches(term v1.NodeSelectorTerm, nodeName string, nodeLabels map[string]string) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		v, has := nodeLabels[r.Key]
		if !requirementHolds(r, v, has) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if r.Key != "metadata.name" || !requirementHolds(r, nodeName, true) {
			return false
		}
	}
	return true
}

func requirementHolds(r v1.NodeSelectorRequirement, value string, has bool) bool {
	in := func() bool {
		for _, v := range r.Values {
			if v == value {
				return true
			}
		}
		return false
	}
	switch r.Operator {
	case v1.NodeSelectorOpIn:
		return has && in()
	case v1.NodeSelectorOpNotIn:
		return !has || !in()
	case v1.NodeSelectorOpExists:
		return has
	case v1.NodeSelectorOpDoesNotExist:
		return !has
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if !has || len(r.Values) != 1 {
			return false
		}
		got, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == v1.NodeSelectorOpGt {
			return got > want
		}
		return got < want
	}
	return false
}
