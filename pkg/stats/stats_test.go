package stats

import (
	"context"
	"errors"
	"fmt"
	"github.com/minikubelet/minikubelet/internal/eventually"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

type fakeRuntime struct {
	containers []cri.ContainerStats
	sandboxes  []cri.PodSandboxStats
	err        error
	hang       chan struct{} // if set, ListContainerStats waits for its context, closing hang first
}

func (f *fakeRuntime) ListContainerStats(ctx context.Context, _ *cri.ContainerStatsFilter) ([]cri.ContainerStats, error) {
	if f.hang != nil {
		close(f.hang)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return f.containers, f.err
}

func (f *fakeRuntime) ListPodSandboxStats(context.Context) ([]cri.PodSandboxStats, error) {
	return f.sandboxes, f.err
}

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func fixture(t *testing.T, rt *fakeRuntime) *Provider {
	t.Helper()
	started := metav1.NewTime(epoch.Add(10 * time.Second))
	web := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("256Mi")}}}, {Name: "side"}}},
		Status: v1.PodStatus{StartTime: &started, ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}},
			{Name: "side", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}},
		}},
	}
	pending := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default", UID: "uid-pending"}}
	p, err := New(Config{
		NodeName: "n1", Clock: testingclock.NewFakeClock(epoch.Add(time.Minute)), StartTime: epoch,
		MemoryCapacity: 8 << 30, FsCapacity: 100 << 30, MaxPID: 4194304,
		Runtime: rt,
		Node: func() NodeUsage {
			return NodeUsage{CPUCoreNanoSeconds: 30e9, CPUNanoCores: 500e6, MemoryBytes: 1 << 30, DiskBytes: 10 << 30, PIDs: 300}
		},
		Pods: func(context.Context) []*v1.Pod { return []*v1.Pod{web, pending} },
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func stamp(d time.Duration) int64 { return epoch.Add(d).UnixNano() }

func webRuntime() *fakeRuntime {
	labels := map[string]string{cri.PodUIDLabel: "uid-web"}
	return &fakeRuntime{
		containers: []cri.ContainerStats{
			{Metadata: cri.ContainerMetadata{Name: "side"}, Labels: labels, Timestamp: stamp(time.Minute), UsageCoreNanoSeconds: 1e9, UsageNanoCores: 5e6, WorkingSetBytes: 16 << 20},
			{Metadata: cri.ContainerMetadata{Name: "app"}, Labels: labels, Timestamp: stamp(time.Minute), UsageCoreNanoSeconds: 12e9, UsageNanoCores: 250e6, WorkingSetBytes: 200 << 20},
		},
		// The pod was restarted once: two sandboxes, one pod cgroup.
		sandboxes: []cri.PodSandboxStats{
			{Metadata: cri.PodSandboxMetadata{Name: "web", UID: "uid-web"}, UsageCoreNanoSeconds: 4e9},
			{Metadata: cri.PodSandboxMetadata{Name: "web", UID: "uid-web"}, UsageCoreNanoSeconds: 13e9, UsageNanoCores: 255e6, WorkingSetBytes: 216 << 20},
		},
	}
}

func TestSummary(t *testing.T) {
	s, err := fixture(t, webRuntime()).Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := s.Node
	if n.NodeName != "n1" || !n.StartTime.Time.Equal(epoch) || *n.CPU.UsageCoreNanoSeconds != 30e9 || *n.CPU.UsageNanoCores != 500e6 {
		t.Errorf("node = %+v cpu %+v", n, n.CPU)
	}
	if *n.Memory.WorkingSetBytes != 1<<30 || *n.Memory.AvailableBytes != 7<<30 {
		t.Errorf("node memory: working set %d available %d, want 1Gi and 7Gi", *n.Memory.WorkingSetBytes, *n.Memory.AvailableBytes)
	}
	if *n.Fs.UsedBytes != 10<<30 || *n.Fs.AvailableBytes != 90<<30 || *n.Rlimit.NumOfRunningProcesses != 300 || *n.Rlimit.MaxPID != 4194304 {
		t.Errorf("node fs %+v rlimit %+v", n.Fs, n.Rlimit)
	}
	// The pending pod has no sandbox: no stats.
	if len(s.Pods) != 1 {
		t.Fatalf("pods = %+v, want web only", s.Pods)
	}
	p := s.Pods[0]
	if p.PodRef != (statsapi.PodReference{Name: "web", Namespace: "default", UID: "uid-web"}) {
		t.Errorf("podRef = %+v", p.PodRef)
	}
	if *p.CPU.UsageCoreNanoSeconds != 17e9 || *p.Memory.WorkingSetBytes != 216<<20 {
		t.Errorf("pod cpu %d memory %d, want both sandboxes' 17e9 and 216Mi", *p.CPU.UsageCoreNanoSeconds, *p.Memory.WorkingSetBytes)
	}
	if len(p.Containers) != 2 || p.Containers[0].Name != "app" || p.Containers[1].Name != "side" {
		t.Fatalf("containers = %+v, want app and side in name order", p.Containers)
	}
	app := p.Containers[0]
	if !app.StartTime.Time.Equal(epoch.Add(10*time.Second)) || *app.CPU.UsageCoreNanoSeconds != 12e9 || *app.Memory.AvailableBytes != 56<<20 {
		t.Errorf("app = start %v cpu %d available %d; want 00:00:10, 12e9, 56Mi under its 256Mi limit", app.StartTime, *app.CPU.UsageCoreNanoSeconds, *app.Memory.AvailableBytes)
	}
	if p.Containers[1].Memory.AvailableBytes != nil {
		t.Errorf("side has no limit, yet availableBytes = %d", *p.Containers[1].Memory.AvailableBytes)
	}
}

func TestSummaryRuntimeError(t *testing.T) {
	_, err := fixture(t, &fakeRuntime{err: errors.New("rpc error: code = Unavailable")}).Summary(context.Background())
	if err == nil || !strings.Contains(err.Error(), "failed to list container stats: rpc error") {
		t.Fatalf("Summary with a failing runtime = %v", err)
	}
}

func gather(t *testing.T, c prometheus.Collector) map[string][]*dto.Metric {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.Metric
	}
	return out
}

func TestResourceMetrics(t *testing.T) {
	m := gather(t, NewResourceCollector(fixture(t, webRuntime()), testingclock.NewFakeClock(time.Unix(0, 0)), time.Second))
	value := func(name string, labels ...string) (float64, int64) {
		t.Helper()
	next:
		for _, s := range m[name] {
			for i, l := range s.Label {
				if i < len(labels) && l.GetValue() != labels[i] {
					continue next
				}
			}
			if s.Counter != nil {
				return s.Counter.GetValue(), s.GetTimestampMs()
			}
			return s.Gauge.GetValue(), s.GetTimestampMs()
		}
		t.Fatalf("no %s%v in %v", name, labels, m[name])
		return 0, 0
	}
	now := epoch.Add(time.Minute).UnixMilli()
	for _, tt := range []struct {
		name   string
		labels []string // in label-name order
		want   float64
		at     int64
	}{
		{"node_cpu_usage_seconds_total", nil, 30, now},
		{"node_memory_working_set_bytes", nil, 1 << 30, now},
		{"pod_cpu_usage_seconds_total", []string{"default", "web"}, 17, now},
		{"pod_memory_working_set_bytes", []string{"default", "web"}, 216 << 20, now},
		{"container_cpu_usage_seconds_total", []string{"app", "default", "web"}, 12, now},
		{"container_memory_working_set_bytes", []string{"side", "default", "web"}, 16 << 20, now},
		{"container_start_time_seconds", []string{"app", "default", "web"}, float64(epoch.Unix() + 10), epoch.Add(10 * time.Second).UnixMilli()},
		{"resource_scrape_error", nil, 0, 0},
		{"scrape_error", nil, 0, 0},
	} {
		if v, at := value(tt.name, tt.labels...); v != tt.want || at != tt.at {
			t.Errorf("%s%v = %v at %d, want %v at %d", tt.name, tt.labels, v, at, tt.want, tt.at)
		}
	}
	// A failing runtime: the error gauges say so and nothing else is written.
	failed := gather(t, NewResourceCollector(fixture(t, &fakeRuntime{err: errors.New("down")}), testingclock.NewFakeClock(time.Unix(0, 0)), time.Second))
	if len(failed) != 2 || failed["resource_scrape_error"][0].Gauge.GetValue() != 1 || failed["scrape_error"][0].Gauge.GetValue() != 1 {
		t.Errorf("with a failing runtime: %v, want only resource_scrape_error 1 and scrape_error 1", failed)
	}
}

// A scrape of a hung runtime ends when the timeout passes on the node's clock: a node on a
// fake clock is bounded by that clock, not the wall clock.
func TestResourceScrapeBoundOnTheNodesClock(t *testing.T) {
	clk := testingclock.NewFakeClock(epoch)
	rt := &fakeRuntime{hang: make(chan struct{})}
	c := NewResourceCollector(fixture(t, rt), clk, 2*time.Minute)
	done := make(chan map[string][]*dto.Metric, 1)
	go func() { done <- gather(t, c) }()
	<-rt.hang
	select {
	case <-done:
		t.Fatal("the scrape ended before its timeout passed on the node's clock")
	default:
	}
	clk.Step(2 * time.Minute)
	select {
	case m := <-done:
		if m["resource_scrape_error"][0].Gauge.GetValue() != 1 {
			t.Errorf("a scrape cut short by its timeout: %v, want resource_scrape_error 1", m)
		}
	case <-time.After(eventually.Timeout): // far less than the 2m the wall clock would take
		t.Fatal("the scrape did not end when its timeout passed on the node's clock")
	}
}

type fakeCgroups struct {
	containers []cri.ContainerStats
	sandboxes  []cri.PodSandboxStats
}

func (f fakeCgroups) Cgroups() ([]cri.ContainerStats, []cri.PodSandboxStats) {
	return f.containers, f.sandboxes
}

// TestCadvisorOnePodCgroup: a pod with two sandboxes (a re-created one and the stopped one)
// has one cgroup: one series, the sum (two would make the scrape fail); the cgroup's QoS
// path comes from the spec, before the pod has a status.
func TestCadvisorOnePodCgroup(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	meta := cri.PodSandboxMetadata{Name: "web", Namespace: "default", UID: "uid-web"}
	cg := fakeCgroups{sandboxes: []cri.PodSandboxStats{
		{ID: "old", Metadata: meta, UsageCoreNanoSeconds: 2e9},
		{ID: "new", Metadata: meta, UsageCoreNanoSeconds: 1e9, WorkingSetBytes: 100},
	}}
	c := NewCadvisorCollector(cg, func() []*v1.Pod { return []*v1.Pod{pod} }, 4, 8<<30)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != "container_cpu_usage_seconds_total" {
			continue
		}
		if len(f.GetMetric()) != 1 {
			t.Fatalf("%d pod cgroup series, want 1", len(f.GetMetric()))
		}
		m := f.GetMetric()[0]
		if v := m.GetCounter().GetValue(); v != 3 {
			t.Errorf("pod CPU = %v, want 3 (both sandboxes)", v)
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == "id" && l.GetValue() != "/kubepods/poduid-web" {
				t.Errorf("id = %q, want a Guaranteed pod's /kubepods/poduid-web", l.GetValue())
			}
		}
		return
	}
	t.Fatal("no container_cpu_usage_seconds_total")
}

// TestPressure: with KubeletPSI the summary's CPU and memory stats of the node, each pod
// and container carry their pressure (the runtime's CPU stall, zero memory stall), and
// each has I/O stats of zero pressure; without it none does. cAdvisor serves the stall as
// container_pressure_*_seconds_total, full as "stalled" and some as "waiting".
func TestPressure(t *testing.T) {
	stall := &cri.PSI{Some: cri.PSIData{Total: 7_500_000, Avg10: 75}, Full: cri.PSIData{Total: 7_000_000, Avg10: 70}}
	for _, psi := range []bool{false, true} {
		t.Run(fmt.Sprintf("KubeletPSI=%t", psi), func(t *testing.T) {
			rt := webRuntime()
			rt.containers[1].CPUPressure = stall
			rt.sandboxes[1].CPUPressure = stall
			p := fixture(t, rt)
			p.cfg.PSI = psi
			p.cfg.Node = func() NodeUsage { return NodeUsage{CPUPressure: &cri.PSI{Some: stall.Some}} }
			s, err := p.Summary(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			app := s.Pods[0].Containers[0]
			if !psi {
				if s.Node.IO != nil || s.Node.CPU.PSI != nil || app.CPU.PSI != nil || app.IO != nil || s.Pods[0].Memory.PSI != nil {
					t.Errorf("pressure without KubeletPSI: node %+v, app %+v", s.Node.CPU.PSI, app.CPU.PSI)
				}
				return
			}
			want := statsapi.PSIStats{Some: statsapi.PSIData(stall.Some), Full: statsapi.PSIData(stall.Full)}
			for what, got := range map[string]*statsapi.PSIStats{"app cpu": app.CPU.PSI, "pod cpu": s.Pods[0].CPU.PSI} {
				if got == nil || *got != want {
					t.Errorf("%s pressure = %+v, want %+v", what, got, want)
				}
			}
			if got := s.Node.CPU.PSI; got == nil || got.Some.Total != 7_500_000 || got.Full != (statsapi.PSIData{}) {
				t.Errorf("node cpu pressure = %+v, want the runtime's some, no full", got)
			}
			side := s.Pods[0].Containers[1]
			for what, got := range map[string]*statsapi.PSIStats{"side cpu": side.CPU.PSI, "app memory": app.Memory.PSI, "app io": app.IO.PSI, "node io": s.Node.IO.PSI} {
				if got == nil || *got != (statsapi.PSIStats{}) {
					t.Errorf("%s pressure = %+v, want zeros", what, got)
				}
			}

			cg := fakeCgroups{containers: rt.containers, sandboxes: rt.sandboxes[1:]}
			for i := range cg.containers {
				cg.containers[i].ID = cg.containers[i].Metadata.Name
			}
			c := NewCadvisorCollector(cg, func() []*v1.Pod { return []*v1.Pod{webPod()} }, 4, 8<<30).WithPSI()
			reg := prometheus.NewRegistry()
			reg.MustRegister(c)
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, f := range families {
				for _, m := range f.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "container" && l.GetValue() == "app" {
							got[f.GetName()] = m.GetCounter().GetValue()
						}
					}
				}
			}
			for name, v := range map[string]float64{"container_pressure_cpu_waiting_seconds_total": 7.5, "container_pressure_cpu_stalled_seconds_total": 7,
				"container_pressure_memory_waiting_seconds_total": 0, "container_pressure_io_stalled_seconds_total": 0} {
				if g, ok := got[name]; !ok || g != v {
					t.Errorf("%s{container=app} = %v (present %t), want %v", name, g, ok, v)
				}
			}
		})
	}
}

func webPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}, {Name: "side"}}}}
}

// TestPodMemoryAvailable: a pod's memory stats measure availableBytes against its pod
// cgroup's limit, as cAdvisor's of the pod cgroup do; without one there is none.
func TestPodMemoryAvailable(t *testing.T) {
	for _, tt := range []struct {
		limit int64
		want  *uint64
	}{{0, nil}, {512 << 20, ptr(uint64(512<<20 - 216<<20))}, {100 << 20, ptr(uint64(0))}} {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			p := fixture(t, webRuntime())
			p.cfg.PodMemoryLimit = func(*v1.Pod) int64 { return tt.limit }
			s, err := p.Summary(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := s.Pods[0].Memory.AvailableBytes
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("pod availableBytes = %v, want %v", got, tt.want)
			}
		})
	}
}
