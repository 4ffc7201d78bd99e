package fake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// TestPendingCallsEndAtTheCallersDeadline: every call that takes time (a pull's delay, a stop's
// grace period, a latency or hang fault) is a pending operation; a caller whose deadline
// (task.WithDeadline, as the kubelet's CRI client sets) passes first gets
// cri.ErrDeadlineExceeded at that instant, and what the runtime had accepted goes on.
func TestPendingCallsEndAtTheCallersDeadline(t *testing.T) {
	const deadline = 10 * time.Second
	tests := []struct {
		name string
		// setup prepares the runtime and returns the call.
		setup func(t *testing.T, r *Runtime) func(ctx context.Context) error
		// after checks the runtime once the call gave up (optional).
		after func(t *testing.T, r *Runtime, clk *testclock.FakeClock)
	}{
		{
			name: "PullImage during pullDelay",
			setup: func(t *testing.T, r *Runtime) func(context.Context) error {
				cfg := sandboxConfig("u1", annotate("web", "pullDelay=1m"))
				img := cri.ImageSpec{Image: "nginx", Annotations: map[string]string{cri.ContainerNameLabel: "web"}}
				return func(ctx context.Context) error { _, err := r.PullImage(ctx, img, cfg); return err }
			},
			after: func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
				run(t, r, clk, time.Hour)
				if imgs, _ := r.ListImages(context.Background()); len(imgs) != 0 {
					t.Errorf("a pull given up recorded the image: %+v", imgs)
				}
			},
		},
		{
			name: "StopContainer during the grace period",
			setup: func(t *testing.T, r *Runtime) func(context.Context) error {
				sb, cfg := runPod(t, r, "u1", annotate("c", "stopDelay=1h"))
				id := startContainer(t, r, sb, cfg, "c", "")
				return func(ctx context.Context) error { return r.StopContainer(ctx, id, 30) }
			},
			after: func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
				// The runtime had accepted the stop: the kill at the end of the grace
				// period still happens, as with a real runtime whose client timed out.
				run(t, r, clk, 20*time.Second)
				cs, _ := r.ListContainers(context.Background(), nil)
				if st := status(t, r, cs[0].ID); st.State != cri.ContainerExited || st.ExitCode != ExitCodeKilled || st.FinishedAt != ns(30*time.Second) {
					t.Errorf("after the grace period: %+v, want killed at 30s", st)
				}
			},
		},
		{
			name: "latency fault",
			setup: func(t *testing.T, r *Runtime) func(context.Context) error {
				addFault(t, r, fault.Spec{Method: "PodSandboxStatus", Type: fault.Latency, Delay: dur(time.Hour)})
				runPod(t, r, "u1", nil)
				return func(ctx context.Context) error { _, err := r.GetPodStatus(ctx, "u1", "pod-u1", "default"); return err }
			},
		},
		{
			name: "hang fault without for",
			setup: func(t *testing.T, r *Runtime) func(context.Context) error {
				addFault(t, r, fault.Spec{Method: "ListContainers", Type: fault.Hang})
				return func(ctx context.Context) error { _, err := r.GetPods(ctx, true); return err }
			},
			after: func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
				if len(r.Faults()) != 1 {
					t.Errorf("a call giving up removed the fault: %+v", r.Faults())
				}
			},
		},
		{
			name: "hang fault with for",
			setup: func(t *testing.T, r *Runtime) func(context.Context) error {
				addFault(t, r, fault.Spec{Method: "Status", Type: fault.Hang, For: dur(time.Hour)})
				return func(ctx context.Context) error { _, err := r.Status(ctx); return err }
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			call := tc.setup(t, r)
			c := start(func(ctx context.Context) error { return call(task.WithDeadline(ctx, clk.Now().Add(deadline))) })
			run(t, r, clk, deadline-time.Millisecond)
			if c.Poll() {
				t.Fatalf("returned %v before its deadline", c.Err())
			}
			run(t, r, clk, time.Millisecond)
			if !c.Poll() || !errors.Is(c.Err(), cri.ErrDeadlineExceeded) {
				t.Fatalf("at the deadline: returned %t, err %v; want %v", c.Done(), c.Err(), cri.ErrDeadlineExceeded)
			}
			if tc.after != nil {
				tc.after(t, r, clk)
			}
		})
	}
}

func addFault(t *testing.T, r *Runtime, spec fault.Spec) {
	t.Helper()
	if _, err := r.AddFault(spec); err != nil {
		t.Fatal(err)
	}
}

// TestEveryFaultTypeIsLoggedWhenItFires: at the default verbosity (no -v), the first firing
// of every kind of fault is logged with its id, method and type.
func TestEveryFaultTypeIsLoggedWhenItFires(t *testing.T) {
	tests := []struct {
		spec fault.Spec
		// fire makes the fault fire once and returns when the call is over.
		fire func(t *testing.T, r *Runtime, clk *testclock.FakeClock)
	}{
		{fault.Spec{Method: "ListContainers", Type: fault.Latency, Delay: dur(time.Second)}, func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
			if err := await(t, r, clk, time.Minute, func(ctx context.Context) error { _, err := r.ListContainers(ctx, nil); return err }); err != nil {
				t.Fatal(err)
			}
		}},
		{fault.Spec{Method: "ListContainers", Type: fault.Error, Rate: 1, Message: "boom"}, func(t *testing.T, r *Runtime, _ *testclock.FakeClock) {
			if _, err := r.ListContainers(context.Background(), nil); err == nil {
				t.Fatal("no error")
			}
		}},
		{fault.Spec{Method: "ListContainers", Type: fault.Hang, For: dur(time.Minute)}, func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
			if err := await(t, r, clk, time.Hour, func(ctx context.Context) error { _, err := r.ListContainers(ctx, nil); return err }); err != nil {
				t.Fatal(err)
			}
		}},
		{fault.Spec{Method: "Status", Type: fault.NotReady, Condition: cri.NetworkReady}, func(t *testing.T, r *Runtime, _ *testclock.FakeClock) {
			if st, err := r.Status(context.Background()); err != nil || st.Condition(cri.NetworkReady).Status {
				t.Fatalf("Status = %+v, %v", st, err)
			}
		}},
		{fault.Spec{Method: "GetContainerEvents", Type: fault.StreamError}, func(t *testing.T, r *Runtime, _ *testclock.FakeClock) {
			if _, err := r.GetContainerEvents(context.Background(), nil); err == nil {
				t.Fatal("stream accepted")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(string(tc.spec.Type), func(t *testing.T) {
			var logs logSink
			r, clk := newRuntime(t, Config{Logger: funcr.New(logs.add, funcr.Options{Verbosity: 0})})
			addFault(t, r, tc.spec)
			if logs.contains("Injected runtime fault") {
				t.Fatalf("logged a firing before any call: %q", logs.lines)
			}
			tc.fire(t, r, clk)
			if !logs.contains(`"Injected runtime fault"`, `"id"="fault-1"`, `"method"="`+tc.spec.Method+`"`, `"type"="`+string(tc.spec.Type)+`"`, `"firing"=1`) {
				t.Errorf("no log line at the default verbosity for the firing: %q", logs.lines)
			}
		})
	}
}

// TestExecSync: a command takes the container's probeDelay; the runtime enforces the exec
// timeout over the whole call, a latency fault's included, as a CRI runtime does.
func TestExecSync(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		fault    *fault.Spec
		timeout  time.Duration
		wantTook time.Duration
		timedOut bool
	}{
		{name: "answers at once", timeout: time.Second},
		{name: "probeDelay within the timeout", script: "probeDelay=500ms", timeout: time.Second, wantTook: 500 * time.Millisecond},
		{name: "probeDelay over the timeout", script: "probeDelay=3s", timeout: time.Second, wantTook: time.Second, timedOut: true},
		{name: "no timeout", script: "probeDelay=3s", wantTook: 3 * time.Second},
		{name: "a slow runtime times out", fault: &fault.Spec{Method: "ExecSync", Type: fault.Latency, Delay: dur(2 * time.Second)}, timeout: time.Second, wantTook: time.Second, timedOut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			var ann map[string]string
			if tt.script != "" {
				ann = annotate("c", tt.script)
			}
			sb, cfg := runPod(t, r, "u1", ann)
			id := startContainer(t, r, sb, cfg, "c", "")
			if tt.fault != nil {
				addFault(t, r, *tt.fault)
			}
			start := clk.Now()
			err := await(t, r, clk, time.Minute, func(ctx context.Context) error {
				_, err := r.ExecSync(ctx, id, []string{"check"}, tt.timeout)
				return err
			})
			if took := clk.Since(start); took != tt.wantTook {
				t.Errorf("took %v, want %v", took, tt.wantTook)
			}
			if got := errors.Is(err, cri.ErrDeadlineExceeded); got != tt.timedOut || (!tt.timedOut && err != nil) {
				t.Errorf("err = %v, want timed out %t", err, tt.timedOut)
			}
		})
	}
	t.Run("a container that is not running", func(t *testing.T) {
		r, _ := newRuntime(t, Config{})
		sb, cfg := runPod(t, r, "u1", nil)
		id := createContainer(t, r, sb, cfg, "c", "")
		if _, err := r.ExecSync(context.Background(), id, []string{"check"}, time.Second); err == nil || !strings.Contains(err.Error(), "is not running") {
			t.Errorf("exec in a created container: %v", err)
		}
	})
}
