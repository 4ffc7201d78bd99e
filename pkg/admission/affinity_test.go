package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestMatchesNode(t *testing.T) {
	node := map[string]string{"kubernetes.io/hostname": "n1", "zone": "a", "cores": "8"}
	req := func(terms ...v1.NodeSelectorTerm) *v1.Affinity {
		return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	expr := func(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
		return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	tests := []struct {
		name     string
		selector map[string]string
		affinity *v1.Affinity
		want     bool
	}{
		{"nothing asked", nil, nil, true},
		{"selector matches", map[string]string{"zone": "a"}, nil, true},
		{"selector does not", map[string]string{"zone": "b"}, nil, false},
		{"In", nil, req(expr("zone", v1.NodeSelectorOpIn, "a", "b")), true},
		{"NotIn", nil, req(expr("zone", v1.NodeSelectorOpNotIn, "a")), false},
		{"Exists", nil, req(expr("zone", v1.NodeSelectorOpExists)), true},
		{"DoesNotExist", nil, req(expr("gpu", v1.NodeSelectorOpDoesNotExist)), true},
		{"Gt", nil, req(expr("cores", v1.NodeSelectorOpGt, "4")), true},
		{"Lt", nil, req(expr("cores", v1.NodeSelectorOpLt, "4")), false},
		{"terms are ORed", nil, req(expr("zone", v1.NodeSelectorOpIn, "b"), expr("zone", v1.NodeSelectorOpIn, "a")), true},
		{"an empty term matches nothing", nil, req(v1.NodeSelectorTerm{}), false},
		{"metadata.name field", nil, req(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}}}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{NodeSelector: tt.selector, Affinity: tt.affinity}}
			if got := MatchesNode(pod, "n1", node); got != tt.want {
				t.Errorf("MatchesNode = %t, want %t", got, tt.want)
			}
		})
	}
}
