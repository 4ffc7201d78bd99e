package fake

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
	"github.com/minikubelet/minikubelet/pkg/task"
)

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

// logSink records log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logger() funcr.Options { return funcr.Options{Verbosity: 2} }

func (l *logSink) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, args)
}

func (l *logSink) contains(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}

func TestFaultAPI(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	if _, err := r.AddFault(fault.Spec{Method: "ListPods", Type: fault.Error}); err == nil || !strings.Contains(err.Error(), `unknown runtime method "ListPods"`) {
		t.Errorf("AddFault with a bad method: %v", err)
	}
	a, err := r.AddFault(fault.Spec{Method: "ListPodSandbox", Type: fault.Error})
	if err != nil || a.ID != "fault-1" {
		t.Fatalf("AddFault = %+v, %v; want id fault-1", a, err)
	}
	b, err := r.AddFault(fault.Spec{ID: "mine", Method: "*", Type: fault.Latency, Delay: dur(time.Second)})
	if err != nil || b.ID != "mine" {
		t.Fatalf("AddFault with an id = %+v, %v", b, err)
	}
	if _, err := r.AddFault(fault.Spec{ID: "mine", Method: "*", Type: fault.Hang}); err == nil || !strings.Contains(err.Error(), `"mine" is already in use`) {
		t.Errorf("AddFault with a used id: %v", err)
	}
	c, _ := r.AddFault(fault.Spec{Method: "Status", Type: fault.NotReady, Condition: cri.NetworkReady})
	if c.ID != "fault-2" {
		t.Errorf("third fault id = %q, want fault-2", c.ID)
	}
	ids := func() string {
		var out []string
		for _, f := range r.Faults() {
			out = append(out, f.ID)
		}
		return strings.Join(out, ",")
	}
	if got := ids(); got != "fault-1,mine,fault-2" {
		t.Errorf("Faults() = %s", got)
	}
	if err := r.RemoveFault("mine"); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveFault("mine"); !errors.Is(err, ErrFaultNotFound) {
		t.Errorf("removing twice: %v, want ErrFaultNotFound", err)
	}
	if got := ids(); got != "fault-1,fault-2" {
		t.Errorf("Faults() after remove = %s", got)
	}
	r.ClearFaults()
	if got := ids(); got != "" {
		t.Errorf("Faults() after clear = %s", got)
	}
	if _, err := r.ListPodSandbox(context.Background(), nil); err != nil {
		t.Errorf("ListPodSandbox after clear: %v", err)
	}
}

// TestStartupFaults: faults from the SimulatorConfiguration (Config.Faults) are in force
// before the first call, with ids in their order.
func TestStartupFaults(t *testing.T) {
	ctx := context.Background()
	r, _ := newRuntime(t, Config{Faults: []fault.Spec{
		{Method: "Status", Type: fault.NotReady, Condition: cri.RuntimeReady},
		{Method: "ListPodSandbox", Type: fault.Error, Count: 1, Message: "boot"},
		{ID: "no-stream", Method: "GetContainerEvents", Type: fault.StreamError},
	}})
	var ids []string
	for _, f := range r.Faults() {
		ids = append(ids, f.ID)
	}
	if got := strings.Join(ids, ","); got != "fault-1,fault-2,no-stream" {
		t.Errorf("Faults() ids = %s", got)
	}
	st, err := r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Condition(cri.RuntimeReady); c.Status {
		t.Errorf("RuntimeReady with a startup notReady fault: %+v", c)
	}
	if _, err := r.GetPods(ctx, true); err == nil || !strings.Contains(err.Error(), "boot") {
		t.Errorf("first listing: %v, want the startup error fault", err)
	}
	if _, err := r.GetPods(ctx, true); err != nil {
		t.Errorf("second listing: %v, want the count-1 fault spent", err)
	}
	if _, err := r.GetContainerEvents(ctx, nil); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("first event stream: %v, want refused by the startup streamError", err)
	}
}

func TestErrorFault(t *testing.T) {
	ctx := context.Background()
	reg := metrics.NewRegistry("kubelet_")
	var hooked []string
	var logs logSink
	opts := logs.logger()
	r, _ := newRuntime(t, Config{
		Metrics: reg,
		OnFault: func(s fault.Spec, method string) { hooked = append(hooked, s.ID+"/"+method) },
		Logger:  funcr.New(logs.add, opts),
	})
	f, err := r.AddFault(fault.Spec{Method: "ListPodSandbox", Type: fault.Error, Message: "runtime is on fire", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		_, err := r.ListPodSandbox(ctx, nil)
		var ie *InjectedError
		if !errors.As(err, &ie) || ie.FaultID != f.ID || !strings.Contains(err.Error(), "ListPodSandbox: runtime is on fire") {
			t.Fatalf("call %d: %v, want the injected error", i, err)
		}
	}
	if _, err := r.ListContainers(ctx, nil); err != nil {
		t.Errorf("another method failed: %v", err)
	}
	if _, err := r.ListPodSandbox(ctx, nil); err != nil {
		t.Errorf("third call after count 2: %v, want success", err)
	}
	if len(r.Faults()) != 0 {
		t.Errorf("spent fault still listed: %+v", r.Faults())
	}
	if got := testutil.ToFloat64(r.faultsFired.WithLabelValues("ListPodSandbox", "error")); got != 2 {
		t.Errorf("%s = %v, want 2", reg.Name(metrics.RuntimeFaultsFired), got)
	}
	if n, err := testutil.GatherAndCount(reg, "kubelet_runtime_injected_faults_total"); err != nil || n != 1 {
		t.Errorf("registered series of kubelet_runtime_injected_faults_total = %d, %v", n, err)
	}
	if strings.Join(hooked, ",") != "fault-1/ListPodSandbox,fault-1/ListPodSandbox" {
		t.Errorf("OnFault calls = %v", hooked)
	}
	if !logs.contains("Injected runtime fault", `"id"="fault-1"`, `"method"="ListPodSandbox"`, `"type"="error"`) {
		t.Errorf("no log line for the fired fault: %q", logs.lines)
	}
	if !logs.contains("Retired runtime fault") {
		t.Errorf("no log line for the retired fault: %q", logs.lines)
	}
}

func TestErrorFaultAnyMethodAndRate(t *testing.T) {
	ctx := context.Background()
	t.Run("any method", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		r.AddFault(fault.Spec{Method: fault.AnyMethod, Type: fault.Error})
		if _, err := r.Status(ctx); err == nil {
			t.Error("Status passed a * error fault")
		}
		if _, err := r.RunPodSandbox(ctx, sandboxConfig("u1", nil)); err == nil {
			t.Error("RunPodSandbox passed a * error fault")
		}
		if _, err := r.GetPods(ctx, true); err == nil || !strings.Contains(err.Error(), "list pod sandboxes: ListPodSandbox:") {
			t.Errorf("GetPods: %v, want the ListPodSandbox failure", err)
		}
	})
	t.Run("rate is seeded", func(t *testing.T) {
		pattern := func(seed int64) string {
			r, _ := newRuntime(t, Config{Seed: seed})
			r.AddFault(fault.Spec{Method: "ContainerStatus", Type: fault.Error, Rate: 0.3})
			var b strings.Builder
			for i := 0; i < 1000; i++ {
				if _, err := r.ContainerStatus(ctx, "x"); errors.Is(err, cri.ErrNotFound) {
					b.WriteByte('.')
				} else {
					b.WriteByte('x')
				}
			}
			return b.String()
		}
		p1, p2, p3 := pattern(7), pattern(7), pattern(8)
		if p1 != p2 {
			t.Error("the same seed gave different failure patterns")
		}
		if p1 == p3 {
			t.Error("different seeds gave the same failure pattern")
		}
		if n := strings.Count(p1, "x"); n < 230 || n > 370 {
			t.Errorf("rate 0.3 failed %d of 1000 calls", n)
		}
	})
}

func TestLatencyFault(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	for i := 0; i < 3; i++ {
		runPod(t, r, uidN(i), nil)
	}
	r.AddFault(fault.Spec{Method: "ListPodSandbox", Type: fault.Latency, Delay: dur(time.Second), PerContainer: dur(100 * time.Millisecond)})
	// The call is a pending operation: it completes 1s + 3 sandboxes x 100ms later on the
	// clock, and only the caller waits.
	call := start(func(ctx context.Context) error { _, err := r.ListPodSandbox(ctx, nil); return err })
	if call.Poll() {
		t.Fatal("ListPodSandbox under latency returned at once")
	}
	if due := r.Due(clk.Now()); !due.Equal(epoch.Add(1300 * time.Millisecond)) {
		t.Fatalf("runtime loop due %v, want the call's completion at +1.3s", due)
	}
	if _, err := r.ListContainers(context.Background(), nil); err != nil {
		t.Fatalf("an unmatched call meanwhile: %v", err)
	}
	run(t, r, clk, 1299*time.Millisecond)
	if call.Poll() {
		t.Fatal("returned before its latency passed")
	}
	run(t, r, clk, time.Millisecond)
	if !call.Poll() || call.Err() != nil {
		t.Fatalf("after 1.3s: returned %t, err %v", call.Done(), call.Err())
	}
	// GetPods pays the same latency.
	start := clk.Now()
	if err := await(t, r, clk, time.Minute, func(ctx context.Context) error { _, err := r.GetPods(ctx, true); return err }); err != nil {
		t.Fatal(err)
	}
	if took := clk.Since(start); took != 1300*time.Millisecond {
		t.Errorf("GetPods under latency took %v, want 1.3s", took)
	}
}

// TestFaultsApplyInOrder: the latency, hang and error faults matching a call apply one after
// the other in the order they were added, so delays add up and an error fault ends the call
// where it stands.
func TestFaultsApplyInOrder(t *testing.T) {
	latency := func(d time.Duration) fault.Spec {
		return fault.Spec{Method: "Status", Type: fault.Latency, Delay: dur(d)}
	}
	hangFor := func(d time.Duration) fault.Spec { return fault.Spec{Method: "*", Type: fault.Hang, For: dur(d)} }
	failure := fault.Spec{Method: "Status", Type: fault.Error, Message: "boom"}
	tests := []struct {
		name     string
		faults   []fault.Spec
		wantTook time.Duration
		wantErr  bool
	}{
		{name: "latencies add up", faults: []fault.Spec{latency(time.Second), latency(2 * time.Second)}, wantTook: 3 * time.Second},
		{name: "a hang's for then a latency", faults: []fault.Spec{hangFor(5 * time.Second), latency(time.Second)}, wantTook: 6 * time.Second},
		{name: "an error after a latency fails late", faults: []fault.Spec{latency(time.Second), failure}, wantTook: time.Second, wantErr: true},
		{name: "an error before a latency fails at once", faults: []fault.Spec{failure, latency(time.Second)}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			for _, f := range tc.faults {
				addFault(t, r, f)
			}
			start := clk.Now()
			err := await(t, r, clk, time.Minute, func(ctx context.Context) error { _, err := r.Status(ctx); return err })
			var ie *InjectedError
			if got := errors.As(err, &ie); got != tc.wantErr || (!tc.wantErr && err != nil) {
				t.Errorf("Status = %v, want an injected error %t", err, tc.wantErr)
			}
			if took := clk.Since(start); took != tc.wantTook {
				t.Errorf("took %v, want %v", took, tc.wantTook)
			}
		})
	}
}

// TestRemovingALatencyFaultKeepsDelaysInFlight: removing a latency fault spares the calls
// made afterwards; a call already delayed still completes at its instant (only hang faults
// release their calls on removal).
func TestRemovingALatencyFaultKeepsDelaysInFlight(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	f, _ := r.AddFault(fault.Spec{Method: "Status", Type: fault.Latency, Delay: dur(10 * time.Second)})
	call := start(func(ctx context.Context) error { _, err := r.Status(ctx); return err })
	run(t, r, clk, time.Second)
	if err := r.RemoveFault(f.ID); err != nil {
		t.Fatal(err)
	}
	if call.Poll() {
		t.Fatal("the delayed call returned when its latency fault was removed")
	}
	if _, err := r.Status(task.WithoutBlocking(context.Background())); err != nil {
		t.Errorf("a call after the removal: %v, want no delay", err)
	}
	run(t, r, clk, 9*time.Second-time.Millisecond)
	if call.Poll() {
		t.Fatal("returned before its latency passed")
	}
	run(t, r, clk, time.Millisecond)
	if !call.Poll() || call.Err() != nil {
		t.Errorf("at +10s: returned %t, err %v", call.Done(), call.Err())
	}
}

func TestHangFault(t *testing.T) {
	t.Run("until cleared", func(t *testing.T) {
		r, clk := newRuntime(t, Config{})
		f, _ := r.AddFault(fault.Spec{Method: "ListPodSandbox", Type: fault.Hang})
		call := start(func(ctx context.Context) error { _, err := r.GetPods(ctx, true); return err })
		run(t, r, clk, time.Hour)
		if call.Poll() {
			t.Fatal("hung call returned within an hour")
		}
		if err := r.RemoveFault(f.ID); err != nil {
			t.Fatal(err)
		}
		if !call.Poll() || call.Err() != nil {
			t.Errorf("hung call after clearing: returned %t, err %v; want success", call.Done(), call.Err())
		}
	})
	t.Run("for elapses", func(t *testing.T) {
		r, clk := newRuntime(t, Config{})
		r.AddFault(fault.Spec{Method: "*", Type: fault.Hang, For: dur(30 * time.Second)})
		call := start(func(ctx context.Context) error { _, err := r.Status(ctx); return err })
		run(t, r, clk, 29*time.Second)
		if call.Poll() {
			t.Fatal("returned before for elapsed")
		}
		run(t, r, clk, time.Second)
		if !call.Poll() || call.Err() != nil {
			t.Errorf("after for: returned %t, err %v", call.Done(), call.Err())
		}
	})
	t.Run("the caller's deadline passes", func(t *testing.T) {
		r, clk := newRuntime(t, Config{})
		r.AddFault(fault.Spec{Method: "ContainerStatus", Type: fault.Hang})
		// The kubelet's CRI client gives each call a deadline on the clock.
		call := start(func(ctx context.Context) error {
			_, err := r.ContainerStatus(task.WithDeadline(ctx, clk.Now().Add(2*time.Minute)), "x")
			return err
		})
		run(t, r, clk, 2*time.Minute-time.Millisecond)
		if call.Poll() {
			t.Fatal("returned before its deadline")
		}
		run(t, r, clk, time.Millisecond)
		if !call.Poll() || !errors.Is(call.Err(), cri.ErrDeadlineExceeded) {
			t.Errorf("at the deadline: returned %t, err %v; want %v", call.Done(), call.Err(), cri.ErrDeadlineExceeded)
		}
		if len(r.Faults()) != 1 {
			t.Errorf("a call giving up removed the fault: %+v", r.Faults())
		}
	})
	t.Run("a blocking caller's context ends", func(t *testing.T) {
		// Outside a task (a daemon goroutine) the call blocks until its context ends.
		r, _ := newRuntime(t, Config{})
		r.AddFault(fault.Spec{Method: "ContainerStatus", Type: fault.Hang})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := r.ContainerStatus(ctx, "x"); done <- err }()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("hung call whose context ended: %v, want context.Canceled", err)
		}
	})
	t.Run("clear releases every hung call", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		r.AddFault(fault.Spec{Method: "*", Type: fault.Hang})
		var calls []*simtest.Call
		for i := 0; i < 5; i++ {
			calls = append(calls, start(func(ctx context.Context) error { _, err := r.ListContainers(ctx, nil); return err }))
		}
		if calls[0].Poll() {
			t.Fatal("hung call returned")
		}
		r.ClearFaults()
		for i, c := range calls {
			if !c.Poll() || c.Err() != nil {
				t.Errorf("call %d after ClearFaults: returned %t, err %v", i, c.Done(), c.Err())
			}
		}
	})
}

func TestNotReadyFault(t *testing.T) {
	tests := []struct {
		name       string
		spec       fault.Spec
		cond       string
		reason     string
		messageHas string
	}{
		{name: "runtime", spec: fault.Spec{Method: "Status", Type: fault.NotReady, Condition: cri.RuntimeReady}, cond: cri.RuntimeReady, reason: "RuntimeNotReady", messageHas: "not ready"},
		{name: "network", spec: fault.Spec{Method: "Status", Type: fault.NotReady, Condition: cri.NetworkReady}, cond: cri.NetworkReady, reason: "NetworkPluginNotReady", messageHas: "cni plugin not initialized"},
		{name: "custom message", spec: fault.Spec{Method: "*", Type: fault.NotReady, Condition: cri.NetworkReady, Message: "calico down"}, cond: cri.NetworkReady, reason: "NetworkPluginNotReady", messageHas: "calico down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRuntime(t, Config{})
			ctx := context.Background()
			f, err := r.AddFault(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			st, err := r.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range st.Conditions {
				wantOK := c.Type != tc.cond
				if c.Status != wantOK {
					t.Errorf("%s = %v, want %v", c.Type, c.Status, wantOK)
				}
			}
			c := st.Condition(tc.cond)
			if c.Reason != tc.reason || !strings.Contains(c.Message, tc.messageHas) {
				t.Errorf("%s condition = %+v, want reason %s and message with %q", tc.cond, c, tc.reason, tc.messageHas)
			}
			r.RemoveFault(f.ID)
			st, _ = r.Status(ctx)
			if !st.Condition(tc.cond).Status {
				t.Errorf("%s still false after removing the fault", tc.cond)
			}
		})
	}
}

func TestStreamErrorFault(t *testing.T) {
	ctx := context.Background()
	t.Run("breaks the active stream then refuses count-1 times", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		s := subscribe(t, r)
		f, err := r.AddFault(fault.Spec{Method: "GetContainerEvents", Type: fault.StreamError, Count: 3})
		if err != nil {
			t.Fatal(err)
		}
		if s.notified != 1 {
			t.Errorf("the break notified the reader %d times, want 1", s.notified)
		}
		_, err = s.recvAll()
		var ie *InjectedError
		if !errors.As(err, &ie) || ie.FaultID != f.ID || !strings.Contains(err.Error(), "stream broken") {
			t.Fatalf("active stream ended with %v, want the injected break", err)
		}
		for i := 0; i < 2; i++ {
			_, err := r.GetContainerEvents(ctx, nil)
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "connection refused") {
				t.Fatalf("reconnect %d: %v, want refused", i, err)
			}
		}
		if len(r.Faults()) != 0 {
			t.Errorf("spent streamError fault still listed")
		}
		s2 := subscribe(t, r)
		runPod(t, r, "u1", nil)
		if evs := s2.drain(); len(evs) != 2 {
			t.Errorf("after the fault: %d events", len(evs))
		}
		if got := testutil.ToFloat64(r.faultsFired.WithLabelValues("GetContainerEvents", "streamError")); got != 3 {
			t.Errorf("fired %v times, want 3", got)
		}
	})
	t.Run("without a stream refuses the next connection once", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		r.AddFault(fault.Spec{Method: "*", Type: fault.StreamError})
		if _, err := r.GetContainerEvents(ctx, nil); err == nil {
			t.Fatal("connection accepted, want refused")
		}
		s := subscribe(t, r)
		s.close()
	})
	t.Run("error fault on GetContainerEvents refuses connections", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		r.AddFault(fault.Spec{Method: "GetContainerEvents", Type: fault.Error, Count: 1})
		if _, err := r.GetContainerEvents(ctx, nil); err == nil {
			t.Fatal("connection accepted")
		}
	})
}

// TestFaultsReachPodViews checks that faults on the CRI calls behind GetPods and
// GetPodStatus fail them as a real CRI would, naming the call.
func TestFaultsReachPodViews(t *testing.T) {
	tests := []struct {
		method  string
		call    string // GetPods or GetPodStatus
		wantErr string
	}{
		{"ListPodSandbox", "GetPods", "list pod sandboxes: ListPodSandbox"},
		{"ListContainers", "GetPods", "list containers: ListContainers"},
		{"ListPodSandbox", "GetPodStatus", `list pod sandboxes of pod "u1": ListPodSandbox`},
		{"PodSandboxStatus", "GetPodStatus", "get pod sandbox status"},
		{"ListContainers", "GetPodStatus", `list containers of pod "u1"`},
		{"ContainerStatus", "GetPodStatus", "get container status"},
	}
	for _, tc := range tests {
		t.Run(tc.call+"/"+tc.method, func(t *testing.T) {
			r, _ := newRuntime(t, Config{})
			sbID, sbCfg := runPod(t, r, "u1", nil)
			startContainer(t, r, sbID, sbCfg, "c", "")
			r.AddFault(fault.Spec{Method: tc.method, Type: fault.Error, Count: 1})
			var err error
			if tc.call == "GetPods" {
				_, err = r.GetPods(context.Background(), true)
			} else {
				_, err = r.GetPodStatus(context.Background(), "u1", "pod-u1", "default")
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("%s: %v, want an error containing %q", tc.call, err, tc.wantErr)
			}
			var ie *InjectedError
			if !errors.As(err, &ie) {
				t.Errorf("error does not unwrap to the InjectedError")
			}
		})
	}
}
