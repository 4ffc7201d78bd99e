package kubelet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

// apiPod is a pod bound to the test node whose container uses memory as its behaviour says.
func apiPod(name, behavior, memRequest string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Annotations: map[string]string{"minikubelet.io/behavior.app": behavior}},
		Spec: v1.PodSpec{NodeName: testNode, Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
	if memRequest != "" {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(memRequest)}
	}
	return p
}

// TestEvictionUnderMemoryPressure: a pod leaking far above its request is evicted when the
// node runs low on memory, with upstream's status, message and events, and its status goes
// to the API; the static pod, critical, is never evicted; a BestEffort pod arriving under
// memory pressure is rejected.
func TestEvictionUnderMemoryPressure(t *testing.T) {
	client := fake.NewSimpleClientset()
	h := newClusterHarness(t, client)
	h.write("web.yaml", podManifest("web", "nginx", ""))
	leaker := apiPod("leaker", "memoryUsage=1Gi,memoryGrowth=1Gi/10s", "256Mi")
	quiet := apiPod("quiet", "memoryUsage=64Mi", "128Mi")
	ctx := context.Background()
	for _, p := range []*v1.Pod{leaker, quiet} {
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*v1.Pod{leaker, quiet} {
		p.Annotations[kubetypes.ConfigSourceAnnotationKey] = kubetypes.ApiserverSource
	}
	if err := h.k.merger.Push(h.ctx, kubetypes.ApiserverSource, []*v1.Pod{leaker.DeepCopy(), quiet.DeepCopy()}); err != nil {
		t.Fatal(err)
	}
	h.until(10, "all Running", func() bool {
		return h.phase("leaker") == v1.PodRunning && h.phase("quiet") == v1.PodRunning && h.phase("web-"+testNode) == v1.PodRunning
	}, h.describe)

	h.until(120, "the leaker evicted", func() bool { return h.phase("leaker") == v1.PodFailed }, h.describe)
	st := h.pod("leaker").Status
	if st.Reason != "Evicted" || !strings.HasPrefix(st.Message, "The node was low on resource: memory. Threshold quantity: 100Mi, available: ") ||
		!strings.Contains(st.Message, "Container app was using ") || !strings.Contains(st.Message, "request is 256Mi, has larger consumption of memory. ") {
		t.Errorf("evicted status %s %q", st.Reason, st.Message)
	}
	if !h.k.IsUnderPressure(v1.NodeMemoryPressure) {
		t.Error("no memory pressure at the eviction")
	}
	// Under memory pressure a BestEffort pod is rejected.
	be := apiPod("besteffort", "", "")
	be.Annotations[kubetypes.ConfigSourceAnnotationKey] = kubetypes.ApiserverSource
	if _, err := client.CoreV1().Pods("default").Create(ctx, be, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.k.merger.Push(h.ctx, kubetypes.ApiserverSource, []*v1.Pod{leaker.DeepCopy(), quiet.DeepCopy(), be.DeepCopy()}); err != nil {
		t.Fatal(err)
	}
	h.until(5, "the BestEffort pod rejected", func() bool { return h.phase("besteffort") == v1.PodFailed }, h.describe)
	if st := h.pod("besteffort").Status; st.Reason != "Evicted" || st.Message != "Pod was rejected: The node had condition: [MemoryPressure]. " {
		t.Errorf("rejection %s %q", st.Reason, st.Message)
	}
	// The API has the evicted status.
	h.round(5 * time.Second)
	got, err := client.CoreV1().Pods("default").Get(ctx, "leaker", metav1.GetOptions{})
	if err != nil || got.Status.Phase != v1.PodFailed || got.Status.Reason != "Evicted" {
		t.Errorf("API status of the evicted pod: %v %+v", err, got.Status)
	}
	var disruption bool
	for _, c := range got.Status.Conditions {
		disruption = disruption || (c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == "TerminationByKubelet")
	}
	if !disruption {
		t.Errorf("no DisruptionTarget condition in the API: %+v", got.Status.Conditions)
	}
	if h.phase("web-"+testNode) != v1.PodRunning || h.phase("quiet") != v1.PodRunning {
		t.Errorf("pods within their requests were evicted: %s", h.describe())
	}
	var reasons []string
	for _, e := range h.k.events.List() {
		reasons = append(reasons, e.Reason+"/"+e.InvolvedObject.Name)
	}
	all := strings.Join(reasons, " ")
	if !strings.Contains(all, "Evicted/leaker") || !strings.Contains(all, "EvictionThresholdMet/"+testNode) {
		t.Errorf("events %s, want Evicted on the leaker and EvictionThresholdMet on the node", all)
	}
}

// TestEvictionThresholdsFromConfig: the configuration's hard, soft and minimum reclaim
// settings become the manager's thresholds.
func TestEvictionThresholdsFromConfig(t *testing.T) {
	got, err := evictionThresholds(map[string]string{"memory.available": "100Mi"},
		map[string]string{"memory.available": "1Gi", "nodefs.available": "15%"},
		map[string]string{"memory.available": "1m30s", "nodefs.available": "2m"},
		map[string]string{"memory.available": "200Mi", "nodefs.available": "5%"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, th := range got {
		line := fmt.Sprintf("%s soft=%v grace=%v", th.String(), th.Soft, th.GracePeriod)
		if th.MinReclaim != nil {
			line += fmt.Sprintf(" reclaim=%d", th.MinReclaim.Value(100<<30))
		}
		lines = append(lines, line)
	}
	want := []string{
		"memory.available<100Mi soft=false grace=0s reclaim=209715200",
		"memory.available<1Gi soft=true grace=1m30s reclaim=209715200",
		"nodefs.available<15% soft=true grace=2m0s reclaim=5368709120",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("thresholds:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if _, err := evictionThresholds(nil, map[string]string{"memory.available": "1Gi"}, nil, nil); err == nil ||
		!strings.Contains(err.Error(), "grace period must be specified for the soft eviction threshold memory.available") {
		t.Errorf("a soft threshold without grace: %v", err)
	}
}
