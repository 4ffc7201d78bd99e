package nodestatus

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/cri"
	evictionapi "github.com/minikubelet/minikubelet/pkg/eviction/api"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

type recorded struct{ eventType, reason string }

type eventLog struct{ events []recorded }

func (l *eventLog) record(eventType, reason string) {
	l.events = append(l.events, recorded{eventType, reason})
}

func (l *eventLog) reasons() []string {
	var out []string
	for _, e := range l.events {
		out = append(out, e.reason)
	}
	return out
}

func quantities(rl v1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range rl {
		out[string(k)] = v.String()
	}
	return out
}

func TestNodeAddress(t *testing.T) {
	node := &v1.Node{}
	if err := NodeAddress("10.1.2.3", "worker-1")(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.1.2.3"}, {Type: v1.NodeHostName, Address: "worker-1"}}
	if diff := cmp.Diff(want, node.Status.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if err := NodeAddress("not-an-ip", "h")(context.Background(), &v1.Node{}); err == nil || !strings.Contains(err.Error(), `"not-an-ip"`) {
		t.Errorf("bad IP: err = %v, want it to name the value", err)
	}
}

func TestMachineInfo(t *testing.T) {
	thresholds, err := evictionapi.ParseEvictionHard(map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		machine        Machine
		maxPods        int
		podsPerCore    int
		systemReserved v1.ResourceList
		kubeReserved   v1.ResourceList
		wantCapacity   map[string]string
		wantAllocat    map[string]string
	}{
		{
			name:         "no reservations",
			machine:      Machine{CPU: resource.MustParse("4"), Memory: resource.MustParse("8Gi"), EphemeralStorage: resource.MustParse("100Gi")},
			maxPods:      110,
			wantCapacity: map[string]string{"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "pods": "110"},
			// the eviction thresholds alone: 8Gi-100Mi, 100Gi-10%
			wantAllocat: map[string]string{"cpu": "4", "memory": "8092Mi", "ephemeral-storage": "90Gi", "pods": "110"},
		},
		{
			name:           "system and kube reserved, hugepages",
			machine:        Machine{CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi"), EphemeralStorage: resource.MustParse("10Gi"), Hugepages: map[string]resource.Quantity{"2Mi": resource.MustParse("512Mi")}},
			maxPods:        50,
			systemReserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("512Mi")},
			kubeReserved:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("256Mi")},
			wantCapacity:   map[string]string{"cpu": "2", "memory": "4Gi", "ephemeral-storage": "10Gi", "pods": "50", "hugepages-2Mi": "512Mi"},
			// memory: 4096 - 512 - 256 - 100 (eviction) - 512 (hugepages) = 2716Mi
			wantAllocat: map[string]string{"cpu": "1250m", "memory": "2716Mi", "ephemeral-storage": "9Gi", "pods": "50", "hugepages-2Mi": "512Mi"},
		},
		{
			name:         "pods per core caps pods",
			machine:      Machine{CPU: resource.MustParse("2"), Memory: resource.MustParse("1Gi"), EphemeralStorage: resource.MustParse("1Gi")},
			maxPods:      110,
			podsPerCore:  10,
			wantCapacity: map[string]string{"cpu": "2", "memory": "1Gi", "ephemeral-storage": "1Gi", "pods": "20"},
			wantAllocat:  map[string]string{"cpu": "2", "memory": "924Mi", "ephemeral-storage": "966367642", "pods": "20"},
		},
		{
			name:           "reservation larger than capacity clamps to zero",
			machine:        Machine{CPU: resource.MustParse("1"), Memory: resource.MustParse("64Mi"), EphemeralStorage: resource.MustParse("1Gi")},
			maxPods:        10,
			systemReserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
			wantCapacity:   map[string]string{"cpu": "1", "memory": "64Mi", "ephemeral-storage": "1Gi", "pods": "10"},
			wantAllocat:    map[string]string{"cpu": "0", "memory": "0", "ephemeral-storage": "966367642", "pods": "10"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.machine
			if err := m.fillDefaults("node"); err != nil {
				t.Fatal(err)
			}
			node := &v1.Node{}
			set := MachineInfo(tc.maxPods, tc.podsPerCore, m, func(c v1.ResourceList) v1.ResourceList {
				return NodeAllocatableReservation(c, tc.systemReserved, tc.kubeReserved, thresholds)
			})
			if err := set(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantCapacity, quantities(node.Status.Capacity)); diff != "" {
				t.Errorf("capacity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAllocat, quantities(node.Status.Allocatable)); diff != "" {
				t.Errorf("allocatable (-want +got):\n%s", diff)
			}
			if node.Status.NodeInfo.MachineID == "" || node.Status.NodeInfo.SystemUUID == "" || node.Status.NodeInfo.BootID == "" {
				t.Errorf("machine identity not set: %+v", node.Status.NodeInfo)
			}
		})
	}
}

func TestMachineIdentityIsDeterministic(t *testing.T) {
	var a, b, c Machine
	for _, x := range []struct {
		m    *Machine
		node string
	}{{&a, "node-a"}, {&b, "node-a"}, {&c, "node-b"}} {
		if err := x.m.fillDefaults(x.node); err != nil {
			t.Fatal(err)
		}
	}
	if a.MachineID != b.MachineID || a.SystemUUID != b.SystemUUID || a.BootID != b.BootID {
		t.Errorf("same node name, different identity: %+v vs %+v", a, b)
	}
	if a.MachineID == c.MachineID || a.SystemUUID == c.SystemUUID {
		t.Errorf("different node names share an identity: %q", a.MachineID)
	}
	if len(a.MachineID) != 32 || len(a.SystemUUID) != 36 {
		t.Errorf("machine id %q / uuid %q have the wrong shape", a.MachineID, a.SystemUUID)
	}
}

func TestMachineValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Machine
		want string
	}{
		{"negative memory", Machine{Memory: resource.MustParse("-1Gi")}, "machine.memory must not be negative, got -1Gi"},
		{"bad page size", Machine{Hugepages: map[string]resource.Quantity{"huge": resource.MustParse("1Gi")}}, `page size "huge"`},
		{"negative pids", Machine{MaxPIDs: -1}, "machine.maxPIDs must not be negative, got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.fillDefaults("n")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestVersionInfoDaemonEndpointsGoRuntime(t *testing.T) {
	for _, tt := range []struct {
		name             string
		kubeProxyVersion bool // DisableNodeKubeProxyVersion off
		want             string
	}{
		{"kubeProxyVersion empty (the gate's default since v1.33)", false, ""},
		{"kubeProxyVersion reported with the gate off", true, "v1.37.2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := Versions{RuntimeVersion: "1.2.3", KubeProxyVersion: tt.kubeProxyVersion}
			v.fillDefaults()
			node := &v1.Node{Status: v1.NodeStatus{NodeInfo: v1.NodeSystemInfo{KubeProxyVersion: "stale"}}}
			ctx := context.Background()
			for _, set := range []Setter{VersionInfo(v), DaemonEndpoints(func() int32 { return 12345 }), GoRuntime("linux", "arm64")} {
				if err := set(ctx, node); err != nil {
					t.Fatal(err)
				}
			}
			want := v1.NodeSystemInfo{
				KernelVersion:           DefaultKernelVersion,
				OSImage:                 "minikubelet",
				ContainerRuntimeVersion: "fake://1.2.3",
				KubeletVersion:          "v1.37.2",
				KubeProxyVersion:        tt.want,
				OperatingSystem:         "linux",
				Architecture:            "arm64",
			}
			if diff := cmp.Diff(want, node.Status.NodeInfo); diff != "" {
				t.Errorf("nodeInfo (-want +got):\n%s", diff)
			}
			if got := node.Status.DaemonEndpoints.KubeletEndpoint.Port; got != 12345 {
				t.Errorf("kubelet endpoint port = %d, want 12345", got)
			}
		})
	}
}

// TestNodeFeatures: status.features.supplementalGroupsPolicy is what the runtime last
// reported; nothing before it reported features.
func TestNodeFeatures(t *testing.T) {
	yes, no := true, false
	for _, tt := range []struct {
		name     string
		features func() *cri.RuntimeFeatures
		want     *v1.NodeFeatures
	}{
		{"no runtime state", nil, nil},
		{"no features reported yet", func() *cri.RuntimeFeatures { return nil }, nil},
		{"a runtime with the policy", func() *cri.RuntimeFeatures { return &cri.RuntimeFeatures{SupplementalGroupsPolicy: true} }, &v1.NodeFeatures{SupplementalGroupsPolicy: &yes}},
		{"a runtime without it", func() *cri.RuntimeFeatures { return &cri.RuntimeFeatures{} }, &v1.NodeFeatures{SupplementalGroupsPolicy: &no}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			node := &v1.Node{}
			if err := NodeFeatures(tt.features)(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, node.Status.Features); diff != "" {
				t.Errorf("status.features (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRuntimeHandlers: status.runtimeHandlers lists the runtime's handlers and what each
// supports; an empty list before any was reported.
func TestRuntimeHandlers(t *testing.T) {
	yes, no := true, false
	for _, tt := range []struct {
		name     string
		handlers func() []cri.RuntimeHandler
		want     []v1.NodeRuntimeHandler
	}{
		{"none reported", func() []cri.RuntimeHandler { return nil }, []v1.NodeRuntimeHandler{}},
		{"containerd's", func() []cri.RuntimeHandler {
			return []cri.RuntimeHandler{{Name: "", UserNamespaces: true}, {Name: "runc", UserNamespaces: true}}
		}, []v1.NodeRuntimeHandler{
			{Name: "", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &no, UserNamespaces: &yes}},
			{Name: "runc", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &no, UserNamespaces: &yes}},
		}},
		{"without user namespaces", func() []cri.RuntimeHandler { return []cri.RuntimeHandler{{Name: ""}} },
			[]v1.NodeRuntimeHandler{{Name: "", Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &no, UserNamespaces: &no}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			node := &v1.Node{}
			if err := RuntimeHandlers(tt.handlers)(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, node.Status.RuntimeHandlers); diff != "" {
				t.Errorf("status.runtimeHandlers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImages(t *testing.T) {
	images := []cri.Image{
		{ID: "sha256:small", RepoTags: []string{"busybox:latest"}, Size: 10},
		{ID: "sha256:big", RepoTags: []string{"a:1", "a:2", "a:3", "a:4", "a:5", "a:6"}, Size: 300},
		{ID: "sha256:untagged", Size: 200},
		{ID: "sha256:tie-a", RepoTags: []string{"tie:a"}, Size: 10},
	}
	SortImagesBySize(images)
	var order []string
	for _, i := range images {
		order = append(order, i.ID)
	}
	if diff := cmp.Diff([]string{"sha256:big", "sha256:untagged", "sha256:tie-a", "sha256:small"}, order); diff != "" {
		t.Errorf("sort order (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name string
		max  int32
		want []v1.ContainerImage
	}{
		{"limit 2", 2, []v1.ContainerImage{
			{Names: []string{"a:1", "a:2", "a:3", "a:4", "a:5"}, SizeBytes: 300},
			{Names: []string{"sha256:untagged"}, SizeBytes: 200},
		}},
		{"no limit", -1, []v1.ContainerImage{
			{Names: []string{"a:1", "a:2", "a:3", "a:4", "a:5"}, SizeBytes: 300},
			{Names: []string{"sha256:untagged"}, SizeBytes: 200},
			{Names: []string{"tie:a"}, SizeBytes: 10},
			{Names: []string{"busybox:latest"}, SizeBytes: 10},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := &v1.Node{}
			if err := Images(tc.max, func() ([]cri.Image, error) { return images, nil })(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, node.Status.Images); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
			// Run again on the node, nothing changed: the list is kept, not built again.
			kept := node.Status.Images
			if err := Images(tc.max, func() ([]cri.Image, error) { return images, nil })(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			if &node.Status.Images[0] != &kept[0] {
				t.Error("an unchanged list was built again")
			}
			// An image's size changed: a new list.
			changed := slices.Clone(images)
			changed[0].Size++
			if err := Images(tc.max, func() ([]cri.Image, error) { return changed, nil })(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			if node.Status.Images[0].SizeBytes != 301 || kept[0].SizeBytes != 300 {
				t.Errorf("a changed image: sizes %d (kept list %d), want 301 (300)", node.Status.Images[0].SizeBytes, kept[0].SizeBytes)
			}
		})
	}
	node := &v1.Node{Status: v1.NodeStatus{Images: []v1.ContainerImage{{Names: []string{"old"}}}}}
	err := Images(50, func() ([]cri.Image, error) { return nil, errors.New("boom") })(context.Background(), node)
	if err == nil || err.Error() != "error getting image list: boom" {
		t.Errorf("err = %v", err)
	}
	if node.Status.Images != nil {
		t.Errorf("images kept on error: %v", node.Status.Images)
	}
}

func TestPressureConditions(t *testing.T) {
	for _, tc := range []struct {
		name                                 string
		condType                             v1.NodeConditionType
		setter                               func(now func() time.Time, p func() bool, r RecordEventFunc) Setter
		trueReason, trueMessage, trueEvent   string
		falseReason, falseMessage, falseEvnt string
	}{
		{"memory", v1.NodeMemoryPressure, MemoryPressureCondition,
			"KubeletHasInsufficientMemory", "kubelet has insufficient memory available", "NodeHasInsufficientMemory",
			"KubeletHasSufficientMemory", "kubelet has sufficient memory available", "NodeHasSufficientMemory"},
		{"disk", v1.NodeDiskPressure, DiskPressureCondition,
			"KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure",
			"KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure"},
		{"pid", v1.NodePIDPressure, PIDPressureCondition,
			"KubeletHasInsufficientPID", "kubelet has insufficient PID available", "NodeHasInsufficientPID",
			"KubeletHasSufficientPID", "kubelet has sufficient PID available", "NodeHasSufficientPID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			pressure := false
			log := &eventLog{}
			set := tc.setter(clk.Now, func() bool { return pressure }, log.record)
			node := &v1.Node{}
			ctx := context.Background()
			step := func() v1.NodeCondition {
				t.Helper()
				if err := set(ctx, node); err != nil {
					t.Fatal(err)
				}
				if len(node.Status.Conditions) != 1 {
					t.Fatalf("conditions = %d, want 1", len(node.Status.Conditions))
				}
				return node.Status.Conditions[0]
			}
			want := v1.NodeCondition{Type: tc.condType, Status: v1.ConditionFalse, Reason: tc.falseReason, Message: tc.falseMessage,
				LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)}
			if diff := cmp.Diff(want, step()); diff != "" {
				t.Fatalf("first update (-want +got):\n%s", diff)
			}
			clk.Step(10 * time.Second)
			want.LastHeartbeatTime = metav1.NewTime(clk.Now())
			if diff := cmp.Diff(want, step()); diff != "" {
				t.Fatalf("unchanged update: only the heartbeat moves (-want +got):\n%s", diff)
			}
			clk.Step(10 * time.Second)
			pressure = true
			want = v1.NodeCondition{Type: tc.condType, Status: v1.ConditionTrue, Reason: tc.trueReason, Message: tc.trueMessage,
				LastHeartbeatTime: metav1.NewTime(clk.Now()), LastTransitionTime: metav1.NewTime(clk.Now())}
			if diff := cmp.Diff(want, step()); diff != "" {
				t.Fatalf("flip to pressure (-want +got):\n%s", diff)
			}
			clk.Step(10 * time.Second)
			pressure = false
			c := step()
			if c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(clk.Now()) {
				t.Fatalf("flip back: %+v", c)
			}
			if diff := cmp.Diff([]string{tc.falseEvnt, tc.trueEvent, tc.falseEvnt}, log.reasons()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			for _, e := range log.events {
				if e.eventType != v1.EventTypeNormal {
					t.Errorf("event %s has type %s, want Normal", e.reason, e.eventType)
				}
			}
		})
	}
}

func TestReadyCondition(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var runtimeErr, networkErr, storageErr, shutdownErr error
	log := &eventLog{}
	set := ReadyCondition(clk.Now,
		func() error { return runtimeErr }, func() error { return networkErr }, func() error { return storageErr }, func() error { return shutdownErr },
		log.record)
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi"),
		v1.ResourcePods: resource.MustParse("10"), v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	node := &v1.Node{Status: v1.NodeStatus{Capacity: capacity}}
	ctx := context.Background()
	ready := func() v1.NodeCondition {
		t.Helper()
		if err := set(ctx, node); err != nil {
			t.Fatal(err)
		}
		return node.Status.Conditions[len(node.Status.Conditions)-1]
	}

	// created NotReady: no event for a new condition
	runtimeErr = errors.New("container runtime status check may not have completed yet")
	c := ready()
	if c.Status != v1.ConditionFalse || c.Reason != "KubeletNotReady" || c.Message != "container runtime status check may not have completed yet" {
		t.Fatalf("initial: %+v", c)
	}
	if len(log.events) != 0 {
		t.Fatalf("new condition recorded events %v", log.events)
	}
	created := c.LastTransitionTime

	clk.Step(10 * time.Second)
	runtimeErr = nil
	c = ready()
	if c.Status != v1.ConditionTrue || c.Reason != "KubeletReady" || c.Message != "kubelet is posting ready status" {
		t.Fatalf("ready: %+v", c)
	}
	if !c.LastTransitionTime.Time.Equal(clk.Now()) || c.LastTransitionTime.Equal(&created) {
		t.Fatalf("LastTransitionTime did not move on the flip: %v", c.LastTransitionTime)
	}
	flippedAt := c.LastTransitionTime

	clk.Step(10 * time.Second)
	c = ready()
	if !c.LastTransitionTime.Equal(&flippedAt) || !c.LastHeartbeatTime.Time.Equal(clk.Now()) {
		t.Fatalf("steady state: transition %v heartbeat %v", c.LastTransitionTime, c.LastHeartbeatTime)
	}

	clk.Step(10 * time.Second)
	runtimeErr = errors.New("PLEG is not healthy: pleg was last seen active 3m10s ago; threshold is 3m0s")
	networkErr = errors.New("container runtime network not ready: NetworkReady=false reason:X message:Y")
	shutdownErr = errors.New("node is shutting down")
	c = ready()
	wantMsg := "[PLEG is not healthy: pleg was last seen active 3m10s ago; threshold is 3m0s, container runtime network not ready: NetworkReady=false reason:X message:Y, node is shutting down]"
	if c.Status != v1.ConditionFalse || c.Message != wantMsg {
		t.Fatalf("not ready: status %s message %q, want %q", c.Status, c.Message, wantMsg)
	}
	if diff := cmp.Diff([]recorded{{v1.EventTypeNormal, NodeReady}, {v1.EventTypeNormal, NodeNotReady}}, log.events, cmp.AllowUnexported(recorded{})); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// missing capacity is a Ready error too
	runtimeErr, networkErr, shutdownErr = nil, nil, nil
	node.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	c = ready()
	if c.Message != "missing node capacity for resources: memory, pods, ephemeral-storage" {
		t.Fatalf("missing capacity: %q", c.Message)
	}
	if n := len(node.Status.Conditions); n != 1 {
		t.Fatalf("Ready condition duplicated: %d conditions", n)
	}
}
