package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestTmpfsSize: a memory-backed emptyDir is as large as upstream's
// calculateEmptyDirMemorySize makes it.
func TestTmpfsSize(t *testing.T) {
	const allocatable = 8 << 30
	mem := func(limit string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(limit)}}
	}
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	always := ptr.To(v1.ContainerRestartPolicyAlways)
	tests := []struct {
		name      string
		spec      v1.PodSpec
		sizeLimit *resource.Quantity
		want      int64
	}{
		{"no limits: the node's allocatable", v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, nil, allocatable},
		{"sizeLimit below allocatable", v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, q("10Mi"), 10 << 20},
		{"sizeLimit above allocatable is ignored", v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, q("16Gi"), allocatable},
		{"the pod's limit", v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: mem("64Mi")}, {Name: "b", Resources: mem("64Mi")}}}, nil, 128 << 20},
		{"one container without a limit: none", v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: mem("64Mi")}, {Name: "b"}}}, nil, allocatable},
		{"sizeLimit below the pod's limit", v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: mem("64Mi")}}}, q("10Mi"), 10 << 20},
		{"sizeLimit above the pod's limit", v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: mem("64Mi")}}}, q("1Gi"), 64 << 20},
		{"an init container larger than the app", v1.PodSpec{InitContainers: []v1.Container{{Name: "i", Resources: mem("256Mi")}}, Containers: []v1.Container{{Name: "a", Resources: mem("64Mi")}}}, nil, 256 << 20},
		{"a sidecar adds to the app", v1.PodSpec{InitContainers: []v1.Container{{Name: "s", RestartPolicy: always, Resources: mem("32Mi")}}, Containers: []v1.Container{{Name: "a", Resources: mem("64Mi")}}}, nil, 96 << 20},
		{"the pod-level limit", v1.PodSpec{Resources: &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("200Mi")}}, Containers: []v1.Container{{Name: "a"}}}, nil, 200 << 20},
		{"overhead", v1.PodSpec{Overhead: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Mi")}, Containers: []v1.Container{{Name: "a", Resources: mem("64Mi")}}}, nil, 65 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tmpfsSize(allocatable, &v1.Pod{Spec: tt.spec}, tt.sizeLimit); got != tt.want {
				t.Errorf("tmpfsSize = %d, want %d", got, tt.want)
			}
		})
	}
}
