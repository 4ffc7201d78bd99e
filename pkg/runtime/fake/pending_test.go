package fake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// pendingCall is a call that takes virtual time: it stays pending for at least an hour
// unless its caller gives up.
type pendingCall struct {
	name string
	// setup prepares the runtime and returns the call.
	setup func(t *testing.T, r *Runtime) func(ctx context.Context) error
	// after checks the runtime once the caller gave up (optional): what the runtime had
	// accepted goes on.
	after func(t *testing.T, r *Runtime, clk *testclock.FakeClock)
}

// pendingCalls is every kind of pending operation a caller can give up on: a pull's delay, a
// stop's grace period, a latency fault, a hang fault with and without "for".
func pendingCalls() []pendingCall {
	return []pendingCall{
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
				run(t, r, clk, time.Hour)
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
}

// TestPendingCallsEndAtTheCallersDeadline: every call that takes time is a pending operation;
// a caller whose deadline (task.WithDeadline, as the kubelet's CRI client sets) passes first
// gets cri.ErrDeadlineExceeded at that instant, and what the runtime had accepted goes on.
func TestPendingCallsEndAtTheCallersDeadline(t *testing.T) {
	const deadline = 10 * time.Second
	for _, tc := range pendingCalls() {
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

// TestPendingCallsEndWhenTheCallerGivesUp: a call waiting in a task returns as soon as its
// caller cancels its context (context.Canceled at the next Poll, with the clock still) or its
// owner abandons the task (task.ErrStopped), and what the runtime had accepted goes on.
func TestPendingCallsEndWhenTheCallerGivesUp(t *testing.T) {
	ways := []struct {
		name    string
		giveUp  func(c *simtest.Call, cancel context.CancelFunc)
		wantErr error
	}{
		{name: "context cancelled", giveUp: func(c *simtest.Call, cancel context.CancelFunc) { cancel(); c.Poll() }, wantErr: context.Canceled},
		{name: "task abandoned", giveUp: func(c *simtest.Call, _ context.CancelFunc) { c.Stop() }, wantErr: task.ErrStopped},
	}
	for _, way := range ways {
		for _, tc := range pendingCalls() {
			t.Run(way.name+"/"+tc.name, func(t *testing.T) {
				r, clk := newRuntime(t, Config{})
				call := tc.setup(t, r)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				c := simtest.Go(ctx, call)
				run(t, r, clk, 5*time.Second)
				if c.Poll() {
					t.Fatalf("returned %v while pending", c.Err())
				}
				giveUp := clk.Now()
				way.giveUp(c, cancel)
				if !c.Done() || !errors.Is(c.Err(), way.wantErr) {
					t.Fatalf("after giving up: returned %t, err %v; want %v", c.Done(), c.Err(), way.wantErr)
				}
				if !clk.Now().Equal(giveUp) {
					t.Errorf("giving up moved the clock to %v", clk.Now())
				}
				if tc.after != nil {
					tc.after(t, r, clk)
				}
			})
		}
	}
}

// TestPendingCallsInANonBlockingContext: a loop step of simulate mode runs with
// task.WithoutBlocking outside any task; a call that would have to wait there fails at once
// with task.ErrWouldBlock instead of stalling the only goroutine, while what the runtime
// accepted goes on. A call that completes at once succeeds in such a context.
func TestPendingCallsInANonBlockingContext(t *testing.T) {
	tests := []struct {
		name      string
		annotate  string      // the container's script
		fault     *fault.Spec // injected before the call
		call      func(r *Runtime, ctx context.Context, id string) error
		wouldWait bool
		// after checks the runtime once an hour has passed (optional).
		after func(t *testing.T, r *Runtime, id string)
	}{
		{
			name:     "a stop without stopDelay",
			annotate: "runFor=1h",
			call:     func(r *Runtime, ctx context.Context, id string) error { return r.StopContainer(ctx, id, 30) },
			after: func(t *testing.T, r *Runtime, id string) {
				if st := status(t, r, id); st.ExitCode != 0 || st.FinishedAt != ns(0) {
					t.Errorf("stopped container: %+v, want exit 0 at once", st)
				}
			},
		},
		{
			name:      "a stop with stopDelay",
			annotate:  "stopDelay=3s",
			call:      func(r *Runtime, ctx context.Context, id string) error { return r.StopContainer(ctx, id, 30) },
			wouldWait: true,
			after: func(t *testing.T, r *Runtime, id string) {
				// The runtime had accepted the stop: the container honours SIGTERM at 3s.
				if st := status(t, r, id); st.State != cri.ContainerExited || st.ExitCode != 0 || st.FinishedAt != ns(3*time.Second) {
					t.Errorf("after the stop: %+v, want exited 0 at 3s", st)
				}
			},
		},
		{
			name:     "a pull without pullDelay",
			annotate: "runFor=1h",
			call: func(r *Runtime, ctx context.Context, _ string) error {
				_, err := r.PullImage(ctx, cri.ImageSpec{Image: "nginx"}, nil)
				return err
			},
		},
		{
			name:     "a pull with pullDelay",
			annotate: "pullDelay=5s",
			call: func(r *Runtime, ctx context.Context, _ string) error {
				_, err := r.PullImage(ctx, cri.ImageSpec{Image: "nginx", Annotations: map[string]string{cri.ContainerNameLabel: "c"}}, sandboxConfig("u1", annotate("c", "pullDelay=5s")))
				return err
			},
			wouldWait: true,
			after: func(t *testing.T, r *Runtime, _ string) {
				if img, _ := r.ImageStatus(context.Background(), cri.ImageSpec{Image: "nginx"}); img != nil {
					t.Errorf("a pull that could not wait recorded the image: %+v", img)
				}
			},
		},
		{
			name:  "a latency fault",
			fault: &fault.Spec{Method: "ContainerStatus", Type: fault.Latency, Delay: dur(time.Second)},
			call: func(r *Runtime, ctx context.Context, id string) error {
				_, err := r.ContainerStatus(ctx, id)
				return err
			},
			wouldWait: true,
		},
		{
			name:  "a hang fault",
			fault: &fault.Spec{Method: "ContainerStatus", Type: fault.Hang},
			call: func(r *Runtime, ctx context.Context, id string) error {
				_, err := r.ContainerStatus(ctx, id)
				return err
			},
			wouldWait: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			sb, cfg := runPod(t, r, "u1", annotate("c", tc.annotate))
			id := startContainer(t, r, sb, cfg, "c", "")
			if tc.fault != nil {
				addFault(t, r, *tc.fault)
			}
			err := tc.call(r, task.WithoutBlocking(context.Background()), id)
			if got := errors.Is(err, task.ErrWouldBlock); got != tc.wouldWait || (!tc.wouldWait && err != nil) {
				t.Fatalf("call = %v, want would block %t", err, tc.wouldWait)
			}
			r.ClearFaults()
			run(t, r, clk, time.Hour)
			if tc.after != nil {
				tc.after(t, r, id)
			}
		})
	}
}

// TestCompletedCallsLeaveNothingDue: once a pending call completes, no entry of it (its
// delay, a hang's "for", the caller's deadline) keeps the runtime's loop due, so a
// virtual-time scheduler does not wake up for nothing.
func TestCompletedCallsLeaveNothingDue(t *testing.T) {
	tests := []struct {
		name string
		// run makes and completes the call; the caller's deadline (an hour) is later.
		run func(t *testing.T, r *Runtime, clk *testclock.FakeClock)
	}{
		{"a pull", func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
			cfg := sandboxConfig("u1", annotate("web", "pullDelay=5s"))
			img := cri.ImageSpec{Image: "nginx", Annotations: map[string]string{cri.ContainerNameLabel: "web"}}
			awaitWithDeadline(t, r, clk, func(ctx context.Context) error { _, err := r.PullImage(ctx, img, cfg); return err })
		}},
		{"a stop", func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
			sb, cfg := runPod(t, r, "u1", annotate("c", "stopDelay=3s"))
			id := startContainer(t, r, sb, cfg, "c", "")
			awaitWithDeadline(t, r, clk, func(ctx context.Context) error { return r.StopContainer(ctx, id, 30) })
		}},
		{"an exec", func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
			sb, cfg := runPod(t, r, "u1", annotate("c", "probeDelay=1s"))
			id := startContainer(t, r, sb, cfg, "c", "")
			awaitWithDeadline(t, r, clk, func(ctx context.Context) error {
				_, err := r.ExecSync(ctx, id, []string{"true"}, time.Minute)
				return err
			})
		}},
		{"a latency fault", func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
			addFault(t, r, fault.Spec{Method: "Status", Type: fault.Latency, Delay: dur(time.Second)})
			awaitWithDeadline(t, r, clk, func(ctx context.Context) error { _, err := r.Status(ctx); return err })
		}},
		{"a hang released before its for", func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
			f, _ := r.AddFault(fault.Spec{Method: "Status", Type: fault.Hang, For: dur(30 * time.Minute)})
			c := start(func(ctx context.Context) error {
				_, err := r.Status(task.WithDeadline(ctx, clk.Now().Add(time.Hour)))
				return err
			})
			run(t, r, clk, time.Second)
			if err := r.RemoveFault(f.ID); err != nil {
				t.Fatal(err)
			}
			if !c.Poll() || c.Err() != nil {
				t.Fatalf("hung call after RemoveFault: returned %t, err %v", c.Done(), c.Err())
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			tc.run(t, r, clk)
			if next, ok := r.NextTransition(); ok {
				t.Errorf("NextTransition = %v after the call completed, want nothing", next)
			}
			if due := r.Due(clk.Now()); !due.IsZero() {
				t.Errorf("runtime loop due %v after the call completed, want idle", due)
			}
		})
	}
}

// awaitWithDeadline runs fn as a task beside the runtime's loop with a deadline an hour
// away and fails the test unless it succeeds well before that.
func awaitWithDeadline(t *testing.T, r *Runtime, clk *testclock.FakeClock, fn func(ctx context.Context) error) {
	t.Helper()
	dl := clk.Now().Add(time.Hour)
	if err := await(t, r, clk, time.Minute, func(ctx context.Context) error { return fn(task.WithDeadline(ctx, dl)) }); err != nil {
		t.Fatal(err)
	}
}

// TestScheduleStaysBoundedWithDeadlines: every call with a deadline queues the deadline; the
// deadlines of calls that completed long before do not pile up in the schedule, even behind
// a live entry that keeps them from being dropped off the top of the queue.
func TestScheduleStaysBoundedWithDeadlines(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sb, cfg := runPod(t, r, "u1", map[string]string{
		behavior.AnnotationKey("c"): "probeDelay=10ms",
		// Its exit at 30m is due before every deadline (an hour after each call).
		behavior.AnnotationKey("keeper"): "runFor=30m",
	})
	id := startContainer(t, r, sb, cfg, "c", "")
	startContainer(t, r, sb, cfg, "keeper", "")
	for i := 0; i < 500; i++ {
		awaitWithDeadline(t, r, clk, func(ctx context.Context) error {
			_, err := r.ExecSync(ctx, id, []string{"true"}, 0)
			return err
		})
	}
	r.mu.Lock()
	n := len(r.queue)
	r.mu.Unlock()
	if n > minCompact {
		t.Errorf("schedule holds %d entries for 500 completed calls, want at most %d", n, minCompact)
	}
}

// TestStopReturnsWhenTheContainerGoesFirst: a stop waiting out its grace period returns
// as soon as the container is gone another way (removed, or killed with its sandbox).
func TestStopReturnsWhenTheContainerGoesFirst(t *testing.T) {
	tests := []struct {
		name string
		end  func(r *Runtime, sb, id string) error
		// gone: the container no longer exists afterwards, else it was killed.
		gone bool
	}{
		{"RemoveContainer", func(r *Runtime, _, id string) error { return r.RemoveContainer(context.Background(), id) }, true},
		{"StopPodSandbox", func(r *Runtime, sb, _ string) error { return r.StopPodSandbox(context.Background(), sb) }, false},
		{"RemovePodSandbox", func(r *Runtime, sb, _ string) error { return r.RemovePodSandbox(context.Background(), sb) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			sb, cfg := runPod(t, r, "u1", annotate("c", "stopDelay=1h"))
			id := startContainer(t, r, sb, cfg, "c", "")
			c := start(func(ctx context.Context) error { return r.StopContainer(ctx, id, 30) })
			run(t, r, clk, 5*time.Second)
			if c.Poll() {
				t.Fatalf("stop returned %v within the grace period", c.Err())
			}
			if err := tc.end(r, sb, id); err != nil {
				t.Fatal(err)
			}
			if !c.Poll() || c.Err() != nil {
				t.Fatalf("stop after the container went: returned %t, err %v; want success at once", c.Done(), c.Err())
			}
			if tc.gone {
				if _, err := r.ContainerStatus(context.Background(), id); !errors.Is(err, cri.ErrNotFound) {
					t.Errorf("ContainerStatus = %v, want not found", err)
				}
			} else if st := status(t, r, id); st.ExitCode != ExitCodeKilled || st.FinishedAt != ns(5*time.Second) {
				t.Errorf("container: exit %d at %v, want killed (137) at 5s", st.ExitCode, time.Unix(0, st.FinishedAt).Sub(epoch))
			}
			if _, ok := r.NextTransition(); ok {
				t.Error("the grace period's kill is still scheduled for a container that is gone")
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
		cmd      []string
		timeout  time.Duration
		wantTook time.Duration
		timedOut bool
	}{
		{name: "answers at once", timeout: time.Second},
		{name: "probeDelay within the timeout", script: "probeDelay=500ms", timeout: time.Second, wantTook: 500 * time.Millisecond},
		{name: "probeDelay over the timeout", script: "probeDelay=3s", timeout: time.Second, wantTook: time.Second, timedOut: true},
		{name: "no timeout", script: "probeDelay=3s", wantTook: 3 * time.Second},
		{name: "a slow runtime times out", fault: &fault.Spec{Method: "ExecSync", Type: fault.Latency, Delay: dur(2 * time.Second)}, timeout: time.Second, wantTook: time.Second, timedOut: true},
		{name: "a slow command times out", cmd: []string{"sleep", "5"}, timeout: time.Second, wantTook: time.Second, timedOut: true},
		{name: "a command's sleep takes clock time", cmd: []string{"sleep", "2"}, timeout: 3 * time.Second, wantTook: 2 * time.Second},
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
				cmd := tt.cmd
				if cmd == nil {
					cmd = []string{"true"}
				}
				_, err := r.ExecSync(ctx, id, cmd, tt.timeout)
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

// TestExecSyncCallersDeadlineIsNotATimeout: a caller whose own deadline comes before the
// exec timeout gets its deadline error, not "timeout exceeded".
func TestExecSyncCallersDeadlineIsNotATimeout(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	sb, cfg := runPod(t, r, "u1", annotate("c", "probeDelay=20s"))
	id := startContainer(t, r, sb, cfg, "c", "")
	err := await(t, r, clk, time.Minute, func(ctx context.Context) error {
		_, err := r.ExecSync(task.WithDeadline(ctx, clk.Now().Add(2*time.Second)), id, []string{"check"}, 10*time.Second)
		return err
	})
	if !errors.Is(err, cri.ErrDeadlineExceeded) || strings.Contains(err.Error(), "timeout 10s exceeded") {
		t.Errorf("err = %v, want the caller's deadline, not the exec timeout", err)
	}
}
