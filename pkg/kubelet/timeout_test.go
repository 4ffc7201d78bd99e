package kubelet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
)

// waitForWaiters polls until the fake clock has a timer (the call has registered its
// deadline), failing after a few seconds.
func waitForWaiters(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the call never registered its deadline on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRuntimeRequestTimeout: a hung runtime call fails once runtimeRequestTimeout has
// passed on the kubelet's clock, with an error naming the call; StopContainer gets the
// grace period on top; a caller's own cancellation is not reported as a timeout.
func TestRuntimeRequestTimeout(t *testing.T) {
	const timeout = 2 * time.Minute
	tests := []struct {
		name    string
		method  string
		call    func(ctx context.Context, r *timeoutRuntime) error
		timeout time.Duration
	}{
		{"Status", "Status", func(ctx context.Context, r *timeoutRuntime) error { _, err := r.Status(ctx); return err }, timeout},
		{"GetPods", "ListPodSandbox", func(ctx context.Context, r *timeoutRuntime) error { _, err := r.GetPods(ctx, true); return err }, timeout},
		{"StopContainer with 30s grace", "StopContainer", func(ctx context.Context, r *timeoutRuntime) error { return r.StopContainer(ctx, "c", 30) }, timeout + 30*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(epoch)
			rt, err := fake.New(fake.Config{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rt.AddFault(faultSpec(tt.method, "hang")); err != nil {
				t.Fatal(err)
			}
			r := &timeoutRuntime{rt: rt, clk: clk, timeout: timeout}
			done := make(chan error, 1)
			go func() { done <- tt.call(context.Background(), r) }()
			waitForWaiters(t, clk)
			clk.Step(tt.timeout - time.Second)
			select {
			case err := <-done:
				t.Fatalf("returned %v before the timeout", err)
			case <-time.After(20 * time.Millisecond):
			}
			clk.Step(time.Second)
			select {
			case err := <-done:
				if !errors.Is(err, ErrRuntimeRequestTimeout) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tt.name[:strings.IndexAny(tt.name+" ", " ")]) {
					t.Errorf("err = %v, want a timeout naming the call", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the hung call did not end at the timeout")
			}
		})
	}

	t.Run("caller cancels", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(epoch)
		rt, err := fake.New(fake.Config{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.AddFault(faultSpec("Status", "hang")); err != nil {
			t.Fatal(err)
		}
		r := &timeoutRuntime{rt: rt, clk: clk, timeout: timeout}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := r.Status(ctx); done <- err }()
		waitForWaiters(t, clk)
		cancel()
		if err := <-done; errors.Is(err, ErrRuntimeRequestTimeout) || !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want the caller's cancellation", err)
		}
		if clk.HasWaiters() {
			t.Error("the deadline timer was not stopped")
		}
	})

	t.Run("fast call", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(epoch)
		rt, err := fake.New(fake.Config{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		r := &timeoutRuntime{rt: rt, clk: clk, timeout: timeout}
		if _, err := r.ListPodSandbox(context.Background(), &cri.PodSandboxFilter{}); err != nil {
			t.Fatal(err)
		}
		if clk.HasWaiters() {
			t.Error("a finished call left its deadline timer")
		}
	})
}
