package nodeshutdown

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/task"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// pod builds a running pod. priority and grace may be nil.
func pod(name string, priority *int32, grace *int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Priority: priority, TerminationGracePeriodSeconds: grace},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
}

// killCall is one KillPod call the fake saw.
type killCall struct {
	pod    string
	grace  int64
	at     time.Time // clock time of the call
	status v1.PodStatus
}

// fakeKiller stands in for the pod workers. A pod named in stubborn ignores SIGTERM: its
// kill never completes. A pod in held completes when the test completes its operation.
// Any other pod stops at once.
type fakeKiller struct {
	clk      *testingclock.FakeClock
	stubborn map[string]bool
	held     map[string]bool

	mu    sync.Mutex
	calls []killCall
	ops   map[string]*task.Op
	trace []string // "start:<pod>" / "end:<pod>" in order
}

func (f *fakeKiller) kill(p *v1.Pod, grace int64, statusFn func(*v1.PodStatus)) (*task.Op, error) {
	status := *p.Status.DeepCopy()
	statusFn(&status)
	f.mu.Lock()
	f.calls = append(f.calls, killCall{pod: p.Name, grace: grace, at: f.clk.Now(), status: status})
	f.trace = append(f.trace, "start:"+p.Name)
	f.mu.Unlock()

	if !f.stubborn[p.Name] && !f.held[p.Name] {
		f.ended(p.Name)
		return task.Completed(nil), nil
	}
	op := task.NewOp()
	op.OnDone(func() { f.ended(p.Name) })
	f.mu.Lock()
	f.ops[p.Name] = op
	f.mu.Unlock()
	return op, nil
}

func (f *fakeKiller) ended(name string) {
	f.mu.Lock()
	f.trace = append(f.trace, "end:"+name)
	f.mu.Unlock()
}

// release completes a held pod's kill, as the pod workers do once its containers stopped.
func (f *fakeKiller) release(name string) {
	f.mu.Lock()
	op := f.ops[name]
	f.mu.Unlock()
	op.Complete(nil)
}

func (f *fakeKiller) snapshot() ([]killCall, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]killCall(nil), f.calls...), append([]string(nil), f.trace...)
}

func (f *fakeKiller) call(name string) (killCall, bool) {
	calls, _ := f.snapshot()
	for _, c := range calls {
		if c.pod == name {
			return c, true
		}
	}
	return killCall{}, false
}

// testLogger returns a context whose logger keeps what it logs, and a func to read it.
func testLogger(t *testing.T) (context.Context, func() string) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(5), ktesting.BufferLogs(true)))
	buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
	return klog.NewContext(context.Background(), logger), buf.String
}

type env struct {
	ctx    context.Context
	logs   func() string
	clk    *testingclock.FakeClock
	killer *fakeKiller
	store  *events.Store
	m      *Manager
	synced int
}

func newEnv(t *testing.T, cfg Config, pods []*v1.Pod, stubborn ...string) *env {
	t.Helper()
	e := &env{clk: testingclock.NewFakeClock(t0)}
	e.ctx, e.logs = testLogger(t)
	cfg.Logger = klog.FromContext(e.ctx)
	e.killer = &fakeKiller{clk: e.clk, stubborn: map[string]bool{}, held: map[string]bool{}, ops: map[string]*task.Op{}}
	for _, s := range stubborn {
		e.killer.stubborn[s] = true
	}
	e.store = events.NewStore(e.clk, "node-a", 0)
	cfg.Clock, cfg.Recorder, cfg.NodeName = e.clk, e.store, "node-a"
	cfg.GetPods = func() []*v1.Pod { return pods }
	cfg.KillPod = e.killer.kill
	cfg.SyncNodeStatus = func() { e.synced++ }
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	e.m = m
	t.Cleanup(m.Stop)
	return e
}

// loop is the manager's entry in a loop table, as pkg/kubelet lists it.
func (e *env) loop() runner.Loop {
	return runner.Loop{Name: "node-shutdown", Due: e.m.Due, Step: func(ctx context.Context) { e.m.Step(ctx) }, Wake: e.m.Wake()}
}

// runUntil steps the manager whenever it is due, moving the clock to each due instant,
// until end (the clock is left at end) or the shutdown is done. It reports whether the
// shutdown is done.
func (e *env) runUntil(t *testing.T, ctx context.Context, end time.Time) bool {
	t.Helper()
	sim := runner.NewSim(e.clk, []runner.Loop{e.loop()})
	if err := sim.RunUntil(ctx, end, nil); err != nil {
		t.Fatalf("RunUntil: %v", err)
	}
	select {
	case <-e.m.Done():
		return true
	default:
		return false
	}
}

// pendingPods names the pods of the current group the manager still waits for.
func (e *env) pendingPods() []string {
	var out []string
	for _, p := range e.m.pending {
		out = append(out, p.Name)
	}
	return out
}

func enabled(total, critical time.Duration) Config {
	return Config{Enabled: true, ShutdownGracePeriod: total, ShutdownGracePeriodCriticalPods: critical}
}

func wantShutdownStatus(t *testing.T, c killCall) {
	t.Helper()
	s := c.status
	if s.Phase != v1.PodFailed || s.Reason != "Terminated" || s.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Errorf("pod %s status = phase %q reason %q message %q, want Failed/Terminated/%q", c.pod, s.Phase, s.Reason, s.Message, PodMessage)
	}
	var found bool
	for _, cond := range s.Conditions {
		if cond.Type == v1.DisruptionTarget {
			found = true
			if cond.Status != v1.ConditionTrue || cond.Reason != "TerminationByKubelet" || cond.Message != PodMessage || !cond.LastTransitionTime.Time.Equal(c.at) {
				t.Errorf("pod %s DisruptionTarget = %+v, want True/TerminationByKubelet stamped %v", c.pod, cond, c.at)
			}
		}
	}
	if !found {
		t.Errorf("pod %s has no DisruptionTarget condition: %+v", c.pod, s.Conditions)
	}
}

func TestShutdownBothGateValues(t *testing.T) {
	pods := func() []*v1.Pod {
		return []*v1.Pod{
			pod("web", nil, nil),                                   // ordinary: group period 20
			pod("short", nil, ptr.To[int64](5)),                    // asks for less: 5
			pod("long", ptr.To[int32](1000), ptr.To[int64](600)),   // asks for more: capped at 20
			pod("dns", ptr.To[int32](SystemCriticalPriority), nil), // critical: 10
			pod("proxy", ptr.To[int32](2000001000), ptr.To[int64](3)),
			// A static pod naming system-node-critical but without a resolved
			// spec.priority is an ordinary pod to upstream's shutdown manager.
			withClass(pod("static-etcd", nil, nil), "system-node-critical"),
		}
	}
	tests := []struct {
		name      string
		cfg       Config
		wantGrace map[string]int64 // nil: no pod killed
		critical  []string
	}{
		{
			name:      "gate on, 30s with 10s for critical pods",
			cfg:       enabled(30*time.Second, 10*time.Second),
			wantGrace: map[string]int64{"web": 20, "short": 5, "long": 20, "static-etcd": 20, "dns": 10, "proxy": 3},
			critical:  []string{"dns", "proxy"},
		},
		{
			name: "gate off",
			// The wiring passes Enabled = gate && period > 0.
			cfg: Config{Enabled: false, ShutdownGracePeriod: 30 * time.Second, ShutdownGracePeriodCriticalPods: 10 * time.Second},
		},
		{
			name: "gate on, shutdownGracePeriod 0",
			cfg:  Config{Enabled: false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.cfg, pods())
			ctx, logs := e.ctx, e.logs
			if !e.m.Due(t0).IsZero() {
				t.Fatal("manager due before the shutdown signal")
			}
			e.m.Start()
			// Every pod stops at once: the shutdown completes without the clock moving.
			if !e.runUntil(t, ctx, t0) {
				t.Fatal("shutdown not done although every kill completed at once")
			}
			calls, trace := e.killer.snapshot()
			if tt.wantGrace == nil {
				if len(calls) != 0 || e.m.ShuttingDown() || e.m.ShutdownStatus() != nil || !e.m.Admit(pod("new", nil, nil)).Admit {
					t.Fatalf("disabled manager acted: calls=%v shuttingDown=%t status=%v", calls, e.m.ShuttingDown(), e.m.ShutdownStatus())
				}
				if len(e.store.List()) != 0 || e.synced != 0 {
					t.Errorf("disabled manager recorded events %v or synced node status", e.store.List())
				}
				return
			}
			got := map[string]int64{}
			for _, c := range calls {
				got[c.pod] = c.grace
				wantShutdownStatus(t, c)
			}
			if !reflect.DeepEqual(got, tt.wantGrace) {
				t.Errorf("grace periods = %v, want %v", got, tt.wantGrace)
			}
			// No critical pod is killed before every ordinary pod's kill completed.
			firstCritical, lastOrdinary := len(trace), -1
			for i, ev := range trace {
				name := ev[strings.Index(ev, ":")+1:]
				isCritical := contains(tt.critical, name)
				if isCritical && strings.HasPrefix(ev, "start:") && i < firstCritical {
					firstCritical = i
				}
				if !isCritical && strings.HasPrefix(ev, "end:") {
					lastOrdinary = i
				}
			}
			if firstCritical < lastOrdinary {
				t.Errorf("a critical pod was killed before the ordinary pods stopped: %v", trace)
			}
			if !e.m.ShuttingDown() || e.synced != 1 {
				t.Errorf("ShuttingDown = %t, SyncNodeStatus calls = %d; want true, 1", e.m.ShuttingDown(), e.synced)
			}
			evs := e.store.List()
			if len(evs) != 1 || evs[0].Reason != "Shutdown" || evs[0].Message != "Shutdown manager detected shutdown event" ||
				evs[0].InvolvedObject.Kind != "Node" || evs[0].InvolvedObject.Name != "node-a" || evs[0].Type != v1.EventTypeNormal {
				t.Errorf("events = %+v, want one Normal Shutdown event on node-a", evs)
			}
			for _, want := range []string{
				`Shutdown manager detected new shutdown event, isNodeShuttingDownNow event=true`,
				`Shutdown manager killing pod with gracePeriod pod="default/web" gracePeriod=20`,
				`Shutdown manager finished killing pod pod="default/dns"`,
				`Shutdown manager completed processing shutdown event, node will shutdown shortly`,
			} {
				if !strings.Contains(logs(), want) {
					t.Errorf("log lacks %s:\n%s", want, logs())
				}
			}
			// A second signal finds the work done: nothing is due, nobody is killed again.
			e.m.Start()
			if !e.m.Due(e.clk.Now()).IsZero() || !e.m.Step(ctx) {
				t.Error("a finished shutdown is due again")
			}
			if c, _ := e.killer.snapshot(); len(c) != len(calls) {
				t.Errorf("second signal killed again: %d calls, want %d", len(c), len(calls))
			}
		})
	}
}

func withClass(p *v1.Pod, class string) *v1.Pod {
	p.Spec.PriorityClassName = class
	return p
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestStubbornPodsAreCutOffAtTheirGroupDeadline(t *testing.T) {
	tests := []struct {
		name     string
		total    time.Duration
		critical time.Duration
		stubborn []string
		// wantCriticalAt: when the critical pod's kill starts; wantDoneAt: when the shutdown completes.
		wantCriticalAt, wantDoneAt time.Duration
		wantTimeouts               []string
	}{
		{
			name: "ordinary pod ignores SIGTERM", total: 30 * time.Second, critical: 10 * time.Second,
			stubborn: []string{"stuck"}, wantCriticalAt: 20 * time.Second, wantDoneAt: 20 * time.Second,
			wantTimeouts: []string{`Shutdown manager pod killing time out gracePeriod=20 priority=0 pods=["default/stuck"]`},
		},
		{
			name: "both groups ignore SIGTERM: the total period bounds the shutdown", total: 30 * time.Second, critical: 10 * time.Second,
			stubborn: []string{"stuck", "crit"}, wantCriticalAt: 20 * time.Second, wantDoneAt: 30 * time.Second,
			wantTimeouts: []string{
				`Shutdown manager pod killing time out gracePeriod=20 priority=0 pods=["default/stuck"]`,
				`Shutdown manager pod killing time out gracePeriod=10 priority=2000000000 pods=["default/crit"]`,
			},
		},
		{
			name: "no time for critical pods", total: 30 * time.Second, critical: 0,
			stubborn: []string{"stuck", "crit"}, wantCriticalAt: 30 * time.Second, wantDoneAt: 30 * time.Second,
			wantTimeouts: []string{
				`Shutdown manager pod killing time out gracePeriod=30 priority=0 pods=["default/stuck"]`,
				`Shutdown manager pod killing time out gracePeriod=0 priority=2000000000 pods=["default/crit"]`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := []*v1.Pod{pod("stuck", nil, nil), pod("quick", nil, nil), pod("crit", ptr.To[int32](SystemCriticalPriority), nil)}
			e := newEnv(t, enabled(tt.total, tt.critical), pods, tt.stubborn...)
			ctx, logs := e.ctx, e.logs

			if !e.m.Admit(pod("before", nil, nil)).Admit || e.m.ShutdownStatus() != nil {
				t.Fatal("node rejects pods or reports shutting down before any shutdown")
			}
			e.m.Start()
			ordinary := tt.total - tt.critical
			if e.runUntil(t, ctx, t0) {
				t.Fatal("shutdown done while a pod ignores SIGTERM")
			}
			if got := e.pendingPods(); !reflect.DeepEqual(got, []string{"stuck"}) {
				t.Fatalf("pending after the first step = %v, want [stuck]", got)
			}
			// The manager sleeps until the group's deadline, not in a busy loop.
			if due := e.m.Due(t0); !due.Equal(t0.Add(ordinary)) {
				t.Errorf("Due = %v, want the group deadline +%v", due, ordinary)
			}

			// While shutting down: new pods are rejected, Ready carries the message.
			if r := e.m.Admit(pod("late", nil, nil)); r.Admit || r.Reason != "NodeShutdown" || r.Message != "Pod was rejected as the node is shutting down." {
				t.Errorf("Admit while shutting down = %+v, want rejected NodeShutdown", r)
			}
			if err := e.m.ShutdownStatus(); err == nil || err.Error() != "node is shutting down" {
				t.Errorf("ShutdownStatus = %v, want node is shutting down", err)
			}

			e.runUntil(t, ctx, t0.Add(ordinary-time.Second))
			if _, ok := e.killer.call("crit"); ok {
				t.Fatalf("critical pod killed %v into an ordinary group of %v", ordinary-time.Second, ordinary)
			}
			e.runUntil(t, ctx, t0.Add(ordinary))
			c, ok := e.killer.call("crit")
			if !ok {
				t.Fatal("critical pod not killed once the ordinary group's time was up")
			}
			if got := c.at.Sub(t0); got != tt.wantCriticalAt {
				t.Errorf("critical pod killed at +%v, want +%v", got, tt.wantCriticalAt)
			}
			if c.grace != int64(tt.critical/time.Second) {
				t.Errorf("critical grace = %d, want %d", c.grace, int64(tt.critical/time.Second))
			}
			if tt.wantDoneAt > tt.wantCriticalAt {
				if e.runUntil(t, ctx, t0.Add(tt.wantDoneAt-time.Second)) {
					t.Fatal("shutdown done before the critical group's time was up")
				}
			}
			if !e.runUntil(t, ctx, t0.Add(tt.wantDoneAt)) {
				t.Fatalf("shutdown not done at +%v", tt.wantDoneAt)
			}
			for _, want := range tt.wantTimeouts {
				if !strings.Contains(logs(), want) {
					t.Errorf("log lacks %s:\n%s", want, logs())
				}
			}
			if strings.Contains(logs(), "Shutdown manager failed killing pod") {
				t.Errorf("a pod cut off at its deadline was logged as a failed kill:\n%s", logs())
			}
			// The node stays shut down.
			if e.m.Admit(pod("after", nil, nil)).Admit || e.m.ShutdownStatus() == nil {
				t.Error("node admits pods again after the shutdown")
			}
		})
	}
}

func TestGroupMovesOnWhenItsKillsComplete(t *testing.T) {
	pods := []*v1.Pod{pod("a", nil, nil), pod("b", ptr.To[int32](-10), nil), pod("crit", ptr.To[int32](2000001000), nil)}
	e := newEnv(t, enabled(30*time.Second, 10*time.Second), pods)
	for _, name := range []string{"a", "b", "crit"} {
		e.killer.held[name] = true
	}
	ctx := e.ctx

	if _, ok := e.m.NextDeadline(); ok {
		t.Fatal("NextDeadline before any shutdown")
	}
	if e.m.Step(ctx) {
		t.Fatal("Step without a shutdown signal completed a shutdown")
	}
	if c, _ := e.killer.snapshot(); len(c) != 0 {
		t.Fatalf("Step without a shutdown signal killed %v", c)
	}
	e.m.Start()
	select {
	case <-e.m.Wake().C():
	default:
		t.Fatal("Start did not wake the manager's loop")
	}
	if e.m.Step(ctx) {
		t.Fatal("first Step completed a shutdown with running pods")
	}
	if d, ok := e.m.NextDeadline(); !ok || !d.Equal(t0.Add(20*time.Second)) {
		t.Fatalf("NextDeadline = %v %t, want +20s", d, ok)
	}
	if c, _ := e.killer.snapshot(); len(c) != 2 {
		t.Fatalf("kills after the first step = %v, want the two ordinary pods", c)
	}
	// Nothing completed, deadline not reached: not due, and a Step makes no progress.
	e.clk.Step(5 * time.Second)
	if due := e.m.Due(e.clk.Now()); !due.Equal(t0.Add(20 * time.Second)) {
		t.Fatalf("Due with kills outstanding = %v, want the deadline", due)
	}
	if e.m.Step(ctx) {
		t.Fatal("Step completed while kills were outstanding")
	}
	e.killer.release("a")
	if due := e.m.Due(e.clk.Now()); due.Equal(e.clk.Now()) {
		t.Fatal("due now with one of two kills outstanding")
	}
	e.killer.release("b")
	select {
	case <-e.m.Wake().C():
	default:
		t.Fatal("a completed kill did not wake the manager's loop")
	}
	if due := e.m.Due(e.clk.Now()); !due.Equal(e.clk.Now()) {
		t.Fatalf("Due once the group's kills completed = %v, want now", due)
	}
	if e.m.Step(ctx) {
		t.Fatal("Step completed before the critical group ran")
	}
	if d, _ := e.m.NextDeadline(); !d.Equal(t0.Add(15 * time.Second)) {
		t.Fatalf("critical group deadline = %v, want +15s (started at +5s, 10s long)", d)
	}
	select {
	case <-e.m.Done():
		t.Fatal("Done closed during the shutdown")
	default:
	}
	e.killer.release("crit")
	if !e.m.Step(ctx) {
		t.Fatal("Step did not complete once every pod stopped")
	}
	<-e.m.Done()
	if !e.m.Step(ctx) || !e.m.Due(e.clk.Now()).IsZero() {
		t.Fatal("a completed shutdown reports work left")
	}
}

func TestStopAbortsTheShutdown(t *testing.T) {
	e := newEnv(t, enabled(30*time.Second, 10*time.Second), []*v1.Pod{pod("stuck", nil, nil)}, "stuck")
	ctx := e.ctx
	e.m.Start()
	if e.runUntil(t, ctx, t0.Add(time.Second)) {
		t.Fatal("shutdown done while a pod ignores SIGTERM")
	}
	e.m.Stop()
	select {
	case <-e.m.Done():
	default:
		t.Fatal("Done not closed by Stop")
	}
	if !e.m.Due(e.clk.Now()).IsZero() {
		t.Error("an aborted shutdown is still due")
	}
	if !e.m.ShuttingDown() {
		t.Error("an aborted shutdown left the node admitting pods")
	}
	e.m.Stop() // idempotent
}

func TestFailedKillIsLoggedAndDoesNotBlock(t *testing.T) {
	e := newEnv(t, enabled(30*time.Second, 10*time.Second), []*v1.Pod{pod("gone", nil, nil)})
	e.m.cfg.KillPod = func(*v1.Pod, int64, func(*v1.PodStatus)) (*task.Op, error) {
		return nil, fmt.Errorf("pod worker not found")
	}
	ctx, logs := e.ctx, e.logs
	e.m.Start()
	if !e.runUntil(t, ctx, t0) {
		t.Fatal("a kill that could not be requested held up the shutdown")
	}
	if want := `Shutdown manager failed killing pod pod="default/gone" err="pod worker not found"`; !strings.Contains(logs(), want) {
		t.Errorf("log lacks %s:\n%s", want, logs())
	}
}

func TestKillCompletingWithErrorIsLogged(t *testing.T) {
	e := newEnv(t, enabled(30*time.Second, 10*time.Second), []*v1.Pod{pod("broken", nil, nil)})
	e.m.cfg.KillPod = func(*v1.Pod, int64, func(*v1.PodStatus)) (*task.Op, error) {
		return task.Completed(fmt.Errorf("stop container: runtime unavailable")), nil
	}
	ctx, logs := e.ctx, e.logs
	e.m.Start()
	if !e.runUntil(t, ctx, t0) {
		t.Fatal("a failed kill held up the shutdown")
	}
	if want := `Shutdown manager failed killing pod pod="default/broken" err="stop container: runtime unavailable"`; !strings.Contains(logs(), want) {
		t.Errorf("log lacks %s:\n%s", want, logs())
	}
}

func TestPlanGroupsByPriority(t *testing.T) {
	tests := []struct {
		name                   string
		total, critical        time.Duration
		pods                   []*v1.Pod
		wantOrdinary, wantCrit []string
		wantSeconds            [2]int64
	}{
		{
			name: "boundaries", total: 30 * time.Second, critical: 10 * time.Second,
			pods: []*v1.Pod{
				pod("none", nil, nil), pod("negative", ptr.To[int32](-5), nil), pod("zero", ptr.To[int32](0), nil),
				pod("high-user", ptr.To[int32](1999999999), nil), pod("cluster-critical", ptr.To[int32](2000000000), nil),
				pod("node-critical", ptr.To[int32](2000001000), nil), withClass(pod("class-only", nil, nil), "system-cluster-critical"),
			},
			wantOrdinary: []string{"none", "negative", "zero", "high-user", "class-only"},
			wantCrit:     []string{"cluster-critical", "node-critical"},
			wantSeconds:  [2]int64{20, 10},
		},
		{
			// Upstream keeps whole seconds of each part.
			name: "sub-second parts are truncated", total: 1500 * time.Millisecond, critical: time.Second,
			pods: []*v1.Pod{pod("a", nil, nil)}, wantOrdinary: []string{"a"}, wantSeconds: [2]int64{0, 1},
		},
		{
			name: "everything for ordinary pods", total: 45 * time.Second, critical: 0,
			wantSeconds: [2]int64{45, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewManager(Config{Clock: testingclock.NewFakeClock(t0), Enabled: true, ShutdownGracePeriod: tt.total, ShutdownGracePeriodCriticalPods: tt.critical,
				GetPods: func() []*v1.Pod { return nil }, KillPod: func(*v1.Pod, int64, func(*v1.PodStatus)) (*task.Op, error) { return task.Completed(nil), nil }})
			if err != nil {
				t.Fatal(err)
			}
			groups := m.Plan(tt.pods)
			if len(groups) != 2 || groups[0].Priority != 0 || groups[1].Priority != SystemCriticalPriority {
				t.Fatalf("groups = %+v, want priorities 0 and %d", groups, SystemCriticalPriority)
			}
			if got := [2]int64{groups[0].ShutdownGracePeriodSeconds, groups[1].ShutdownGracePeriodSeconds}; got != tt.wantSeconds {
				t.Errorf("group seconds = %v, want %v", got, tt.wantSeconds)
			}
			if got := names(groups[0].Pods); !reflect.DeepEqual(got, tt.wantOrdinary) {
				t.Errorf("ordinary group = %v, want %v", got, tt.wantOrdinary)
			}
			if got := names(groups[1].Pods); !reflect.DeepEqual(got, tt.wantCrit) {
				t.Errorf("critical group = %v, want %v", got, tt.wantCrit)
			}
		})
	}
	disabled, _ := NewManager(Config{Clock: testingclock.NewFakeClock(t0)})
	if g := disabled.Plan([]*v1.Pod{pod("a", nil, nil)}); g != nil {
		t.Errorf("disabled Plan = %+v, want nil", g)
	}
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPodStatusFunc(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	m, err := NewManager(Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	tests := []struct {
		name      string
		in        v1.PodStatus
		wantPhase v1.PodPhase
		wantLTT   metav1.Time
		wantConds int
	}{
		{"running pod fails", v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}, v1.PodFailed, metav1.NewTime(t0), 2},
		{"succeeded pod stays succeeded", v1.PodStatus{Phase: v1.PodSucceeded}, v1.PodSucceeded, metav1.NewTime(t0), 1},
		{"existing true condition keeps its transition time", v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI", LastTransitionTime: earlier}}}, v1.PodFailed, earlier, 1},
		{"existing false condition flips now", v1.PodStatus{Phase: v1.PodPending, Conditions: []v1.PodCondition{
			{Type: v1.DisruptionTarget, Status: v1.ConditionFalse, LastTransitionTime: earlier}}}, v1.PodFailed, metav1.NewTime(t0), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.in
			m.podStatusFunc(&v1.Pod{}, &s)
			if s.Phase != tt.wantPhase || s.Reason != PodReason || s.Message != PodMessage || len(s.Conditions) != tt.wantConds {
				t.Fatalf("status = %+v", s)
			}
			for _, c := range s.Conditions {
				if c.Type == v1.DisruptionTarget && (c.Reason != v1.PodReasonTerminationByKubelet || !c.LastTransitionTime.Equal(&tt.wantLTT)) {
					t.Errorf("DisruptionTarget = %+v, want reason TerminationByKubelet at %v", c, tt.wantLTT)
				}
			}
		})
	}
}

// TestPodStatusFuncObservedGeneration: the DisruptionTarget condition carries the pod's
// generation, as v1.37's shutdown manager (nodeshutdown_manager.go:166-172) writes it with
// CalculatePodConditionObservedGeneration.
func TestPodStatusFuncObservedGeneration(t *testing.T) {
	tests := []struct {
		name       string
		tracking   bool
		generation int64
		in         []v1.PodCondition
		want       int64
	}{
		{"gate on: the pod's generation", true, 4, nil, 4},
		{"gate on, first generation", true, 1, nil, 1},
		{"gate on, an older value is replaced", true, 4, []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: 2}}, 4},
		{"gate off: none", false, 4, nil, 0},
		{"gate off, a condition that had one keeps tracking", false, 4, []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionFalse, ObservedGeneration: 2}}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewManager(Config{Clock: testingclock.NewFakeClock(t0), PodObservedGenerationTracking: tt.tracking})
			if err != nil {
				t.Fatal(err)
			}
			s := v1.PodStatus{Phase: v1.PodRunning, Conditions: tt.in}
			m.podStatusFunc(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: tt.generation}}, &s)
			var got []int64
			for _, c := range s.Conditions {
				if c.Type == v1.DisruptionTarget {
					got = append(got, c.ObservedGeneration)
				}
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("DisruptionTarget observedGeneration = %v, want [%d]", got, tt.want)
			}
		})
	}
}

func TestNewManagerValidation(t *testing.T) {
	getPods := func() []*v1.Pod { return nil }
	kill := func(*v1.Pod, int64, func(*v1.PodStatus)) (*task.Op, error) { return task.Completed(nil), nil }
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"disabled needs nothing", Config{}, ""},
		{"valid", Config{Enabled: true, ShutdownGracePeriod: 30 * time.Second, ShutdownGracePeriodCriticalPods: 10 * time.Second, GetPods: getPods, KillPod: kill}, ""},
		{"critical over total", Config{Enabled: true, ShutdownGracePeriod: 10 * time.Second, ShutdownGracePeriodCriticalPods: 20 * time.Second, GetPods: getPods, KillPod: kill},
			"shutdownGracePeriodCriticalPods 20s: must be <= shutdownGracePeriod 10s"},
		{"negative critical", Config{Enabled: true, ShutdownGracePeriod: 10 * time.Second, ShutdownGracePeriodCriticalPods: -time.Second, GetPods: getPods, KillPod: kill},
			"shutdownGracePeriodCriticalPods -1s: must not be negative"},
		{"enabled with zero period", Config{Enabled: true, GetPods: getPods, KillPod: kill}, "shutdownGracePeriod 0s: must be greater than 0"},
		{"enabled without funcs", Config{Enabled: true, ShutdownGracePeriod: time.Minute}, "KillPod: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Clock = testingclock.NewFakeClock(t0)
			m, err := NewManager(tt.cfg)
			if tt.wantErr == "" {
				if err != nil || m == nil {
					t.Fatalf("NewManager = %v, %v", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewManager error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestStopIsIdempotentWithoutShutdown(t *testing.T) {
	m, err := NewManager(Config{Clock: testingclock.NewFakeClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	m.Stop()
	m.Stop()
	if m.ShuttingDown() {
		t.Error("Stop marked the node shutting down")
	}
}

func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{110, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			pods := make([]*v1.Pod, n)
			for i := range pods {
				var prio *int32
				if i%10 == 0 {
					prio = ptr.To[int32](SystemCriticalPriority)
				}
				pods[i] = pod(fmt.Sprintf("p%d", i), prio, nil)
			}
			m, err := NewManager(Config{Enabled: true, ShutdownGracePeriod: 30 * time.Second, ShutdownGracePeriodCriticalPods: 10 * time.Second,
				GetPods: func() []*v1.Pod { return pods }, KillPod: func(*v1.Pod, int64, func(*v1.PodStatus)) (*task.Op, error) { return task.Completed(nil), nil },
				Logger: klog.Background().V(100)})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = m.Plan(pods)
			}
		})
	}
}
