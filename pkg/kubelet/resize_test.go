package kubelet

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/minikubelet/minikubelet/pkg/features"
)

func resources(cpu, mem string) v1.ResourceRequirements {
	l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	return v1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
}

// TestInPlaceResize resizes a running Guaranteed pod through the API (as the resize
// subresource does: the same pod, a new generation, new resources) and checks what the
// kubelet does, as the e2e "Pod InPlace Resize" specs check it: the container's cgroup and
// status follow without a restart unless its resizePolicy asks for one, the resize
// conditions come and go with ResizeStarted and ResizeCompleted events, the pod cgroup
// follows pod-level resources, and a resize the node has no room for is Deferred.
func TestInPlaceResize(t *testing.T) {
	restart := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	tests := []struct {
		name             string
		policy           []v1.ContainerResizePolicy
		podLevel         bool
		addPodLevel      bool // the resize adds pod-level resources to a pod without
		from, to         v1.ResourceRequirements
		wantRestarts     int32
		wantPending      string // the PodResizePending reason; "": the resize is actuated
		wantQuota        int64  // the container's CPU quota after the resize
		wantMemory       int64
		wantPodCPUMax    string // the pod cgroup's cpu.max
		wantPendingMatch string
		wantMetrics      []string // lines of /metrics
	}{
		{name: "cpu and memory in place", from: resources("200m", "64Mi"), to: resources("300m", "96Mi"),
			wantQuota: 30000, wantMemory: 96 << 20, wantPodCPUMax: "30000 100000",
			wantMetrics: []string{`kubelet_container_requested_resizes_total{operation="increase",requirement="limits",resource="cpu"} 1`,
				`kubelet_container_requested_resizes_total{operation="increase",requirement="requests",resource="memory"} 1`,
				`kubelet_pod_resize_duration_milliseconds_count{success="true"} 1`, `kubelet_pod_in_progress_resizes 0`}},
		{name: "memory with RestartContainer", policy: restart, from: resources("200m", "64Mi"), to: resources("200m", "48Mi"),
			wantRestarts: 1, wantQuota: 20000, wantMemory: 48 << 20, wantPodCPUMax: "20000 100000"},
		{name: "pod-level", podLevel: true, from: resources("200m", "64Mi"), to: resources("400m", "64Mi"),
			wantQuota: 40000, wantMemory: 64 << 20, wantPodCPUMax: "40000 100000"},
		{name: "pod-level resources added", addPodLevel: true, from: resources("200m", "64Mi"), to: resources("400m", "128Mi"),
			wantQuota: 20000, wantMemory: 64 << 20, wantPodCPUMax: "40000 100000"},
		{name: "more CPU than the node has", from: resources("200m", "64Mi"), to: resources("64", "64Mi"),
			wantPending: v1.PodReasonDeferred, wantPendingMatch: "Node didn't have enough resource: cpu", wantQuota: 20000, wantMemory: 64 << 20, wantPodCPUMax: "20000 100000",
			wantMetrics: []string{`kubelet_pod_pending_resizes{priority_bucket="normal",reason="deferred"} 1`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newClusterHarness(t, fake.NewSimpleClientset())
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "resize", Namespace: "default", UID: types.UID("uid-resize"), Generation: 1, CreationTimestamp: metav1.NewTime(epoch)},
				Spec: v1.PodSpec{
					NodeName: testNode, RestartPolicy: v1.RestartPolicyAlways, DNSPolicy: v1.DNSClusterFirst,
					Containers: []v1.Container{{
						Name: "c1", Image: "busybox", Command: []string{"/bin/sh", "-c", "sleep 1d"},
						TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile,
						ResizePolicy: tc.policy,
					}},
				},
				Status: v1.PodStatus{Phase: v1.PodPending},
			}
			set := func(p *v1.Pod, r v1.ResourceRequirements) {
				if tc.podLevel {
					p.Spec.Resources = r.DeepCopy()
					p.Spec.Containers[0].Resources = v1.ResourceRequirements{}
					return
				}
				p.Spec.Containers[0].Resources = *r.DeepCopy()
			}
			set(pod, tc.from)
			if tc.addPodLevel {
				set = func(p *v1.Pod, r v1.ResourceRequirements) { p.Spec.Resources = r.DeepCopy() }
			}
			h.k.UpdateAPIPods(context.Background(), []*v1.Pod{pod})
			running := func() bool {
				p := h.pod("resize")
				return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
			}
			h.until(30, "pod running", running, h.describe)
			if p := h.pod("resize"); p.Status.ObservedGeneration != 1 {
				t.Errorf("observedGeneration = %d, want 1", p.Status.ObservedGeneration)
			}
			h.round(2e9)
			for _, reason := range []string{ReasonResizeStarted, ReasonResizeCompleted} {
				if findEvent(h, reason, "resize") != nil {
					t.Errorf("a %s event before any resize (e2e: should not emit ResizeCompleted event on initial creation)", reason)
				}
			}

			resized := pod.DeepCopy()
			resized.Generation = 2
			set(resized, tc.to)
			h.k.UpdateAPIPods(context.Background(), []*v1.Pod{resized})

			if tc.wantPending != "" {
				h.until(10, "PodResizePending", func() bool { return condition(h.pod("resize"), v1.PodResizePending) != nil }, h.describe)
				c := condition(h.pod("resize"), v1.PodResizePending)
				if c.Reason != tc.wantPending || !strings.Contains(c.Message, tc.wantPendingMatch) || c.ObservedGeneration != 2 {
					t.Errorf("PodResizePending = %s %q (generation %d), want %s with %q, generation 2", c.Reason, c.Message, c.ObservedGeneration, tc.wantPending, tc.wantPendingMatch)
				}
				if findEvent(h, ReasonResizeDeferred, "resize") == nil {
					t.Errorf("no %s event", ReasonResizeDeferred)
				}
			} else {
				h.until(30, "resize actuated", func() bool {
					p := h.pod("resize")
					return running() && p.Status.ObservedGeneration == 2 &&
						condition(p, v1.PodResizeInProgress) == nil && condition(p, v1.PodResizePending) == nil &&
						findEvent(h, ReasonResizeCompleted, "resize") != nil
				}, func() string {
					p := h.pod("resize")
					var evs []string
					for _, e := range h.k.Events().List() {
						evs = append(evs, e.Reason+": "+e.Message)
					}
					return fmt.Sprintf("%s; generation %d, conditions %+v; events %q", h.describe(), p.Status.ObservedGeneration, p.Status.Conditions, evs)
				})
				if findEvent(h, ReasonResizeStarted, "resize") == nil {
					t.Errorf("no %s event", ReasonResizeStarted)
				}
			}

			p := h.pod("resize")
			cs := p.Status.ContainerStatuses[0]
			if cs.RestartCount != tc.wantRestarts {
				t.Errorf("restartCount = %d, want %d", cs.RestartCount, tc.wantRestarts)
			}
			if !tc.podLevel && !tc.addPodLevel {
				want := tc.to
				if tc.wantPending != "" {
					want = tc.from
				}
				if cs.Resources == nil || !cs.Resources.Limits.Cpu().Equal(*want.Limits.Cpu()) || !cs.Resources.Limits.Memory().Equal(*want.Limits.Memory()) {
					t.Errorf("status resources = %v, want the limits of %v", cs.Resources, want)
				}
				if !cs.AllocatedResources.Cpu().Equal(*want.Requests.Cpu()) {
					t.Errorf("allocatedResources = %v, want %v", cs.AllocatedResources, want.Requests)
				}
			}
			st, err := h.k.rt.ContainerStatus(h.ctx, cs.ContainerID[strings.Index(cs.ContainerID, "://")+3:])
			if err != nil {
				t.Fatalf("ContainerStatus: %v", err)
			}
			if st.Resources == nil || st.Resources.CPUQuota != tc.wantQuota || st.Resources.MemoryLimitInBytes != tc.wantMemory {
				t.Errorf("the container's cgroup = %+v, want quota %d and memory %d", st.Resources, tc.wantQuota, tc.wantMemory)
			}
			data, err := h.k.nodeFS.ReadFile(h.k.podCgroups.Name(p) + "/cpu.max")
			if err == nil {
				data, err = h.k.nodeFS.ReadFile("/sys/fs/cgroup" + h.k.podCgroups.Name(p) + "/cpu.max")
			} else {
				data, err = h.k.nodeFS.ReadFile("/sys/fs/cgroup" + h.k.podCgroups.Name(p) + "/cpu.max")
			}
			if err != nil || strings.TrimSpace(string(data)) != tc.wantPodCPUMax {
				t.Errorf("pod cgroup cpu.max = %q (%v), want %q", data, err, tc.wantPodCPUMax)
			}
			_, body := get(t, h.k.Server().Handler(), "/metrics")
			for _, line := range tc.wantMetrics {
				if !strings.Contains(body, line+"\n") {
					t.Errorf("/metrics has no line %q", line)
				}
			}
		})
	}
}

// TestResizeInfeasible: the resizes upstream's admit handler refuses for good, with its
// messages: pod-level resources with InPlacePodLevelResourcesVerticalScaling off, a
// memory-backed emptyDir's sizeLimit with its (alpha) gate off. Container resources, and
// pod-level ones with the gate on, go on to the resource fit.
func TestResizeInfeasible(t *testing.T) {
	base := func() *v1.Pod {
		size := resource.MustParse("64Mi")
		return &v1.Pod{Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "c", Resources: resources("100m", "64Mi")}},
			Volumes:    []v1.Volume{{Name: "shm", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &size}}}},
		}}
	}
	podLevel := func(p *v1.Pod) { r := resources("1", "1Gi"); p.Spec.Resources = &r }
	bigger := func(p *v1.Pod) { q := resource.MustParse("128Mi"); p.Spec.Volumes[0].EmptyDir.SizeLimit = &q }
	container := func(p *v1.Pod) { p.Spec.Containers[0].Resources = resources("200m", "64Mi") }
	tests := []struct {
		name           string
		change         func(*v1.Pod)
		podLevelResize bool
		wantDetail     string
		wantMsg        string
	}{
		{"container resources", container, false, "", ""},
		{"pod-level, gate off", podLevel, false, "plr_feature_gate_off", "InPlacePodLevelResourcesVerticalScaling is disabled"},
		{"pod-level, gate on", podLevel, true, "", ""},
		{"a memory-backed volume's size", bigger, true, "memory_volume_resize_gate_off", "Memory-backed emptyDir volume resize is disabled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := &Kubelet{podLevelResize: tc.podLevelResize, gate: features.DefaultFeatureGate}
			allocated, desired := base(), base()
			tc.change(desired)
			detail, msg := k.resizeInfeasible(allocated, desired)
			if detail != tc.wantDetail || msg != tc.wantMsg {
				t.Errorf("resizeInfeasible = %q, %q; want %q, %q", detail, msg, tc.wantDetail, tc.wantMsg)
			}
		})
	}
}
