package nodestatus

import (
	"reflect"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// semanticStatusHasChanged is the kubelet's nodeStatusHasChanged as it is written
// upstream: deep copies, conditions sorted by type with their heartbeats zeroed, the whole
// compared with apiequality.Semantic. nodeStatusHasChanged must answer as it does.
func semanticStatusHasChanged(original, status *v1.NodeStatus) bool {
	a, b := original.DeepCopy(), status.DeepCopy()
	if len(a.Conditions) != len(b.Conditions) {
		return true
	}
	sort.SliceStable(a.Conditions, func(i, j int) bool { return a.Conditions[i].Type < a.Conditions[j].Type })
	sort.SliceStable(b.Conditions, func(i, j int) bool { return b.Conditions[i].Type < b.Conditions[j].Type })
	for i := range a.Conditions {
		a.Conditions[i].LastHeartbeatTime, b.Conditions[i].LastHeartbeatTime = metav1.Time{}, metav1.Time{}
	}
	return !apiequality.Semantic.DeepEqual(a, b)
}

func TestNodeStatusHasChanged(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	base := func() *v1.NodeStatus {
		return &v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("3Gi")},
			Conditions: []v1.NodeCondition{
				{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: t0, LastTransitionTime: t0},
				{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: t0, LastTransitionTime: t0},
			},
			Addresses:       []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}},
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        v1.NodeSystemInfo{KubeletVersion: "v1.37.2"},
			Images:          []v1.ContainerImage{{Names: []string{"nginx:1.27"}, SizeBytes: 70 << 20}, {Names: []string{"busybox:1.36"}, SizeBytes: 4 << 20}},
			RuntimeHandlers: []v1.NodeRuntimeHandler{{Name: "runc", Features: &v1.NodeRuntimeHandlerFeatures{UserNamespaces: ptr.To(true)}}},
		}
	}
	tests := []struct {
		name   string
		change func(s *v1.NodeStatus)
		want   bool
	}{
		{"the same", func(*v1.NodeStatus) {}, false},
		{"heartbeats only", func(s *v1.NodeStatus) {
			s.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
			s.Conditions[1].LastHeartbeatTime = metav1.NewTime(t0.Add(time.Minute))
		}, false},
		{"conditions in another order", func(s *v1.NodeStatus) { s.Conditions[0], s.Conditions[1] = s.Conditions[1], s.Conditions[0] }, false},
		{"a transition time in another zone", func(s *v1.NodeStatus) {
			s.Conditions[1].LastTransitionTime = metav1.NewTime(t0.In(time.FixedZone("CET", 3600)))
		}, false},
		{"a condition's status", func(s *v1.NodeStatus) { s.Conditions[1].Status = v1.ConditionFalse }, true},
		{"a condition's message", func(s *v1.NodeStatus) { s.Conditions[1].Message = "PLEG is not healthy" }, true},
		{"a condition's transition", func(s *v1.NodeStatus) { s.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(time.Second)) }, true},
		{"a condition more", func(s *v1.NodeStatus) {
			s.Conditions = append(s.Conditions, v1.NodeCondition{Type: v1.NodeDiskPressure})
		}, true},
		{"a condition's type", func(s *v1.NodeStatus) { s.Conditions[0].Type = v1.NodeDiskPressure }, true},
		{"a quantity written otherwise", func(s *v1.NodeStatus) { s.Capacity[v1.ResourceCPU] = resource.MustParse("2000m") }, false},
		{"a quantity", func(s *v1.NodeStatus) { s.Allocatable[v1.ResourceMemory] = resource.MustParse("2Gi") }, true},
		{"a resource more", func(s *v1.NodeStatus) { s.Capacity[v1.ResourcePods] = resource.MustParse("110") }, true},
		{"a resource for another", func(s *v1.NodeStatus) {
			delete(s.Capacity, v1.ResourceCPU)
			s.Capacity[v1.ResourcePods] = resource.MustParse("2")
		}, true},
		{"empty lists for none", func(s *v1.NodeStatus) {
			s.Capacity, s.Allocatable, s.Images = v1.ResourceList{}, v1.ResourceList{}, nil
		}, true},
		{"the images copied", func(s *v1.NodeStatus) {
			s.Images = []v1.ContainerImage{{Names: []string{"nginx:1.27"}, SizeBytes: 70 << 20}, {Names: []string{"busybox:1.36"}, SizeBytes: 4 << 20}}
		}, false},
		{"an image's size", func(s *v1.NodeStatus) { s.Images[1].SizeBytes++ }, true},
		{"an image's names", func(s *v1.NodeStatus) { s.Images[1].Names = []string{"busybox:1.37"} }, true},
		{"an image fewer", func(s *v1.NodeStatus) { s.Images = s.Images[:1] }, true},
		{"an address", func(s *v1.NodeStatus) { s.Addresses[0].Address = "10.0.0.2" }, true},
		{"the kubelet's version", func(s *v1.NodeStatus) { s.NodeInfo.KubeletVersion = "v1.36.3" }, true},
		{"a handler's feature", func(s *v1.NodeStatus) { s.RuntimeHandlers[0].Features.UserNamespaces = ptr.To(false) }, true},
		{"the declared features", func(s *v1.NodeStatus) { s.DeclaredFeatures = []string{"GuaranteedQoSPodCPUResize"} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			original, status := base(), base()
			tt.change(status)
			got := nodeStatusHasChanged(original, status)
			if want := semanticStatusHasChanged(original, status); want != tt.want {
				t.Fatalf("the case is wrong: upstream's comparison says %v", want)
			}
			if got != tt.want {
				t.Errorf("nodeStatusHasChanged = %v, want %v", got, tt.want)
			}
			if back := nodeStatusHasChanged(status, original); back != got {
				t.Errorf("not symmetric: %v one way, %v the other", got, back)
			}
		})
	}
	// The empty lists for none case above differs on capacity; nil and empty are the same.
	a, b := base(), base()
	a.Images, b.Images = nil, []v1.ContainerImage{}
	if nodeStatusHasChanged(a, b) || semanticStatusHasChanged(a, b) {
		t.Error("a nil and an empty image list differ")
	}
}

// TestNodeConditionFields: nodeConditionsHaveChanged compares a condition's fields one by
// one; a field a later API adds must be added there.
func TestNodeConditionFields(t *testing.T) {
	var got []string
	ty := reflect.TypeFor[v1.NodeCondition]()
	for i := range ty.NumField() {
		got = append(got, ty.Field(i).Name)
	}
	want := []string{"Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("NodeCondition's fields are %v, nodeConditionsHaveChanged compares %v", got, want)
	}
}

// TestCopyNodeSharesOnlyImages: the setters' copy is deep but for the images.
func TestCopyNodeSharesOnlyImages(t *testing.T) {
	original := &v1.Node{Status: v1.NodeStatus{
		Images:     []v1.ContainerImage{{Names: []string{"nginx"}}},
		Conditions: []v1.NodeCondition{{Type: v1.NodeReady}},
		Capacity:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
	}}
	c := copyNode(original)
	if &c.Status.Images[0] != &original.Status.Images[0] {
		t.Error("the images are copied")
	}
	c.Status.Conditions[0].Status = v1.ConditionTrue
	c.Status.Capacity[v1.ResourceCPU] = resource.MustParse("2")
	if original.Status.Conditions[0].Status != "" || original.Status.Capacity.Cpu().String() != "1" {
		t.Errorf("the copy's edits reached the original: %+v", original.Status)
	}
	if !apiequality.Semantic.DeepEqual(original.Status.Images, c.Status.Images) {
		t.Error("the images differ")
	}
}
