package eviction

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/events"
	evictionapi "github.com/minikubelet/minikubelet/pkg/eviction/api"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/task"
)

const mi = 1 << 20

func pod(name string, memRequest string, priority int32, static bool) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: map[string]string{}},
		Spec:       v1.PodSpec{Priority: &priority, Containers: []v1.Container{{Name: "app", Image: "app"}}},
	}
	if memRequest != "" {
		q := resource.MustParse(memRequest)
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: q}, Limits: v1.ResourceList{v1.ResourceMemory: q}}
	}
	if static {
		p.Annotations[kubetypes.ConfigSourceAnnotationKey] = kubetypes.FileSource
	} else {
		p.Annotations[kubetypes.ConfigSourceAnnotationKey] = kubetypes.ApiserverSource
	}
	return p
}

func memUsage(bytes int64) PodUsage {
	return PodUsage{MemoryWorkingSetBytes: bytes, Containers: []ContainerUsage{{Name: "app", MemoryWorkingSetBytes: bytes}}}
}

// env is a manager over a fake clock with a memory.available observation the test sets.
type env struct {
	clk       *testingclock.FakeClock
	m         *Manager
	available int64
	pods      []*v1.Pod
	usage     map[types.UID]PodUsage
	killed    []string
	statuses  map[string]v1.PodStatus
	grace     map[string]int64
	ops       map[string]*task.Op
	events    *events.Store
	reg       *metrics.Registry
}

func hardMemory(q string) Threshold {
	v := resource.MustParse(q)
	return Threshold{Threshold: evictionapi.Threshold{Signal: evictionapi.SignalMemoryAvailable, Quantity: &v}}
}

func newEnv(t *testing.T, thresholds ...Threshold) *env {
	t.Helper()
	e := &env{clk: testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), available: 4096 * mi,
		usage: map[types.UID]PodUsage{}, statuses: map[string]v1.PodStatus{}, grace: map[string]int64{}, ops: map[string]*task.Op{}}
	e.events = events.NewStore(e.clk, "node-1", 100)
	e.reg = metrics.NewRegistry("kubelet_")
	m, err := New(Config{
		Clock:                    e.clk,
		Thresholds:               thresholds,
		PressureTransitionPeriod: 5 * time.Minute,
		MaxPodGracePeriodSeconds: 20,
		Observe: func() map[evictionapi.Signal]evictionapi.Observation {
			return map[evictionapi.Signal]evictionapi.Observation{evictionapi.SignalMemoryAvailable: {Available: e.available, Capacity: 8192 * mi}}
		},
		ActivePods: func() []*v1.Pod {
			var out []*v1.Pod
			for _, p := range e.pods {
				if _, gone := e.statuses[p.Name]; !gone {
					out = append(out, p)
				}
			}
			return out
		},
		Usage: func(context.Context) (map[types.UID]PodUsage, error) { return e.usage, nil },
		KillPod: func(p *v1.Pod, grace int64, status func(*v1.PodStatus)) (*task.Op, error) {
			var st v1.PodStatus
			status(&st)
			e.killed = append(e.killed, p.Name)
			e.statuses[p.Name], e.grace[p.Name] = st, grace
			e.ops[p.Name] = task.NewOp()
			return e.ops[p.Name], nil
		},
		Recorder: e.events,
		NodeRef:  &v1.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-1"},
		Registry: e.reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	return e
}

// run steps the manager for d, one second at a time.
func (e *env) run(d time.Duration) {
	for end := e.clk.Now().Add(d); !e.clk.Now().After(end); e.clk.Step(time.Second) {
		e.m.Step(context.Background())
	}
}

func (e *env) eventMessages(reason string) []string {
	var out []string
	for _, ev := range e.events.List() {
		if ev.Reason == reason {
			out = append(out, ev.InvolvedObject.Name+": "+ev.Message)
		}
	}
	return out
}

// TestMemoryPressureEvictsInUpstreamOrder: the leaker far above its request goes first,
// then the BestEffort pod; the Guaranteed pod within its request and the static pod stay.
// One pod per pass, each after the previous one's cleanup.
func TestMemoryPressureEvictsInUpstreamOrder(t *testing.T) {
	e := newEnv(t, hardMemory("100Mi"))
	leaker, besteffort, guaranteed, static := pod("leaker", "500Mi", 0, false), pod("besteffort", "", 0, false), pod("guaranteed", "1Gi", 0, false), pod("static", "", 0, true)
	e.pods = []*v1.Pod{guaranteed, static, besteffort, leaker}
	e.usage[leaker.UID] = memUsage(5 << 30)
	e.usage[besteffort.UID] = memUsage(10 * mi)
	e.usage[guaranteed.UID] = memUsage(512 * mi)
	e.usage[static.UID] = memUsage(2 << 30)

	e.run(30 * time.Second)
	if len(e.killed) != 0 || e.m.IsUnderPressure(v1.NodeMemoryPressure) {
		t.Fatalf("killed %v with memory available", e.killed)
	}
	e.available = 50 * mi
	e.run(10 * time.Second)
	if len(e.killed) != 1 || e.killed[0] != "leaker" {
		t.Fatalf("killed %v, want the leaker first", e.killed)
	}
	st := e.statuses["leaker"]
	wantMsg := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 5Gi, request is 500Mi, has larger consumption of memory. "
	if st.Phase != v1.PodFailed || st.Reason != "Evicted" || st.Message != wantMsg {
		t.Errorf("status %s/%s %q, want Failed/Evicted %q", st.Phase, st.Reason, st.Message, wantMsg)
	}
	if len(st.Conditions) != 1 || st.Conditions[0].Type != v1.DisruptionTarget || st.Conditions[0].Reason != "TerminationByKubelet" {
		t.Errorf("conditions %+v, want DisruptionTarget TerminationByKubelet", st.Conditions)
	}
	if e.grace["leaker"] != 1 {
		t.Errorf("hard eviction grace %d, want 1", e.grace["leaker"])
	}
	if got := e.eventMessages("Evicted"); len(got) != 1 || got[0] != "leaker: "+wantMsg {
		t.Errorf("Evicted events %q", got)
	}
	if got := e.eventMessages("EvictionThresholdMet"); len(got) == 0 || got[0] != "node-1: Attempting to reclaim memory" {
		t.Errorf("node events %q", got)
	}
	if !e.m.IsUnderPressure(v1.NodeMemoryPressure) {
		t.Error("no MemoryPressure while the threshold is met")
	}

	// Until the leaker's cleanup (or 30s), nothing else is evicted.
	e.run(20 * time.Second)
	if len(e.killed) != 1 {
		t.Fatalf("killed %v before the first eviction's cleanup", e.killed)
	}
	e.ops["leaker"].Complete(nil)
	e.run(11 * time.Second)
	if len(e.killed) != 2 || e.killed[1] != "besteffort" {
		t.Fatalf("killed %v, want the BestEffort pod second", e.killed)
	}
	// The static pod is critical; the Guaranteed pod goes only after everything above its request.
	e.ops["besteffort"].Complete(nil)
	e.run(11 * time.Second)
	if len(e.killed) != 3 || e.killed[2] != "guaranteed" {
		t.Fatalf("killed %v, want guaranteed third and never the static pod", e.killed)
	}
	e.ops["guaranteed"].Complete(nil)
	e.run(30 * time.Second)
	if len(e.killed) != 3 {
		t.Errorf("killed %v: the static pod must never be evicted", e.killed)
	}
	if got := testutil.ToFloat64(e.m.evictions.WithLabelValues("memory.available")); got != 3 {
		t.Errorf("evictions{memory.available} = %v, want 3", got)
	}
}

// TestSoftThresholdWaitsForItsGracePeriod: a soft threshold evicts only once crossed for
// its grace period, with the smaller of evictionMaxPodGracePeriod and the pod's grace.
func TestSoftThresholdWaitsForItsGracePeriod(t *testing.T) {
	soft := hardMemory("1Gi")
	soft.Soft, soft.GracePeriod = true, time.Minute
	e := newEnv(t, soft)
	p := pod("web", "100Mi", 0, false)
	thirty := int64(30)
	p.Spec.TerminationGracePeriodSeconds = &thirty
	e.pods = []*v1.Pod{p}
	e.usage[p.UID] = memUsage(900 * mi)
	e.available = 512 * mi
	e.run(50 * time.Second)
	if len(e.killed) != 0 {
		t.Fatalf("evicted %v before the grace period", e.killed)
	}
	if !e.m.IsUnderPressure(v1.NodeMemoryPressure) {
		t.Error("the condition must show while the grace period runs")
	}
	e.run(20 * time.Second)
	if len(e.killed) != 1 || e.grace["web"] != 20 {
		t.Fatalf("killed %v with grace %d, want web with evictionMaxPodGracePeriod 20", e.killed, e.grace["web"])
	}
}

// TestMinimumReclaimAndTransitionPeriod: a met threshold holds until the signal is
// MinReclaim above it; the condition holds evictionPressureTransitionPeriod after.
func TestMinimumReclaimAndTransitionPeriod(t *testing.T) {
	th := hardMemory("100Mi")
	reclaim := resource.MustParse("500Mi")
	th.MinReclaim = &evictionapi.Threshold{Signal: th.Signal, Quantity: &reclaim}
	e := newEnv(t, th)
	e.available = 50 * mi
	e.run(time.Second)
	e.available = 300 * mi // above the threshold, below threshold + minimum reclaim
	e.run(10 * time.Second)
	stillMet := len(e.m.thresholdsMet) == 1
	if !stillMet {
		t.Error("the threshold was resolved before its minimum reclaim")
	}
	e.available = 700 * mi
	e.run(20 * time.Second)
	if !e.m.IsUnderPressure(v1.NodeMemoryPressure) {
		t.Error("MemoryPressure cleared before the transition period")
	}
	e.run(5 * time.Minute)
	if e.m.IsUnderPressure(v1.NodeMemoryPressure) {
		t.Error("MemoryPressure held past the transition period")
	}
}

func TestAdmit(t *testing.T) {
	e := newEnv(t, hardMemory("100Mi"))
	besteffort, burstable, static := pod("be", "", 0, false), pod("bu", "100Mi", 0, false), pod("st", "", 0, true)
	tolerating := pod("tol", "", 0, false)
	tolerating.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	if ok, _, _ := e.m.Admit(besteffort); !ok {
		t.Error("BestEffort rejected without pressure")
	}
	e.available = 10 * mi
	e.run(time.Second)
	for _, tt := range []struct {
		pod  *v1.Pod
		want bool
	}{{besteffort, false}, {burstable, true}, {static, true}, {tolerating, true}} {
		ok, reason, msg := e.m.Admit(tt.pod)
		if ok != tt.want {
			t.Errorf("%s admitted=%v, want %v", tt.pod.Name, ok, tt.want)
		}
		if !ok && (reason != "Evicted" || msg != "The node had condition: [MemoryPressure]. ") {
			t.Errorf("%s rejected with %q %q", tt.pod.Name, reason, msg)
		}
	}
}

func TestRankPIDs(t *testing.T) {
	a, b, c := pod("a", "", 0, false), pod("b", "", 0, false), pod("c", "", -10, false)
	usage := map[types.UID]PodUsage{a.UID: {Processes: 5}, b.UID: {Processes: 50}, c.UID: {Processes: 1}}
	pods := []*v1.Pod{a, b, c}
	rank(pods, resourcePIDs, usage)
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "c,b,a" {
		t.Errorf("PID rank %s, want c (lowest priority), b (most processes), a", got)
	}
}

// TestEphemeralStorageLimits: a pod over its containers' ephemeral-storage limits is
// evicted at once (grace 0) with upstream's pod or container message, without any node
// pressure.
func TestEphemeralStorageLimits(t *testing.T) {
	e := newEnv(t, hardMemory("100Mi"))
	whole := pod("whole", "", 0, false)
	whole.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	// Within the pod's total (1Gi + 500Mi), one container over its own limit.
	part := pod("part", "", 0, false)
	part.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	part.Spec.Containers = append(part.Spec.Containers, v1.Container{Name: "log", Image: "log",
		Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("500Mi")}}})
	within := pod("within", "", 0, false)
	within.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	// An emptyDir past its sizeLimit goes first, whatever the containers' limits say.
	cache := pod("cache", "", 0, false)
	cache.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
	limit := resource.MustParse("100Mi")
	cache.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	roomy := pod("roomy", "", 0, false)
	roomy.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &limit}}}}
	e.pods = []*v1.Pod{whole, part, within, cache, roomy}
	e.usage[cache.UID] = PodUsage{DiskBytes: 2 << 30, Volumes: map[string]int64{"scratch": 500 * mi, "cache": 101 * mi},
		Containers: []ContainerUsage{{Name: "app", DiskBytes: 2 << 30}}}
	e.usage[roomy.UID] = PodUsage{DiskBytes: 100 * mi, Volumes: map[string]int64{"cache": 100 * mi}}
	e.usage[whole.UID] = PodUsage{DiskBytes: 2 << 30, Containers: []ContainerUsage{{Name: "app", DiskBytes: 2 << 30}}}
	e.usage[part.UID] = PodUsage{DiskBytes: 700 * mi, Containers: []ContainerUsage{{Name: "app", DiskBytes: 100 * mi}, {Name: "log", DiskBytes: 600 * mi}}}
	e.usage[within.UID] = PodUsage{DiskBytes: 10 * mi, Containers: []ContainerUsage{{Name: "app", DiskBytes: 10 * mi}}}
	e.run(time.Second)
	want := map[string]string{
		"whole": "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ",
		"part":  `Container log exceeded its local ephemeral storage limit "500Mi". `,
		"cache": `Usage of EmptyDir volume "cache" exceeds the limit "100Mi". `,
	}
	if len(e.killed) != 3 {
		t.Fatalf("killed %v, want whole, part and cache", e.killed)
	}
	for name, msg := range want {
		if st := e.statuses[name]; st.Reason != "Evicted" || st.Message != msg || e.grace[name] != 0 {
			t.Errorf("%s: %s %q grace %d, want Evicted %q grace 0", name, st.Reason, st.Message, e.grace[name], msg)
		}
	}
	if e.m.IsUnderPressure(v1.NodeDiskPressure) {
		t.Error("limit evictions are not node pressure")
	}
	for signal, n := range map[string]float64{"ephemeralpodfs.limit": 1, "ephemeralcontainerfs.limit": 1, "emptydirfs.limit": 1} {
		if got := testutil.ToFloat64(e.m.evictions.WithLabelValues(signal)); got != n {
			t.Errorf("evictions{%s} = %v, want %v", signal, got, n)
		}
	}
}

// TestEphemeralStorageExceeded: which limit a pod's usage breaks, as kubelet v1.37 checks
// them (eviction_manager.go:539-633): the pod's total is PodLimits' (sidecars included,
// init containers' peak, overhead) and applies once any container has a limit; a
// container's own limit counts for app containers and sidecars.
func TestEphemeralStorageExceeded(t *testing.T) {
	limits := func(q string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(q)}}
	}
	always := v1.ContainerRestartPolicyAlways
	sidecar := func(name, q string) v1.Container {
		c := v1.Container{Name: name, RestartPolicy: &always}
		if q != "" {
			c.Resources = limits(q)
		}
		return c
	}
	initc := func(name, q string) v1.Container { return v1.Container{Name: name, Resources: limits(q)} }
	app := func(name, q string) v1.Container {
		c := v1.Container{Name: name}
		if q != "" {
			c.Resources = limits(q)
		}
		return c
	}
	use := func(total int64, containers ...ContainerUsage) PodUsage {
		return PodUsage{DiskBytes: total, Containers: containers}
	}
	tests := []struct {
		name       string
		containers []v1.Container
		init       []v1.Container
		overhead   string
		usage      PodUsage
		wantMsg    string
		wantSignal string
	}{
		{name: "no limits", containers: []v1.Container{app("app", "")}, usage: use(10 << 30)},
		{name: "one of two app containers limited: the pod check applies",
			containers: []v1.Container{app("app", ""), app("log", "500Mi")}, usage: use(700*mi, ContainerUsage{Name: "app", DiskBytes: 600 * mi}, ContainerUsage{Name: "log", DiskBytes: 100 * mi}),
			wantMsg: "Pod ephemeral local storage usage exceeds the total limit of containers 500Mi. ", wantSignal: signalEphemeralPodFsLimit},
		{name: "only a sidecar limited: the pod check applies",
			containers: []v1.Container{app("app", "")}, init: []v1.Container{sidecar("proxy", "200Mi")}, usage: use(300 * mi),
			wantMsg: "Pod ephemeral local storage usage exceeds the total limit of containers 200Mi. ", wantSignal: signalEphemeralPodFsLimit},
		{name: "a sidecar's limit adds to the pod's total",
			containers: []v1.Container{app("app", "1Gi")}, init: []v1.Container{sidecar("proxy", "512Mi")}, usage: use(1200 * mi),
		},
		{name: "a sidecar over its own limit",
			containers: []v1.Container{app("app", "1Gi")}, init: []v1.Container{sidecar("proxy", "100Mi")}, usage: use(300*mi, ContainerUsage{Name: "app", DiskBytes: 100 * mi}, ContainerUsage{Name: "proxy", DiskBytes: 200 * mi}),
			wantMsg: `Container proxy exceeded its local ephemeral storage limit "100Mi". `, wantSignal: signalEphemeralContainerFsLimit},
		{name: "a regular init container's own limit is not checked",
			containers: []v1.Container{app("app", "1Gi")}, init: []v1.Container{initc("setup", "100Mi")}, usage: use(300*mi, ContainerUsage{Name: "setup", DiskBytes: 200 * mi})},
		{name: "a regular init container's limit above the rest sets the pod's",
			containers: []v1.Container{app("app", "100Mi")}, init: []v1.Container{sidecar("proxy", "100Mi"), initc("setup", "1Gi")}, usage: use(1200 * mi),
			wantMsg: "Pod ephemeral local storage usage exceeds the total limit of containers 1124Mi. ", wantSignal: signalEphemeralPodFsLimit},
		{name: "the overhead adds to the pod's limit",
			containers: []v1.Container{app("app", "1Gi")}, overhead: "100Mi", usage: use(1200 * mi),
			wantMsg: "Pod ephemeral local storage usage exceeds the total limit of containers 1124Mi. ", wantSignal: signalEphemeralPodFsLimit},
		{name: "a zero container limit is no container limit",
			containers: []v1.Container{app("app", "1Gi"), app("log", "0")}, usage: use(100*mi, ContainerUsage{Name: "log", DiskBytes: 100 * mi})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{Containers: tt.containers, InitContainers: tt.init}}
			if tt.overhead != "" {
				p.Spec.Overhead = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(tt.overhead)}
			}
			msg, signal := ephemeralStorageExceeded(p, tt.usage)
			if msg != tt.wantMsg || signal != tt.wantSignal {
				t.Errorf("ephemeralStorageExceeded = %q, %q; want %q, %q", msg, signal, tt.wantMsg, tt.wantSignal)
			}
		})
	}
}

// TestDiskReclaimsNodeLevelFirst: under disk pressure dead containers and unused images
// go first; a pod is evicted only when that is not enough.
func TestDiskReclaimsNodeLevelFirst(t *testing.T) {
	for _, tt := range []struct {
		name      string
		reclaimed int64 // what the node-level reclaim frees
		wantKill  bool
	}{
		{"reclaim resolves it", 2 << 30, false},
		{"reclaim is not enough", 10 * mi, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			available := int64(100 * mi)
			q := resource.MustParse("1Gi")
			p := pod("writer", "", 0, false)
			var killed []string
			reclaims := 0
			m, err := New(Config{
				Clock:                    clk,
				Thresholds:               []Threshold{{Threshold: evictionapi.Threshold{Signal: evictionapi.SignalNodeFsAvailable, Quantity: &q}}},
				PressureTransitionPeriod: time.Minute,
				Observe: func() map[evictionapi.Signal]evictionapi.Observation {
					return map[evictionapi.Signal]evictionapi.Observation{evictionapi.SignalNodeFsAvailable: {Available: available, Capacity: 10 << 30}}
				},
				ActivePods: func() []*v1.Pod { return []*v1.Pod{p} },
				Usage: func(context.Context) (map[types.UID]PodUsage, error) {
					return map[types.UID]PodUsage{p.UID: {DiskBytes: 3 << 30, Containers: []ContainerUsage{{Name: "app", DiskBytes: 3 << 30}}}}, nil
				},
				KillPod: func(p *v1.Pod, _ int64, _ func(*v1.PodStatus)) (*task.Op, error) {
					killed = append(killed, p.Name)
					return task.NewOp(), nil
				},
				ReclaimDisk: func(context.Context) error { reclaims++; available += tt.reclaimed; return nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			m.Step(context.Background())
			if reclaims != 1 || (len(killed) == 1) != tt.wantKill {
				t.Errorf("reclaims %d, killed %v; want one reclaim and a kill %v", reclaims, killed, tt.wantKill)
			}
		})
	}
}

// TestRankByPodRequests: memory pressure ranks a pod by what it requests as a whole, as
// upstream's GetResourceRequestQuantity: its init containers' peak counts, and a pod-level
// request replaces its containers'. The message names the pod with its pod-level request,
// and the init containers over theirs.
func TestRankByPodRequests(t *testing.T) {
	q := resource.MustParse
	withInit := pod("with-init", "", 0, false)
	withInit.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "setup",
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: q("400Mi")}}}}
	podLevel := pod("pod-level", "", 0, false)
	podLevel.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: q("350Mi")}}
	plain := pod("plain", "", 0, false)
	usage := map[types.UID]PodUsage{
		withInit.UID: {MemoryWorkingSetBytes: 300 * mi},
		podLevel.UID: {MemoryWorkingSetBytes: 300 * mi},
		plain.UID:    {MemoryWorkingSetBytes: 100 * mi},
	}
	tests := []struct {
		name string
		pods []*v1.Pod
		want string
	}{
		// plain exceeds its (zero) request; the others use less than theirs.
		{"over the request first", []*v1.Pod{withInit, podLevel, plain}, "plain,pod-level,with-init"},
		// 300Mi of 350Mi is further over than 300Mi of 400Mi.
		{"then by use over the request", []*v1.Pod{withInit, podLevel}, "pod-level,with-init"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := slices.Clone(tt.pods)
			rank(pods, v1.ResourceMemory, usage)
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
			}
			if got := strings.Join(names, ","); got != tt.want {
				t.Errorf("memory rank %s, want %s", got, tt.want)
			}
		})
	}
	th := hardMemory("100Mi")
	obs := evictionapi.Observation{Capacity: 8 << 30, Available: 50 * mi}
	got := Message(v1.ResourceMemory, podLevel, PodUsage{MemoryWorkingSetBytes: 300 * mi}, th, obs)
	if want := "Pod pod-level was using 300Mi, request is 350Mi, has larger consumption of memory. "; !strings.Contains(got, want) {
		t.Errorf("message %q, want it to contain %q", got, want)
	}
	setupUse := PodUsage{MemoryWorkingSetBytes: 500 * mi, Containers: []ContainerUsage{{Name: "setup", MemoryWorkingSetBytes: 500 * mi}}}
	if got, want := Message(v1.ResourceMemory, withInit, setupUse, th, obs), "Container setup was using 500Mi, request is 400Mi"; !strings.Contains(got, want) {
		t.Errorf("message %q, want it to contain %q", got, want)
	}
}

// TestEvictedStatusObservedGeneration: an evicted pod's DisruptionTarget condition carries
// its generation, as v1.37's evictPod (eviction_manager.go:651-656) writes it with
// CalculatePodConditionObservedGeneration.
func TestEvictedStatusObservedGeneration(t *testing.T) {
	tests := []struct {
		name       string
		tracking   bool
		generation int64
		in         []v1.PodCondition
		want       int64
	}{
		{"gate on: the pod's generation", true, 3, nil, 3},
		{"gate on, an older value is replaced", true, 3, []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: 1}}, 3},
		{"gate off: none", false, 3, nil, 0},
		{"gate off, a condition that had one keeps tracking", false, 3, []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: 1}}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, hardMemory("100Mi"))
			e.m.cfg.PodObservedGenerationTracking = tt.tracking
			p := pod("web", "", 0, false)
			p.Generation = tt.generation
			st := v1.PodStatus{Phase: v1.PodRunning, Conditions: tt.in}
			e.m.evictedStatus(p, "low", true, e.clk.Now())(&st)
			if st.Phase != v1.PodFailed || st.Reason != Reason || st.Message != "low" || len(st.Conditions) != 1 {
				t.Fatalf("status = %+v", st)
			}
			if c := st.Conditions[0]; c.Type != v1.DisruptionTarget || c.Reason != ConditionReason || c.ObservedGeneration != tt.want {
				t.Errorf("condition = %+v, want DisruptionTarget %s observedGeneration %d", c, ConditionReason, tt.want)
			}
		})
	}
}

// TestEvictedStatusCondition: a node-pressure eviction sets DisruptionTarget, keeping the
// transition time of one already True (upstream's UpdatePodCondition); a local-storage
// limit eviction sets none, as upstream passes it no condition.
func TestEvictedStatusCondition(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	tests := []struct {
		name       string
		disruption bool
		in         []v1.PodCondition
		wantCond   bool
		wantSince  *metav1.Time // the transition time kept; nil: now
	}{
		{"node pressure", true, nil, true, nil},
		{"node pressure, already a disruption target", true, []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, LastTransitionTime: earlier}}, true, &earlier},
		{"node pressure, False before", true, []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionFalse, LastTransitionTime: earlier}}, true, nil},
		{"local storage limit", false, nil, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, hardMemory("100Mi"))
			st := v1.PodStatus{Phase: v1.PodRunning, Conditions: tt.in}
			e.m.evictedStatus(pod("web", "", 0, false), "over", tt.disruption, e.clk.Now())(&st)
			if st.Phase != v1.PodFailed || st.Reason != Reason || st.Message != "over" {
				t.Fatalf("status = %+v, want Failed Evicted", st)
			}
			var c *v1.PodCondition
			for i := range st.Conditions {
				if st.Conditions[i].Type == v1.DisruptionTarget {
					c = &st.Conditions[i]
				}
			}
			if (c != nil) != tt.wantCond {
				t.Fatalf("DisruptionTarget = %+v, want present %v", c, tt.wantCond)
			}
			if c == nil {
				return
			}
			want := metav1.NewTime(e.clk.Now())
			if tt.wantSince != nil {
				want = *tt.wantSince
			}
			if c.Status != v1.ConditionTrue || !c.LastTransitionTime.Equal(&want) {
				t.Errorf("condition = %+v, want True since %v", c, want)
			}
		})
	}
}
