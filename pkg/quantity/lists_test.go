package quantity

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestListsEqual: ListsEqual answers as apiequality.Semantic.DeepEqual does.
func TestListsEqual(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name string
		a, b v1.ResourceList
		want bool
	}{
		{"both nil", nil, nil, true},
		{"nil and empty", nil, v1.ResourceList{}, true},
		{"the same", v1.ResourceList{v1.ResourceCPU: q("1")}, v1.ResourceList{v1.ResourceCPU: q("1")}, true},
		{"written otherwise", v1.ResourceList{v1.ResourceCPU: q("1")}, v1.ResourceList{v1.ResourceCPU: q("1000m")}, true},
		{"another amount", v1.ResourceList{v1.ResourceMemory: q("1Gi")}, v1.ResourceList{v1.ResourceMemory: q("1G")}, false},
		{"another resource", v1.ResourceList{v1.ResourceCPU: q("1")}, v1.ResourceList{v1.ResourceMemory: q("1")}, false},
		{"one more", v1.ResourceList{v1.ResourceCPU: q("1")}, v1.ResourceList{v1.ResourceCPU: q("1"), v1.ResourcePods: q("110")}, false},
		{"none and some", nil, v1.ResourceList{v1.ResourceCPU: q("1")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if sem := apiequality.Semantic.DeepEqual(tt.a, tt.b); sem != tt.want {
				t.Fatalf("the case is wrong: Semantic says %v", sem)
			}
			if got, back := ListsEqual(tt.a, tt.b), ListsEqual(tt.b, tt.a); got != tt.want || back != tt.want {
				t.Errorf("ListsEqual = %v (%v the other way), want %v", got, back, tt.want)
			}
		})
	}
}
