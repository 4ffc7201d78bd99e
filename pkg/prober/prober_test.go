package prober

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/prober/results"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// statuses is the status manager stand-in: the pod statuses the probes read.
type statuses map[types.UID]v1.PodStatus

func (s statuses) GetPodStatus(uid types.UID) (v1.PodStatus, bool) { st, ok := s[uid]; return st, ok }

// execs is the runtime stand-in: each ExecSync answers with err after delay on the clock
// (a pending operation completed by the test's loop), and records the call.
type execs struct {
	clk   *testingclock.FakeClock
	err   error
	resp  cri.ExecSyncResponse // what a call answers when err is nil
	delay time.Duration
	calls []string
	ops   []pendingExec
}

type pendingExec struct {
	at time.Time
	op *task.Op
}

func (e *execs) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*cri.ExecSyncResponse, error) {
	e.calls = append(e.calls, id+": "+strings.Join(cmd, " "))
	if e.delay > 0 {
		op := task.NewOp()
		e.ops = append(e.ops, pendingExec{e.clk.Now().Add(e.delay), op})
		if err := task.Await(ctx, op); err != nil {
			return nil, err
		}
	}
	if e.err != nil {
		return nil, e.err
	}
	resp := e.resp
	return &resp, nil
}

func (e *execs) loop() runner.Loop {
	return runner.Loop{Name: "runtime", Due: func(time.Time) time.Time {
		if len(e.ops) == 0 {
			return time.Time{}
		}
		return e.ops[0].at
	}, Step: func(context.Context) {
		for len(e.ops) > 0 && !e.ops[0].at.After(e.clk.Now()) {
			op := e.ops[0].op
			e.ops = e.ops[1:]
			op.Complete(nil)
		}
	}}
}

type env struct {
	t        *testing.T
	clk      *testingclock.FakeClock
	status   statuses
	exec     *execs
	live     *results.Manager
	ready    *results.Manager
	startup  *results.Manager
	store    *events.Store
	reg      *metrics.Registry
	m        *Manager
	sim      *runner.Sim
	started0 time.Time
}

// newEnv makes a prober whose kubelet started long ago (no random initial delay) unless
// fresh.
func newEnv(t *testing.T, fresh bool) *env {
	t.Helper()
	return newEnvWith(t, fresh, func(*Config) {})
}

// newEnvWith is newEnv with a change to the manager's configuration.
func newEnvWith(t *testing.T, fresh bool, change func(*Config)) *env {
	t.Helper()
	clk := simtest.NewClock()
	e := &env{t: t, clk: clk, status: statuses{}, exec: &execs{clk: clk},
		live: results.NewManager(nil), ready: results.NewManager(nil), startup: results.NewManager(nil),
		store: events.NewStore(clk, "node", 0), reg: metrics.NewRegistry("")}
	cfg := Config{Clock: clk, Status: e.status, Runtime: e.exec, Liveness: e.live, Readiness: e.ready,
		Startup: e.startup, Recorder: e.store, Registry: e.reg, Seed: 1}
	change(&cfg)
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !fresh {
		m.start = clk.Now().Add(-time.Hour)
	}
	t.Cleanup(m.Stop)
	e.m = m
	e.sim = runner.NewSim(clk, []runner.Loop{e.exec.loop(), {Name: "prober", Due: m.Due, Step: m.Step, Wake: m.Wake()}})
	return e
}

func (e *env) run(d time.Duration) {
	e.t.Helper()
	if err := e.sim.RunUntil(task.WithoutBlocking(context.Background()), e.clk.Now().Add(d), nil); err != nil {
		e.t.Fatal(err)
	}
}

// pod is a one-container pod "p" with the given probes and behaviour script.
func pod(script string, live, ready, startup *v1.Probe) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{
			Name: "c", Image: "i", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			LivenessProbe: live, ReadinessProbe: ready, StartupProbe: startup,
		}}},
	}
	if script != "" {
		p.Annotations = map[string]string{behavior.AnnotationKey("c"): script}
	}
	return p
}

func execProbe(period, threshold int32) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}}, PeriodSeconds: period, FailureThreshold: threshold}
}

func httpProbe(period int32) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, PeriodSeconds: period}
}

// running marks container c running since startedAgo, with the given id and started flag.
func (e *env) running(p *v1.Pod, id string, startedAgo time.Duration, started bool) {
	e.status[p.UID] = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.5", ContainerStatuses: []v1.ContainerStatus{{
		Name: "c", ContainerID: "fake://" + id, Started: &started,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(e.clk.Now().Add(-startedAgo))}},
	}}}
}

func (e *env) result(m *results.Manager, id string) string {
	r, ok := m.Get(id)
	if !ok {
		return "none"
	}
	return r.String()
}

func (e *env) eventMessages(reason string) []string {
	var out []string
	for _, ev := range e.store.List() {
		if ev.Reason == reason {
			out = append(out, ev.Message)
		}
	}
	return out
}

func TestInitialResultsAndThresholds(t *testing.T) {
	tests := []struct {
		name   string
		probe  func(*v1.Pod) *results.Manager
		spec   *v1.Probe
		script string
		// want is the result after each 10s period (probes at 0s, 10s, 20s, ...).
		want []string
	}{
		{name: "readiness starts failed, one success makes it ready", spec: execProbe(10, 3),
			want: []string{"Success", "Success"}},
		{name: "readiness failing 25s: failed until the first passing probe", spec: execProbe(10, 3), script: "readinessFailFor=25s",
			want: []string{"Failure", "Failure", "Failure", "Success"}},
		{name: "liveness starts passing, fails after failureThreshold failures", spec: execProbe(10, 3), script: "livenessFailAfter=15s",
			want: []string{"Success", "Success", "Success", "Success", "Failure"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			var p *v1.Pod
			var m *results.Manager
			if strings.HasPrefix(tt.name, "liveness") {
				p, m = pod(tt.script, tt.spec, nil, nil), e.live
			} else {
				p, m = pod(tt.script, nil, tt.spec, nil), e.ready
			}
			e.running(p, "c1", 0, true)
			e.m.AddPod(p)
			var got []string
			for range tt.want {
				e.run(0) // the probe due now
				got = append(got, e.result(m, "c1"))
				e.run(10*time.Second - time.Millisecond)
				e.clk.Step(time.Millisecond)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("results %v, want %v", got, tt.want)
			}
		})
	}
}

func TestInitialValues(t *testing.T) {
	e := newEnv(t, false)
	p := pod("", execProbe(10, 3), execProbe(10, 3), execProbe(10, 3))
	// Not started: only the startup probe runs; each worker set its initial value when it
	// saw the container (upstream: liveness Success, readiness Failure, startup Unknown).
	e.running(p, "c1", 0, false)
	e.exec.err = errors.New("runtime unavailable") // the startup probe errors: its result stays
	e.m.AddPod(p)
	e.run(0)
	for _, c := range []struct {
		m    *results.Manager
		want string
	}{{e.live, "Success"}, {e.ready, "Failure"}, {e.startup, "UNKNOWN"}} {
		if got := e.result(c.m, "c1"); got != c.want {
			t.Errorf("result = %s, want %s", got, c.want)
		}
	}
	if msgs := e.eventMessages(EventUnhealthy); len(msgs) != 1 || msgs[0] != "Startup probe errored and resulted in unknown state: runtime unavailable" {
		t.Errorf("Unhealthy events %q, want the startup probe's error", msgs)
	}
}

// TestErroredProbe: a probe that could not run records upstream v1.37's event
// (prober.go:107-108) and leaves the result and the metrics alone: the worker throws the
// result away before counting it (worker.go:349-352).
func TestErroredProbe(t *testing.T) {
	tests := []struct {
		name      string
		probe     func(*v1.Probe) *v1.Pod
		results   func(*env) *results.Manager
		wantEvent string
		// wantResult is the worker's initial value, which an error keeps.
		wantResult string
	}{
		{"liveness", func(p *v1.Probe) *v1.Pod { return pod("", p, nil, nil) }, func(e *env) *results.Manager { return e.live },
			"Liveness probe errored and resulted in unknown state: runtime unavailable", "Success"},
		{"readiness", func(p *v1.Probe) *v1.Pod { return pod("", nil, p, nil) }, func(e *env) *results.Manager { return e.ready },
			"Readiness probe errored and resulted in unknown state: runtime unavailable", "Failure"},
		{"startup", func(p *v1.Probe) *v1.Pod { return pod("", nil, nil, p) }, func(e *env) *results.Manager { return e.startup },
			"Startup probe errored and resulted in unknown state: runtime unavailable", "UNKNOWN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			p := tt.probe(execProbe(10, 1))
			e.running(p, "c1", 0, tt.name != "startup")
			e.exec.err = errors.New("runtime unavailable")
			e.m.AddPod(p)
			e.run(25 * time.Second) // probes at 0, 10 and 20s
			if len(e.exec.calls) != 3 {
				t.Errorf("exec calls %q, want 3", e.exec.calls)
			}
			// The store aggregates the three into one event.
			if msgs := e.eventMessages(EventUnhealthy); len(msgs) != 1 || msgs[0] != tt.wantEvent {
				t.Errorf("Unhealthy events %q, want [%q]", msgs, tt.wantEvent)
			}
			if got := e.result(tt.results(e), "c1"); got != tt.wantResult {
				t.Errorf("result = %s, want %s (the initial value)", got, tt.wantResult)
			}
			if n := testutil.CollectAndCount(e.m.total); n != 0 {
				t.Errorf("prober_probe_total has %d series, want none for errored probes", n)
			}
			if n := testutil.CollectAndCount(e.m.duration); n != 0 {
				t.Errorf("prober_probe_duration_seconds has %d series, want none for errored probes", n)
			}
		})
	}
}

// TestStartupProbeHoldsOnceSettled: once a startup probe's result reached its threshold,
// success or failure, the worker stops probing until the container is replaced, as v1.37's
// worker (worker.go:381); here the status keeps saying the container has not started.
func TestStartupProbeHoldsOnceSettled(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		wantResult string
	}{
		{"success", "", "Success"},
		{"failure", "startupFailFor=1h", "Failure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			p := pod(tt.script, nil, nil, execProbe(5, 1))
			e.running(p, "c1", 0, false)
			e.m.AddPod(p)
			e.run(30 * time.Second)
			if len(e.exec.calls) != 1 {
				t.Errorf("exec calls %q, want one probe and then none until a new container", e.exec.calls)
			}
			if got := e.result(e.startup, "c1"); got != tt.wantResult {
				t.Errorf("startup = %s, want %s", got, tt.wantResult)
			}
			e.running(p, "c2", 0, false) // a new container resumes the probe
			e.run(10 * time.Second)
			if len(e.exec.calls) != 2 || e.exec.calls[1] != "c2: check" {
				t.Errorf("exec calls %q, want one more for the new container", e.exec.calls)
			}
		})
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	e := newEnv(t, false)
	p := pod("startupFailFor=15s", execProbe(10, 3), execProbe(10, 3), execProbe(5, 10))
	e.running(p, "c1", 0, false)
	e.m.AddPod(p)
	e.run(16 * time.Second) // startup probes at 0, 5, 10 fail; 15 passes
	if got := e.result(e.startup, "c1"); got != "Success" {
		t.Fatalf("startup = %s, want Success once it passed", got)
	}
	for _, c := range e.exec.calls {
		if !strings.HasPrefix(c, "c1: check") {
			t.Fatalf("unexpected exec %q", c)
		}
	}
	if n := len(e.exec.calls); n != 4 {
		t.Fatalf("%d execs before the container started, want only the 4 startup probes", n)
	}
	// The status manager now reports it started: liveness and readiness begin.
	e.running(p, "c1", 16*time.Second, true)
	e.run(10 * time.Second)
	if e.result(e.ready, "c1") != "Success" || e.result(e.live, "c1") != "Success" {
		t.Errorf("after start: readiness %s, liveness %s; want both Success", e.result(e.ready, "c1"), e.result(e.live, "c1"))
	}
}

func TestLivenessFailureHoldsUntilANewContainer(t *testing.T) {
	e := newEnv(t, false)
	p := pod("livenessFailAfter=0s", execProbe(10, 1), nil, nil)
	e.running(p, "c1", 0, true)
	e.m.AddPod(p)
	e.run(0)
	if got := e.result(e.live, "c1"); got != "Failure" {
		t.Fatalf("liveness = %s, want Failure", got)
	}
	calls := len(e.exec.calls)
	e.run(time.Minute)
	if len(e.exec.calls) != calls {
		t.Fatalf("the worker kept probing the failed container: %d more execs", len(e.exec.calls)-calls)
	}
	// The kubelet restarted it: a new container ID resets the result to its initial value.
	e.running(p, "c2", 0, true)
	e.run(10 * time.Second)
	if got := e.result(e.live, "c2"); got != "Failure" { // livenessFailAfter=0s fails again
		t.Fatalf("new container liveness = %s, want probed again (Failure)", got)
	}
	if _, ok := e.live.Get("c1"); ok {
		t.Error("the old container's result was not removed")
	}
	want := "Liveness probe failed: probe scripted to fail by minikubelet.io/behavior.c"
	if msgs := e.eventMessages(EventUnhealthy); len(msgs) == 0 || msgs[0] != want {
		t.Errorf("Unhealthy events %q, want %q", msgs, want)
	}
}

func TestInitialDelaySeconds(t *testing.T) {
	e := newEnv(t, false)
	spec := execProbe(10, 3)
	spec.InitialDelaySeconds = 25
	p := pod("", nil, spec, nil)
	e.running(p, "c1", 0, true)
	e.m.AddPod(p)
	e.run(21 * time.Second) // probes at 0, 10, 20: all within the initial delay
	if len(e.exec.calls) != 0 || e.result(e.ready, "c1") != "Failure" {
		t.Fatalf("during the initial delay: %d execs, readiness %s; want none and the initial Failure", len(e.exec.calls), e.result(e.ready, "c1"))
	}
	e.run(10 * time.Second) // the probe at 30s
	if len(e.exec.calls) != 1 || e.result(e.ready, "c1") != "Success" {
		t.Fatalf("after the initial delay: %d execs, readiness %s", len(e.exec.calls), e.result(e.ready, "c1"))
	}
}

func TestRandomInitialDelayAfterKubeletStart(t *testing.T) {
	e := newEnv(t, true)
	p := pod("", nil, execProbe(10, 3), nil)
	e.running(p, "c1", 0, true)
	e.m.AddPod(p)
	due := e.m.Due(e.clk.Now())
	if d := due.Sub(e.clk.Now()); d <= 0 || d >= 10*time.Second {
		t.Fatalf("first probe in %v, want a random part of the 10s period", d)
	}
}

func TestExecTimeoutIsAFailure(t *testing.T) {
	e := newEnv(t, false)
	e.exec.err = fmt.Errorf("timeout 1s exceeded: %w", cri.ErrDeadlineExceeded)
	e.exec.delay = time.Second
	p := pod("", execProbe(10, 1), nil, nil)
	e.running(p, "c1", 0, true)
	e.m.AddPod(p)
	e.run(500 * time.Millisecond)
	if e.result(e.live, "c1") != "Success" {
		t.Fatal("the probe answered before the runtime did")
	}
	e.run(time.Second)
	if got := e.result(e.live, "c1"); got != "Failure" {
		t.Fatalf("liveness = %s, want Failure after a timed out exec", got)
	}
	if msgs := e.eventMessages(EventUnhealthy); len(msgs) != 1 || msgs[0] != `Liveness probe failed: command "check" timed out` {
		t.Errorf("Unhealthy events %q", msgs)
	}
}

// TestExecExitCodeIsTheAnswer: a command that exits non-zero fails the probe with its
// output as the failure's message, as the kubelet's exec prober.
func TestExecExitCodeIsTheAnswer(t *testing.T) {
	e := newEnv(t, false)
	e.exec.resp = cri.ExecSyncResponse{Stdout: []byte("partial\n"), Stderr: []byte("cat: /tmp/healthy: No such file or directory\n"), ExitCode: 1}
	p := pod("", execProbe(10, 1), nil, nil)
	e.running(p, "c1", 0, true)
	e.m.AddPod(p)
	e.run(time.Second)
	if got := e.result(e.live, "c1"); got != "Failure" {
		t.Fatalf("liveness = %s, want Failure after exit code 1", got)
	}
	want := "Liveness probe failed: partial\ncat: /tmp/healthy: No such file or directory\n"
	if msgs := e.eventMessages(EventUnhealthy); len(msgs) != 1 || msgs[0] != want {
		t.Errorf("Unhealthy events %q, want [%q]", msgs, want)
	}
}

func TestNetworkProbeOutputs(t *testing.T) {
	tests := []struct {
		name    string
		handler v1.ProbeHandler
		script  string
		want    string
	}{
		{"http failure", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, "livenessFailAfter=0s",
			"Liveness probe failed: HTTP probe failed with statuscode: 503"},
		{"http timeout", v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "healthz", Port: intstr.FromInt32(8080)}}, "probeDelay=3s",
			`Liveness probe failed: Get "http://10.88.0.5:8080/healthz": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`},
		{"tcp failure", v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(5432)}}, "livenessFailAfter=0s",
			"Liveness probe failed: dial tcp 10.88.0.5:5432: connect: connection refused"},
		{"tcp timeout", v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(5432)}}, "probeDelay=2s",
			"Liveness probe failed: dial tcp 10.88.0.5:5432: i/o timeout"},
		{"grpc failure", v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9090}}, "livenessFailAfter=0s",
			`Liveness probe failed: service unhealthy (responded with "NOT_SERVING")`},
		{"named port missing", v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("grpc")}}, "",
			"Liveness probe errored and resulted in unknown state: couldn't find port: grpc in c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			p := pod(tt.script, &v1.Probe{ProbeHandler: tt.handler, PeriodSeconds: 10, FailureThreshold: 1}, nil, nil)
			e.running(p, "c1", 0, true)
			e.m.AddPod(p)
			e.run(5 * time.Second)
			if msgs := e.eventMessages(EventUnhealthy); len(msgs) != 1 || msgs[0] != tt.want {
				t.Errorf("Unhealthy events %q, want %q", msgs, tt.want)
			}
		})
	}
}

func TestUpdatePodStatus(t *testing.T) {
	e := newEnv(t, false)
	p := pod("readinessFailFor=1h", nil, httpProbe(10), nil)
	e.running(p, "c1", 0, true)
	st := e.status[p.UID]
	e.m.UpdatePodStatus(p, &st)
	if cs := st.ContainerStatuses[0]; !*cs.Started || !cs.Ready {
		t.Fatalf("without workers: started %t ready %t, want both (no probes)", *cs.Started, cs.Ready)
	}
	e.m.AddPod(p)
	e.run(0)
	e.m.UpdatePodStatus(p, &st)
	if cs := st.ContainerStatuses[0]; !*cs.Started || cs.Ready {
		t.Fatalf("with a failing readiness probe: started %t ready %t, want started, not ready", *cs.Started, cs.Ready)
	}
	e.ready.Set("c1", results.Success, p.UID)
	e.m.UpdatePodStatus(p, &st)
	if !st.ContainerStatuses[0].Ready {
		t.Fatal("readiness Success did not make the container ready")
	}
}

func TestWorkersStopAndMetricsGo(t *testing.T) {
	e := newEnv(t, false)
	p := pod("", execProbe(10, 3), execProbe(10, 3), nil)
	e.running(p, "c1", 0, true)
	e.m.AddPod(p)
	e.m.AddPod(p) // every sync adds the pod again: no second worker
	if n := e.m.Workers(); n != 2 {
		t.Fatalf("%d workers, want 2", n)
	}
	e.run(0)
	if n := testutil.CollectAndCount(e.reg, "prober_probe_total"); n != 2 {
		t.Fatalf("%d prober_probe_total series, want 2", n)
	}
	e.m.StopLivenessAndStartup(p)
	if n := e.m.Workers(); n != 1 {
		t.Fatalf("%d workers after StopLivenessAndStartup, want readiness only", n)
	}
	// A terminal pod stops its workers by itself.
	st := e.status[p.UID]
	st.Phase = v1.PodSucceeded
	e.status[p.UID] = st
	e.run(10 * time.Second)
	if n := e.m.Workers(); n != 0 {
		t.Fatalf("%d workers for a terminated pod", n)
	}
	if n := testutil.CollectAndCount(e.reg, "prober_probe_total"); n != 0 {
		t.Errorf("%d prober_probe_total series left after the workers stopped", n)
	}
	if _, ok := e.ready.Get("c1"); ok {
		t.Error("a stopped worker left its result")
	}
}

// TestReadinessRunsAsSoonAsStarted: a readiness probe whose ticks came while the container
// had not started (and so did not probe) runs at once when the status says it started, as
// upstream's manual trigger makes it, not a period later.
func TestReadinessRunsAsSoonAsStarted(t *testing.T) {
	e := newEnv(t, false)
	p := pod("", nil, execProbe(30, 3), execProbe(5, 120))
	e.running(p, "c1", 0, false)
	e.m.AddPod(p)
	e.run(40 * time.Second) // readiness ticks at 0 and 30 skip: not started
	if got := e.result(e.ready, "c1"); got != "Failure" {
		t.Fatalf("readiness = %s before the start, want its initial Failure", got)
	}
	e.running(p, "c1", 40*time.Second, true)
	s := e.status[p.UID]
	e.m.UpdatePodStatus(p, &s)
	e.run(time.Second)
	if got := e.result(e.ready, "c1"); got != "Success" {
		t.Errorf("readiness = %s a second after the start, want Success (probed at once, not at 60s)", got)
	}
}
