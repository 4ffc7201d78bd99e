package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	evictionapi "github.com/minikubelet/minikubelet/pkg/eviction/api"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtimestate"
)

// fakeRuntime answers Status and ListImages.
type fakeRuntime struct {
	mu        sync.Mutex
	status    *cri.RuntimeStatus
	images    []cri.Image
	imagesErr error
}

func (f *fakeRuntime) Status(context.Context) (*cri.RuntimeStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, nil
}

func (f *fakeRuntime) ListImages(context.Context) ([]cri.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.images, f.imagesErr
}

func readyRuntime() *fakeRuntime {
	return &fakeRuntime{status: &cri.RuntimeStatus{Conditions: []cri.RuntimeCondition{
		{Type: cri.RuntimeReady, Status: true}, {Type: cri.NetworkReady, Status: true}}}}
}

// fakePLEG mimics GenericPLEG.Healthy: unhealthy once the last relist is older than 3m.
type fakePLEG struct {
	mu         sync.Mutex
	clk        *clocktesting.FakeClock
	lastRelist time.Time
}

func (p *fakePLEG) relist() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastRelist = p.clk.Now()
}

func (p *fakePLEG) Healthy() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	const threshold = 3 * time.Minute
	if p.lastRelist.IsZero() {
		return false, errors.New("pleg has yet to be successful")
	}
	if elapsed := p.clk.Since(p.lastRelist); elapsed > threshold {
		return false, fmt.Errorf("pleg was last seen active %v ago; threshold is %v", elapsed, threshold)
	}
	return true, nil
}

type fakeUsage struct {
	mu                 sync.Mutex
	mem, disk, diskCap int64
	pids               int64
	pods               int64 // the pods' memory, reported when hasPods
	hasPods            bool
}

func (u *fakeUsage) Usage() Usage {
	u.mu.Lock()
	defer u.mu.Unlock()
	return Usage{MemoryBytes: u.mem, PodMemoryBytes: u.pods, HasPodMemory: u.hasPods, DiskBytes: u.disk, DiskCapacity: u.diskCap, PIDs: u.pids}
}

func (u *fakeUsage) set(f func(u *fakeUsage)) { u.mu.Lock(); defer u.mu.Unlock(); f(u) }

type harness struct {
	clk   *clocktesting.FakeClock
	rt    *fakeRuntime
	state *runtimestate.State
	pleg  *fakePLEG
	store *events.Store
	reg   *metrics.Registry
	usage *fakeUsage
	m     *Manager
}

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	h := &harness{clk: clocktesting.NewFakeClock(t0), rt: readyRuntime(), reg: metrics.NewRegistry("kubelet_"), usage: &fakeUsage{}}
	var err error
	h.state, err = runtimestate.New(runtimestate.Config{Clock: h.clk, Runtime: h.rt})
	if err != nil {
		t.Fatal(err)
	}
	h.pleg = &fakePLEG{clk: h.clk}
	h.pleg.relist()
	h.state.AddHealthCheck("PLEG", h.pleg.Healthy)
	h.store = events.NewStore(h.clk, "node", 0)
	cfg := Config{
		NodeName: "node", NodeIP: "10.0.0.1", Clock: h.clk, Health: h.state, Images: h.rt,
		Usage: h.usage, Recorder: h.store, Registry: h.reg,
		OperatingSystem: "linux", Architecture: "amd64",
	}
	if mutate != nil {
		mutate(&cfg)
	}
	h.m, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) reports() float64 { return testutil.ToFloat64(h.m.reports) }

// step advances the clock by d, keeps the runtime check and the PLEG as the runners would
// (relist only if healthyPLEG), and runs one status update.
func (h *harness) step(t *testing.T, d time.Duration, healthyPLEG bool) {
	t.Helper()
	h.clk.Step(d)
	if healthyPLEG {
		h.pleg.relist()
	}
	if err := h.state.UpdateRuntimeUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.m.UpdateNodeStatus(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func condition(t *testing.T, node *v1.Node, ct v1.NodeConditionType) v1.NodeCondition {
	t.Helper()
	if node == nil {
		t.Fatal("node not registered")
	}
	for _, c := range node.Status.Conditions {
		if c.Type == ct {
			return c
		}
	}
	t.Fatalf("node has no %s condition", ct)
	return v1.NodeCondition{}
}

func eventReasons(store *events.Store) []string {
	var out []string
	for _, e := range store.List() {
		out = append(out, e.Reason)
	}
	return out
}

func TestNewValidatesConfig(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := readyRuntime()
	state, _ := runtimestate.New(runtimestate.Config{Clock: clk, Runtime: rt})
	base := func() Config { return Config{NodeName: "n", Clock: clk, Health: state, Images: rt} }
	neg := -time.Second
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no node name", func(c *Config) { c.NodeName = "" }, "Config.NodeName is required"},
		{"no clock", func(c *Config) { c.Clock = nil }, "Config.Clock is required"},
		{"no health", func(c *Config) { c.Health = nil }, "Config.Health is required"},
		{"no images", func(c *Config) { c.Images = nil }, "Config.Images is required"},
		{"bad IP", func(c *Config) { c.NodeIP = "300.1.1.1" }, `node IP "300.1.1.1" is not an IP address`},
		{"bad eviction", func(c *Config) { c.EvictionHard = map[string]string{"memory.available": "abc"} }, `evictionHard["memory.available"]="abc"`},
		{"negative transition", func(c *Config) { c.PressureTransitionPeriod = &neg }, "evictionPressureTransitionPeriod must not be negative, got -1s"},
		{"negative frequency", func(c *Config) { c.NodeStatusUpdateFrequency = -time.Second }, "nodeStatusUpdateFrequency must not be negative, got -1s"},
		{"bad max images", func(c *Config) { c.NodeStatusMaxImages = -2 }, "nodeStatusMaxImages must be -1 or more, got -2"},
		{"bad port", func(c *Config) { c.KubeletPort = 70000 }, "kubelet port must be within [0,65535], got 70000"},
		{"negative lease", func(c *Config) { c.NodeLeaseDurationSeconds = -1 }, "nodeLeaseDurationSeconds must not be negative, got -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			tc.mutate(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	m, err := New(base())
	if err != nil {
		t.Fatal(err)
	}
	if m.NodeStatusUpdateFrequency() != 10*time.Second || m.cfg.NodeStatusReportFrequency != 5*time.Minute || m.LeaseRenewInterval() != 10*time.Second {
		t.Errorf("defaults: update %v report %v lease %v", m.NodeStatusUpdateFrequency(), m.cfg.NodeStatusReportFrequency, m.LeaseRenewInterval())
	}
	m2, err := New(func() Config { c := base(); c.NodeIP = "0.0.0.0"; return c }())
	if err != nil || m2.cfg.NodeIP != "127.0.0.1" {
		t.Errorf("unspecified node IP: %v %q, want 127.0.0.1", err, m2.cfg.NodeIP)
	}
}

func TestRegistration(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Labels = map[string]string{"topology.kubernetes.io/zone": "z1"} })
	if h.m.GetNode() != nil {
		t.Fatal("node exists before the first update")
	}
	h.step(t, 0, true)
	node := h.m.GetNode()
	if node == nil {
		t.Fatal("node not registered by the first update")
	}
	if node.Kind != "Node" || node.APIVersion != "v1" || node.Name != "node" || node.UID == "" || !node.CreationTimestamp.Time.Equal(t0) {
		t.Errorf("metadata: %+v %+v", node.TypeMeta, node.ObjectMeta)
	}
	wantLabels := map[string]string{"kubernetes.io/hostname": "node", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "z1"}
	if diff := cmp.Diff(wantLabels, node.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	var types []v1.NodeConditionType
	for _, c := range node.Status.Conditions {
		types = append(types, c.Type)
	}
	if diff := cmp.Diff([]v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady}, types); diff != "" {
		t.Errorf("condition order (-want +got):\n%s", diff)
	}
	if c := condition(t, node, v1.NodeReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
	if diff := cmp.Diff([]string{NodeHasSufficientMemory, NodeHasNoDiskPressure, NodeHasSufficientPID}, eventReasons(h.store)); diff != "" {
		t.Errorf("registration events (-want +got):\n%s", diff)
	}
	if msg := h.store.List()[0].Message; msg != "Node node status is now: NodeHasSufficientMemory" {
		t.Errorf("event message %q", msg)
	}
	if got := h.reports(); got != 1 {
		t.Errorf("%s = %v, want 1", metrics.NodeStatusReports, got)
	}
	if node.Status.NodeInfo.ContainerRuntimeVersion != "fake://0.1.0" || node.Status.NodeInfo.KubeletVersion != DefaultKubeletVersion {
		t.Errorf("nodeInfo %+v", node.Status.NodeInfo)
	}
	if node.Status.DaemonEndpoints.KubeletEndpoint.Port != DefaultKubeletPort {
		t.Errorf("daemon endpoint %+v", node.Status.DaemonEndpoints)
	}
	// the caller gets a copy
	node.Status.Conditions = nil
	if len(h.m.GetNode().Status.Conditions) != 4 {
		t.Error("GetNode returned the stored object, not a copy")
	}
}

func TestNotReadyBeforeRuntimeCheck(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.m.UpdateNodeStatus(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := condition(t, h.m.GetNode(), v1.NodeReady)
	want := "[container runtime status check may not have completed yet, network state unknown]"
	if c.Status != v1.ConditionFalse || c.Reason != "KubeletNotReady" || c.Message != want {
		t.Fatalf("Ready before the first runtime check = %s %s %q, want False KubeletNotReady %q", c.Status, c.Reason, c.Message, want)
	}
	h.step(t, time.Second, true)
	if c := condition(t, h.m.GetNode(), v1.NodeReady); c.Status != v1.ConditionTrue {
		t.Fatalf("after the runtime check: %+v", c)
	}
	if diff := cmp.Diff([]string{NodeHasSufficientMemory, NodeHasNoDiskPressure, NodeHasSufficientPID, NodeReady}, eventReasons(h.store)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestReportFrequency: an unchanged status is reported when the report period (5m) plus a
// delay drawn at the last report of a change (or the first) has elapsed, within
// [-50%, +50%) of the period as upstream's calculateDelay; the report after that comes a
// plain period later; a change is reported at once and draws a new delay.
func TestReportFrequency(t *testing.T) {
	const step, period = 10 * time.Second, 5 * time.Minute
	h := newHarness(t, nil)
	h.step(t, 0, true)
	registered := condition(t, h.m.GetNode(), v1.NodeReady).LastHeartbeatTime

	// unchanged status: not reported until the period and the delay have elapsed
	elapsed := time.Duration(0)
	for h.reports() == 1 {
		if elapsed > period*3/2 {
			t.Fatalf("unchanged status unreported after %v, want at most 1.5 report periods", elapsed)
		}
		if hb := condition(t, h.m.GetNode(), v1.NodeReady).LastHeartbeatTime; !hb.Equal(&registered) {
			t.Fatalf("unreported heartbeat leaked into the node: %v", hb)
		}
		h.step(t, step, true)
		elapsed += step
	}
	if elapsed < period/2 {
		t.Fatalf("first periodic report after %v, want at least half the report period", elapsed)
	}
	if hb := condition(t, h.m.GetNode(), v1.NodeReady).LastHeartbeatTime; !hb.Time.Equal(t0.Add(elapsed)) {
		t.Fatalf("periodic report heartbeat = %v, want %v", hb, t0.Add(elapsed))
	}

	// the next one a plain period later: the delay was for the report after a change
	for i := step; i < period; i += step {
		h.step(t, step, true)
		if got := h.reports(); got != 2 {
			t.Fatalf("%v after a periodic report: %v reports, want 2", i, got)
		}
	}
	h.step(t, step, true)
	if got := h.reports(); got != 3 {
		t.Fatalf("a period after a periodic report: %v reports, want 3", got)
	}

	// a change is reported at once
	h.m.SetKubeletPort(4242)
	h.step(t, step, true)
	if got := h.reports(); got != 4 {
		t.Fatalf("after a change: %v reports, want 4", got)
	}
	if p := h.m.GetNode().Status.DaemonEndpoints.KubeletEndpoint.Port; p != 4242 {
		t.Fatalf("reported port %d", p)
	}
	if rv := h.m.GetNode().ResourceVersion; rv != "4" {
		t.Errorf("resourceVersion = %q, want 4 (one per report)", rv)
	}
}

// TestReportDelaySpreadsNodes: nodes registered together, with the same seed, report their
// unchanged status at moments spread over the report period, not together (what
// kubernetes#124202 saw at 5,000 nodes), and a node's delay repeats with its seed.
func TestReportDelaySpreadsNodes(t *testing.T) {
	delay := func(name string, seed int64) time.Duration {
		h := newHarness(t, func(c *Config) { c.NodeName, c.Seed = name, seed })
		h.step(t, 0, true)
		return h.m.reportDelay
	}
	const period = 5 * time.Minute
	minD, maxD := period, -period
	for i := range 50 {
		d := delay(fmt.Sprintf("node-%d", i), 1)
		if d < -period/2 || d >= period/2 {
			t.Fatalf("node-%d: delay %v outside [-2m30s, 2m30s)", i, d)
		}
		minD, maxD = min(minD, d), max(maxD, d)
	}
	if maxD-minD < period/2 {
		t.Errorf("50 nodes' delays span %v..%v, want them spread over more than half the period", minD, maxD)
	}
	if a, b := delay("node-0", 1), delay("node-0", 1); a != b {
		t.Errorf("same node and seed: delays %v and %v, want the same", a, b)
	}
	if a, b := delay("node-0", 1), delay("node-0", 2); a == b {
		t.Errorf("seeds 1 and 2: delay %v both times, want the seed to change it", a)
	}
}

// TestReportFrequencyEqualsUpdateFrequency: with the report period the update's, every
// update reports, but one skipped after the registration when its delay (at most half the
// period) is positive.
func TestReportFrequencyEqualsUpdateFrequency(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.NodeStatusReportFrequency = 10 * time.Second })
	h.step(t, 0, true)
	h.step(t, 10*time.Second, true)
	h.step(t, 10*time.Second, true)
	after := h.reports()
	if after < 2 {
		t.Fatalf("reports = %v 20s after the registration, want 2 or 3", after)
	}
	for i := 0; i < 3; i++ {
		h.step(t, 10*time.Second, true)
	}
	if got := h.reports(); got != after+3 {
		t.Fatalf("reports = %v, want one per update (%v)", got, after+3)
	}
}

func TestReadyFlipsOnPLEGUnhealthy(t *testing.T) {
	h := newHarness(t, nil)
	h.step(t, 0, true)
	// the PLEG stops relisting (a hung ListPodSandbox): healthy until 3m, unhealthy after
	elapsed := time.Duration(0)
	for elapsed < 3*time.Minute {
		h.step(t, 10*time.Second, false)
		elapsed += 10 * time.Second
		if c := condition(t, h.m.GetNode(), v1.NodeReady); c.Status != v1.ConditionTrue {
			t.Fatalf("Ready went %s at %v, before the 3m threshold", c.Status, elapsed)
		}
	}
	h.step(t, 10*time.Second, false) // 3m10s since the last relist
	node := h.m.GetNode()
	c := condition(t, node, v1.NodeReady)
	wantMsg := "PLEG is not healthy: pleg was last seen active 3m10s ago; threshold is 3m0s"
	if c.Status != v1.ConditionFalse || c.Reason != "KubeletNotReady" || c.Message != wantMsg {
		t.Fatalf("Ready = %s %s %q, want False KubeletNotReady %q", c.Status, c.Reason, c.Message, wantMsg)
	}
	notReadyAt := t0.Add(3*time.Minute + 10*time.Second)
	if !c.LastTransitionTime.Time.Equal(notReadyAt) {
		t.Fatalf("LastTransitionTime = %v, want %v", c.LastTransitionTime, notReadyAt)
	}
	last := h.store.List()[len(h.store.List())-1]
	if last.Reason != NodeNotReady || last.Message != "Node node status is now: NodeNotReady" || last.Type != v1.EventTypeNormal || last.InvolvedObject.Kind != "Node" {
		t.Fatalf("last event = %s %s %q on %s", last.Type, last.Reason, last.Message, last.InvolvedObject.Kind)
	}

	// still unhealthy: the message changes (elapsed grows) but the transition time stays
	h.step(t, 10*time.Second, false)
	c = condition(t, h.m.GetNode(), v1.NodeReady)
	if !c.LastTransitionTime.Time.Equal(notReadyAt) || !strings.Contains(c.Message, "3m20s") || !c.LastHeartbeatTime.Time.Equal(h.clk.Now()) {
		t.Fatalf("still NotReady: %+v", c)
	}

	// the PLEG relists again: Ready recovers with a new transition time and a NodeReady event
	h.step(t, 10*time.Second, true)
	c = condition(t, h.m.GetNode(), v1.NodeReady)
	if c.Status != v1.ConditionTrue || c.Message != "kubelet is posting ready status" || !c.LastTransitionTime.Time.Equal(h.clk.Now()) {
		t.Fatalf("recovered Ready = %+v", c)
	}
	reasons := eventReasons(h.store)
	if diff := cmp.Diff([]string{NodeNotReady, NodeReady}, reasons[len(reasons)-2:]); diff != "" {
		t.Fatalf("flip events (-want +got):\n%s", diff)
	}
	// the pressure conditions never moved
	if mp := condition(t, h.m.GetNode(), v1.NodeMemoryPressure); !mp.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("MemoryPressure transition moved: %v", mp.LastTransitionTime)
	}
}

func TestPressureFlips(t *testing.T) {
	const mi = int64(1 << 20)
	zero := time.Duration(0)
	for _, tc := range []struct {
		name       string
		evict      map[string]string
		cond       v1.NodeConditionType
		press      func(u *fakeUsage)
		relieve    func(u *fakeUsage)
		wantReason string
		wantEvent  string
	}{
		{"memory below 100Mi", map[string]string{"memory.available": "100Mi"}, v1.NodeMemoryPressure,
			func(u *fakeUsage) { u.mem = 8*1024*mi - 99*mi }, func(u *fakeUsage) { u.mem = 1024 * mi },
			"KubeletHasInsufficientMemory", NodeHasInsufficientMemory},
		{"memory percentage", map[string]string{"memory.available": "50%"}, v1.NodeMemoryPressure,
			func(u *fakeUsage) { u.mem = 5 * 1024 * mi }, func(u *fakeUsage) { u.mem = 3 * 1024 * mi },
			"KubeletHasInsufficientMemory", NodeHasInsufficientMemory},
		{"nodefs below 10%", map[string]string{"nodefs.available": "10%"}, v1.NodeDiskPressure,
			func(u *fakeUsage) { u.disk, u.diskCap = 95, 100 }, func(u *fakeUsage) { u.disk = 50 },
			"KubeletHasDiskPressure", NodeHasDiskPressure},
		{"imagefs on the machine disk", map[string]string{"imagefs.available": "15%"}, v1.NodeDiskPressure,
			func(u *fakeUsage) { u.disk = 90 * 1024 * 1024 * mi }, func(u *fakeUsage) { u.disk = 0 },
			"KubeletHasDiskPressure", NodeHasDiskPressure},
		{"pids below 1000", map[string]string{"pid.available": "1000"}, v1.NodePIDPressure,
			func(u *fakeUsage) { u.pids = DefaultMaxPIDs - 999 }, func(u *fakeUsage) { u.pids = 100 },
			"KubeletHasInsufficientPID", NodeHasInsufficientPID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.EvictionHard = tc.evict; c.PressureTransitionPeriod = &zero })
			h.step(t, 0, true)
			if c := condition(t, h.m.GetNode(), tc.cond); c.Status != v1.ConditionFalse {
				t.Fatalf("initial %s = %s", tc.cond, c.Status)
			}
			h.usage.set(tc.press)
			h.step(t, 10*time.Second, true)
			c := condition(t, h.m.GetNode(), tc.cond)
			if c.Status != v1.ConditionTrue || c.Reason != tc.wantReason || !c.LastTransitionTime.Time.Equal(h.clk.Now()) {
				t.Fatalf("under pressure: %+v", c)
			}
			reasons := eventReasons(h.store)
			if reasons[len(reasons)-1] != tc.wantEvent {
				t.Fatalf("events %v, want %s last", reasons, tc.wantEvent)
			}
			if got := h.reports(); got != 2 {
				t.Fatalf("a pressure flip must be reported at once: %v reports", got)
			}
			// pressure does not make the node NotReady
			if r := condition(t, h.m.GetNode(), v1.NodeReady); r.Status != v1.ConditionTrue {
				t.Fatalf("Ready = %s under pressure", r.Status)
			}
			h.usage.set(tc.relieve)
			h.step(t, 10*time.Second, true)
			if c := condition(t, h.m.GetNode(), tc.cond); c.Status != v1.ConditionFalse {
				t.Fatalf("relieved: %+v", c)
			}
		})
	}
}

func TestPressureHeldForTransitionPeriod(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.EvictionHard = map[string]string{"memory.available": "1Gi"} })
	h.step(t, 0, true)
	h.usage.set(func(u *fakeUsage) { u.mem = 7*1024*1024*1024 + 1 })
	h.step(t, 10*time.Second, true)
	if !h.m.IsUnderMemoryPressure() {
		t.Fatal("not under memory pressure after crossing")
	}
	crossedAt := h.clk.Now()
	h.usage.set(func(u *fakeUsage) { u.mem = 0 })
	for h.clk.Since(crossedAt) < 5*time.Minute-10*time.Second {
		h.step(t, 10*time.Second, true)
		if c := condition(t, h.m.GetNode(), v1.NodeMemoryPressure); c.Status != v1.ConditionTrue {
			t.Fatalf("released after %v, before the 5m transition period", h.clk.Since(crossedAt))
		}
	}
	h.step(t, 10*time.Second, true)
	if c := condition(t, h.m.GetNode(), v1.NodeMemoryPressure); c.Status != v1.ConditionFalse {
		t.Fatalf("still under pressure %v after the last crossing", h.clk.Since(crossedAt))
	}
	if h.m.IsUnderMemoryPressure() || h.m.IsUnderDiskPressure() || h.m.IsUnderPIDPressure() {
		t.Fatal("pressure getters disagree with the node")
	}
}

func TestImagesFromCache(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.NodeStatusMaxImages = 2 })
	h.rt.images = []cri.Image{{ID: "a", RepoTags: []string{"small:1"}, Size: 1}, {ID: "b", RepoTags: []string{"big:1"}, Size: 100}, {ID: "c", RepoTags: []string{"mid:1"}, Size: 50}}
	h.step(t, 0, true)
	if n := len(h.m.GetNode().Status.Images); n != 0 {
		t.Fatalf("images before the first cache refresh: %d", n)
	}
	if err := h.m.RefreshImages(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.step(t, 10*time.Second, true)
	var names []string
	for _, img := range h.m.GetNode().Status.Images {
		names = append(names, img.Names...)
	}
	if diff := cmp.Diff([]string{"big:1", "mid:1"}, names); diff != "" {
		t.Fatalf("images (-want +got):\n%s", diff)
	}
	if got := h.reports(); got != 2 {
		t.Fatalf("an image change must be reported: %v reports", got)
	}
	h.rt.mu.Lock()
	h.rt.imagesErr = errors.New("hung")
	h.rt.mu.Unlock()
	if err := h.m.RefreshImages(context.Background()); err == nil || !strings.Contains(err.Error(), "hung") {
		t.Fatalf("RefreshImages() = %v", err)
	}
	h.step(t, 10*time.Second, true)
	if n := len(h.m.GetNode().Status.Images); n != 2 {
		t.Fatalf("a failed refresh dropped the cached images: %d left", n)
	}
}

func TestRenewLease(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.NodeLeaseDurationSeconds = 20 })
	if h.m.LeaseRenewInterval() != 5*time.Second {
		t.Fatalf("renew interval = %v, want 5s (20s x 0.25)", h.m.LeaseRenewInterval())
	}
	if h.m.GetLease() != nil {
		t.Fatal("lease before the first renewal")
	}
	ctx := context.Background()
	h.m.RenewLease(ctx)
	l := h.m.GetLease()
	if l.Kind != "Lease" || l.APIVersion != "coordination.k8s.io/v1" || l.Name != "node" || l.Namespace != "kube-node-lease" {
		t.Fatalf("lease metadata %+v %+v", l.TypeMeta, l.ObjectMeta)
	}
	if *l.Spec.HolderIdentity != "node" || *l.Spec.LeaseDurationSeconds != 20 || !l.Spec.RenewTime.Time.Equal(t0) {
		t.Fatalf("lease spec %+v", l.Spec)
	}
	if len(l.OwnerReferences) != 0 {
		t.Fatalf("owner reference set before the node exists: %+v", l.OwnerReferences)
	}
	h.step(t, 5*time.Second, true)
	h.m.RenewLease(ctx)
	l = h.m.GetLease()
	node := h.m.GetNode()
	if !l.Spec.RenewTime.Time.Equal(t0.Add(5*time.Second)) || len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != node.UID || l.OwnerReferences[0].Kind != "Node" {
		t.Fatalf("renewed lease %+v owners %+v", l.Spec, l.OwnerReferences)
	}
	if !l.CreationTimestamp.Time.Equal(t0) || l.ResourceVersion != "2" {
		t.Fatalf("lease identity changed on renewal: created %v rv %s", l.CreationTimestamp, l.ResourceVersion)
	}
}

// TestLoopsCadence runs the three status loops on a virtual clock: each runs at once, then
// the lease every 10s (40s x 0.25), the status every 10s and the image list every 30s.
func TestLoopsCadence(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.state.UpdateRuntimeUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.rt.images = []cri.Image{{ID: "x", RepoTags: []string{"x:1"}, Size: 1}}
	loops := h.m.Loops()
	var renewals []time.Duration
	var statusRuns, imageRuns int
	table := []runner.Loop{
		{Name: "pleg", Due: func(time.Time) time.Time { return h.clk.Now().Add(time.Second) }, Step: func(context.Context) {}},
		loops.Images.Loop("images"), loops.Status.Loop("status"), loops.Lease.Loop("lease"),
	}
	sim := runner.NewSim(h.clk, table)
	lastRenew := time.Time{}
	lastImages := 0
	err := sim.RunUntil(context.Background(), t0.Add(60*time.Second), func(now time.Time) {
		h.pleg.relist() // the PLEG stays healthy
		if l := h.m.GetLease(); l != nil && !l.Spec.RenewTime.Time.Equal(lastRenew) {
			lastRenew = l.Spec.RenewTime.Time
			renewals = append(renewals, lastRenew.Sub(t0))
		}
		if n := h.m.GetNode(); n != nil {
			statusRuns++
			if len(n.Status.Images) != lastImages {
				lastImages = len(n.Status.Images)
				imageRuns++
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second, 50 * time.Second, 60 * time.Second}
	if fmt.Sprint(renewals) != fmt.Sprint(want) {
		t.Fatalf("lease renewed at %v, want %v", renewals, want)
	}
	if d := loops.Status.Due(h.clk.Now()); !d.Equal(t0.Add(70 * time.Second)) {
		t.Fatalf("next status update due at %v, want 70s", d.Sub(t0))
	}
	if d := loops.Images.Due(h.clk.Now()); !d.Equal(t0.Add(90 * time.Second)) {
		t.Fatalf("next image refresh due at %v, want 90s", d.Sub(t0))
	}
	// the image list (cached at 0s, refreshed at 30s) reached the reported node
	if n := h.m.GetNode(); n == nil || len(n.Status.Images) != 1 {
		t.Fatalf("node images = %v, want the refreshed list", n)
	}
}

func BenchmarkUpdateNodeStatus(b *testing.B) {
	clk := clocktesting.NewFakeClock(t0)
	rt := readyRuntime()
	for i := 0; i < 60; i++ {
		rt.images = append(rt.images, cri.Image{ID: fmt.Sprintf("sha256:%02d", i), RepoTags: []string{fmt.Sprintf("img%02d:latest", i)}, Size: uint64(i * 1000)})
	}
	state, _ := runtimestate.New(runtimestate.Config{Clock: clk, Runtime: rt})
	_ = state.UpdateRuntimeUp(context.Background())
	m, err := New(Config{NodeName: "node", Clock: clk, Health: state, Images: rt, Usage: &fakeUsage{}})
	if err != nil {
		b.Fatal(err)
	}
	_ = m.RefreshImages(context.Background())
	ctx := context.Background()
	_ = m.UpdateNodeStatus(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		clk.Step(time.Second)
		_ = state.UpdateRuntimeUp(ctx)
		if err := m.UpdateNodeStatus(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// TestObserveAllocatableMemory: allocatableMemory.available is the node's allocatable
// memory (capacity minus reservations and the hard memory threshold) minus the pods' use.
func TestObserveAllocatableMemory(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := readyRuntime()
	state, _ := runtimestate.New(runtimestate.Config{Clock: clk, Runtime: rt})
	u := &fakeUsage{mem: 3 << 30, pods: 2 << 30, hasPods: true}
	m, err := New(Config{NodeName: "node", Clock: clk, Health: state, Images: rt, Usage: u,
		Machine:        Machine{CPU: resource.MustParse("4"), Memory: resource.MustParse("8Gi"), EphemeralStorage: resource.MustParse("100Gi"), MaxPIDs: 1000},
		SystemReserved: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}})
	if err != nil {
		t.Fatal(err)
	}
	obs := m.Observe()
	// 8Gi - 1Gi reserved - 100Mi (the default memory.available threshold) = 7068Mi.
	want := evictionapi.Observation{Available: 7068<<20 - 2<<30, Capacity: 7068 << 20}
	if got := obs[evictionapi.SignalAllocatableMemoryAvailable]; got != want {
		t.Errorf("allocatableMemory.available = %+v, want %+v", got, want)
	}
	if got := obs[evictionapi.SignalMemoryAvailable]; got.Available != 5<<30 {
		t.Errorf("memory.available = %+v, want 5Gi", got)
	}
}

// flakyAPI is an API server that fails the first failures calls of each kind, and records
// the calls it was asked.
type flakyAPI struct {
	failures map[string]int // "get", "patch", "lease": how many calls fail first
	calls    []string       // "get cache", "get etcd", "register", "patch", "lease"
	node     *v1.Node
}

func (f *flakyAPI) fail(kind string) error {
	if f.failures[kind] > 0 {
		f.failures[kind]--
		return errors.New("context deadline exceeded")
	}
	return nil
}

func (f *flakyAPI) RegisterNode(_ context.Context, node *v1.Node) (*v1.Node, error) {
	f.calls = append(f.calls, "register")
	f.node = node.DeepCopy()
	return f.node, nil
}

func (f *flakyAPI) PatchNodeStatus(_ context.Context, _, node *v1.Node) (*v1.Node, error) {
	f.calls = append(f.calls, "patch")
	if err := f.fail("patch"); err != nil {
		return nil, err
	}
	f.node = node.DeepCopy()
	return f.node, nil
}

func (f *flakyAPI) GetNode(_ context.Context, _ string, fromCache bool) (*v1.Node, error) {
	f.calls = append(f.calls, map[bool]string{true: "get cache", false: "get etcd"}[fromCache])
	if err := f.fail("get"); err != nil {
		return nil, err
	}
	return f.node, nil // shared, as a watch's node is
}

func (f *flakyAPI) UpdateLease(_ context.Context, lease *coordinationv1.Lease) error {
	f.calls = append(f.calls, "lease at "+lease.Spec.RenewTime.Sub(t0).String())
	return f.fail("lease")
}

// TestRetriesWithinThePeriod: as the kubelet, a status update the API server fails is
// tried again at once, up to 5 times, the first read from the API server's cache and the
// others from etcd; a lease renewal too, each try with its own renewTime. A busy API
// server that drops a call does not cost the node 10 s of its 40 s grace.
func TestRetriesWithinThePeriod(t *testing.T) {
	tests := []struct {
		name       string
		failures   map[string]int
		wantStatus []string // the second update's calls (the first registers)
		wantLease  []string // the second renewal's calls
		reported   bool
	}{
		{name: "no failure", wantStatus: []string{"get cache", "patch"}, wantLease: []string{"lease at 10s"}, reported: true},
		{name: "two reads fail", failures: map[string]int{"get": 2, "lease": 2},
			wantStatus: []string{"get cache", "get etcd", "get etcd", "patch"},
			wantLease:  []string{"lease at 10s", "lease at 10s", "lease at 10s"}, reported: true},
		{name: "a patch fails", failures: map[string]int{"patch": 1},
			wantStatus: []string{"get cache", "patch", "get etcd", "patch"}, wantLease: []string{"lease at 10s"}, reported: true},
		{name: "every try fails", failures: map[string]int{"get": 9, "lease": 9},
			wantStatus: []string{"get cache", "get etcd", "get etcd", "get etcd", "get etcd"},
			wantLease:  []string{"lease at 10s", "lease at 10s", "lease at 10s", "lease at 10s", "lease at 10s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &flakyAPI{}
			// Every update reports (the report period, with its delay of at most half
			// of it, is under the update's), so that each one patches.
			h := newHarness(t, func(c *Config) { c.API, c.NodeStatusReportFrequency = api, 5*time.Second })
			ctx := context.Background()
			h.step(t, 0, true) // registers
			h.m.RenewLease(ctx)
			api.failures, api.calls = tt.failures, nil
			h.step(t, 10*time.Second, true)
			if !reflect.DeepEqual(api.calls, tt.wantStatus) {
				t.Errorf("status update calls %q, want %q", api.calls, tt.wantStatus)
			}
			if got := h.reports() == 2; got != tt.reported {
				t.Errorf("reported %v (%v reports), want %v", got, h.reports(), tt.reported)
			}
			api.calls = nil
			h.m.RenewLease(ctx)
			if !reflect.DeepEqual(api.calls, tt.wantLease) {
				t.Errorf("lease renewal calls %q, want %q", api.calls, tt.wantLease)
			}
		})
	}
}

// TestLeavesTheAPINodeAlone: the node the API returns is a watch's, shared: the setters
// work on a copy of it, whatever they change.
func TestLeavesTheAPINodeAlone(t *testing.T) {
	api := &flakyAPI{}
	h := newHarness(t, func(c *Config) { c.API, c.NodeStatusReportFrequency = api, 5*time.Second })
	h.step(t, 0, true) // registers
	api.failures = map[string]int{"patch": 9}
	before := api.node.DeepCopy()
	h.step(t, 10*time.Second, true) // every setter runs again, the heartbeats change
	if !reflect.DeepEqual(api.node, before) {
		t.Errorf("the API's node changed under the status update:\n%+v\nwant\n%+v", api.node.Status, before.Status)
	}
}

// TestRegistersOnce: a node whose first status patch fails after its registration went
// through is patched at the next try, not registered again (upstream's
// registrationCompleted): a registration costs an etcd write the busy API server may take
// seconds over.
func TestRegistersOnce(t *testing.T) {
	api := &flakyAPI{failures: map[string]int{"patch": 1}}
	h := newHarness(t, func(c *Config) { c.API = api })
	h.step(t, 0, true)
	if want := []string{"register", "patch", "get etcd", "patch"}; !reflect.DeepEqual(api.calls, want) {
		t.Errorf("calls %q, want %q", api.calls, want)
	}
	if node := h.m.GetNode(); node == nil || h.reports() != 1 {
		t.Errorf("node %v after %v reports, want it reported once", node, h.reports())
	}
}
