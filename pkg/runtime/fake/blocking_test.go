package fake

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// TestBlockingCallsHonourCancellation: every call that can block (on the clock, on a hang
// fault or on the event stream) returns ctx.Err() as soon as its caller gives up, and what
// the runtime already accepted goes on.
func TestBlockingCallsHonourCancellation(t *testing.T) {
	tests := []struct {
		name string
		// setup prepares the runtime and returns the blocking call.
		setup func(t *testing.T, r *Runtime) func(ctx context.Context) error
		// blocked reports that the call has parked.
		blocked func(r *Runtime, clk *testclock.FakeClock) bool
		// after checks the runtime once the call was cancelled (optional).
		after func(t *testing.T, r *Runtime, clk *testclock.FakeClock)
	}{
		{
			name: "PullImage during pullDelay",
			setup: func(t *testing.T, r *Runtime) func(context.Context) error {
				cfg := sandboxConfig("u1", annotate("web", "pullDelay=1m"))
				img := cri.ImageSpec{Image: "nginx", Annotations: map[string]string{cri.ContainerNameLabel: "web"}}
				return func(ctx context.Context) error { _, err := r.PullImage(ctx, img, cfg); return err }
			},
			blocked: onClock,
			after: func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
				if imgs, _ := r.ListImages(context.Background()); len(imgs) != 0 {
					t.Errorf("a cancelled pull recorded the image: %+v", imgs)
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
			blocked: onClock,
			after: func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
				// The runtime had accepted the stop: the kill at the end of the grace
				// period still happens, as with a real runtime whose client timed out.
				clk.Step(30 * time.Second)
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
			blocked: onClock,
		},
		{
			name: "hang fault without for",
			setup: func(t *testing.T, r *Runtime) func(context.Context) error {
				addFault(t, r, fault.Spec{Method: "ListContainers", Type: fault.Hang})
				return func(ctx context.Context) error { _, err := r.GetPods(ctx, true); return err }
			},
			blocked: fired("ListContainers", fault.Hang),
			after: func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
				if len(r.Faults()) != 1 {
					t.Errorf("cancelling a hung call removed the fault: %+v", r.Faults())
				}
			},
		},
		{
			name: "hang fault with for",
			setup: func(t *testing.T, r *Runtime) func(context.Context) error {
				addFault(t, r, fault.Spec{Method: "Status", Type: fault.Hang, For: dur(time.Hour)})
				return func(ctx context.Context) error { _, err := r.Status(ctx); return err }
			},
			blocked: onClock,
		},
		{
			name: "GetContainerEvents while connected",
			setup: func(t *testing.T, r *Runtime) func(context.Context) error {
				return func(ctx context.Context) error {
					return r.GetContainerEvents(ctx, make(chan *cri.ContainerEventResponse))
				}
			},
			blocked: func(r *Runtime, _ *testclock.FakeClock) bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return r.sub != nil
			},
			after: func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
				// The slot is free for the next subscriber.
				s := subscribe(t, r, 10)
				if err := s.close(); !errors.Is(err, context.Canceled) {
					t.Errorf("next subscriber ended with %v", err)
				}
			},
		},
		{
			name: "GetContainerEvents while sending to a full channel",
			setup: func(t *testing.T, r *Runtime) func(context.Context) error {
				return func(ctx context.Context) error {
					ch := make(chan *cri.ContainerEventResponse) // nobody reads
					return r.GetContainerEvents(ctx, ch)
				}
			},
			blocked: func(r *Runtime, _ *testclock.FakeClock) bool {
				r.mu.Lock()
				s := r.sub
				queued, waiting := int64(0), 0
				if s != nil {
					queued, waiting = s.queued, len(s.buf)
				}
				r.mu.Unlock()
				if s != nil && queued == 0 {
					// Connected: give the stream something to send (two events).
					if _, err := r.RunPodSandbox(context.Background(), sandboxConfig("u9", nil)); err != nil {
						panic(err)
					}
				}
				// The stream took the events to send and is stuck on the channel.
				return queued > 0 && waiting == 0
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, clk := newRuntime(t, Config{})
			call := tc.setup(t, r)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := async(func() error { return call(ctx) })
			waitUntil(t, func() bool { return tc.blocked(r, clk) })
			notDone(t, done)
			cancel()
			if err := recv(t, done); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled call returned %v, want context.Canceled", err)
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

// onClock: the call waits on a timer of the fake clock.
func onClock(_ *Runtime, clk *testclock.FakeClock) bool { return clk.HasWaiters() }

// fired: the fault has fired for the method (a hang fires, then blocks).
func fired(method string, typ fault.Type) func(*Runtime, *testclock.FakeClock) bool {
	return func(r *Runtime, _ *testclock.FakeClock) bool {
		return testutil.ToFloat64(r.faultsFired.WithLabelValues(method, string(typ))) > 0
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
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
			done := async(func() error { _, err := r.ListContainers(context.Background(), nil); return err })
			waitForWaiters(t, clk)
			clk.Step(time.Second)
			if err := recv(t, done); err != nil {
				t.Fatal(err)
			}
		}},
		{fault.Spec{Method: "ListContainers", Type: fault.Error, Rate: 1, Message: "boom"}, func(t *testing.T, r *Runtime, _ *testclock.FakeClock) {
			if _, err := r.ListContainers(context.Background(), nil); err == nil {
				t.Fatal("no error")
			}
		}},
		{fault.Spec{Method: "ListContainers", Type: fault.Hang, For: dur(time.Minute)}, func(t *testing.T, r *Runtime, clk *testclock.FakeClock) {
			done := async(func() error { _, err := r.ListContainers(context.Background(), nil); return err })
			waitForWaiters(t, clk)
			clk.Step(time.Minute)
			if err := recv(t, done); err != nil {
				t.Fatal(err)
			}
		}},
		{fault.Spec{Method: "Status", Type: fault.NotReady, Condition: cri.NetworkReady}, func(t *testing.T, r *Runtime, _ *testclock.FakeClock) {
			if st, err := r.Status(context.Background()); err != nil || st.Condition(cri.NetworkReady).Status {
				t.Fatalf("Status = %+v, %v", st, err)
			}
		}},
		{fault.Spec{Method: "GetContainerEvents", Type: fault.StreamError}, func(t *testing.T, r *Runtime, _ *testclock.FakeClock) {
			if err := r.GetContainerEvents(context.Background(), make(chan *cri.ContainerEventResponse)); err == nil {
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
