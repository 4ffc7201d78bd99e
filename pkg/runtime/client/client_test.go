package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

const timeout = 2 * time.Minute

func newRuntime(t *testing.T, faults ...fault.Spec) (*testingclock.FakeClock, runner.Loop, *Client, func() time.Duration) {
	t.Helper()
	clk := simtest.NewClock()
	rt, err := fake.New(fake.Config{Clock: clk, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	return clk, runner.Loop{Name: "runtime", Due: rt.Due, Step: rt.Step, Wake: rt.Wake()}, New(rt, clk, timeout),
		func() time.Duration { return clk.Since(start) }
}

// TestHungCallsFailAtTheirDeadline: a hung call fails with the gRPC deadline error exactly
// when runtimeRequestTimeout has passed on the virtual clock; StopContainer gets the grace
// period on top, as upstream.
func TestHungCallsFailAtTheirDeadline(t *testing.T) {
	tests := []struct {
		name   string
		method string
		call   func(ctx context.Context, c *Client) error
		want   time.Duration
	}{
		{"Status", "Status", func(ctx context.Context, c *Client) error { _, err := c.Status(ctx); return err }, timeout},
		{"GetPods", "ListPodSandbox", func(ctx context.Context, c *Client) error { _, err := c.GetPods(ctx, true); return err }, timeout},
		{"ListImages", "ListImages", func(ctx context.Context, c *Client) error { _, err := c.ListImages(ctx); return err }, timeout},
		{"UpdateContainerResources", "UpdateContainerResources", func(ctx context.Context, c *Client) error {
			return c.UpdateContainerResources(ctx, "c", &cri.ContainerResources{CPUShares: 2})
		}, timeout},
		{"StopContainer with 30s grace", "StopContainer", func(ctx context.Context, c *Client) error { return c.StopContainer(ctx, "c", 30) }, timeout + 30*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk, loop, c, elapsed := newRuntime(t, fault.Spec{Method: tt.method, Type: fault.Hang})
			err := simtest.Await(t, clk, []runner.Loop{loop}, time.Hour, func(ctx context.Context) error { return tt.call(ctx, c) })
			if !errors.Is(err, cri.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want the deadline error", err)
			}
			if !strings.HasSuffix(err.Error(), "rpc error: code = DeadlineExceeded desc = context deadline exceeded") {
				t.Fatalf("err = %q, want the gRPC deadline text", err)
			}
			if got := elapsed(); got != tt.want {
				t.Fatalf("failed after %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPullImageHasNoDeadline: a pull slower than runtimeRequestTimeout still succeeds.
func TestPullImageHasNoDeadline(t *testing.T) {
	clk, loop, c, elapsed := newRuntime(t, fault.Spec{Method: "PullImage", Type: fault.Latency, Delay: metav1.Duration{Duration: 10 * time.Minute}})
	err := simtest.Await(t, clk, []runner.Loop{loop}, time.Hour, func(ctx context.Context) error {
		_, err := c.PullImage(ctx, cri.ImageSpec{Image: "busybox"}, nil)
		return err
	})
	if err != nil || elapsed() != 10*time.Minute {
		t.Fatalf("err=%v after %v, want success after 10m", err, elapsed())
	}
}

// TestCallWithinTheDeadlineSucceeds: latency below the timeout delays but does not fail.
func TestCallWithinTheDeadlineSucceeds(t *testing.T) {
	clk, loop, c, elapsed := newRuntime(t, fault.Spec{Method: "Status", Type: fault.Latency, Delay: metav1.Duration{Duration: time.Minute}})
	err := simtest.Await(t, clk, []runner.Loop{loop}, time.Hour, func(ctx context.Context) error {
		_, err := c.Status(ctx)
		return err
	})
	if err != nil || elapsed() != time.Minute {
		t.Fatalf("err=%v after %v, want success after 1m", err, elapsed())
	}
}

// TestOperationMetrics: every CRI call is counted by upstream's operation_type when it
// returns, its duration observed on the node's clock, and its failure counted; GetPods counts
// as the two calls it stands for, its error against the one that failed.
func TestOperationMetrics(t *testing.T) {
	tests := []struct {
		name       string
		faults     []fault.Spec
		call       func(ctx context.Context, c *Client) error
		wantTotal  map[string]float64
		wantErrors map[string]float64
		wantSum    map[string]float64 // seconds observed
	}{
		{"relist", nil, func(ctx context.Context, c *Client) error { _, err := c.GetPods(ctx, true); return err },
			map[string]float64{"list_podsandbox": 1, "list_containers": 1}, nil, nil},
		{"relist failing in ListContainers", []fault.Spec{{Method: "ListContainers", Type: fault.Error}},
			func(ctx context.Context, c *Client) error { _, err := c.GetPods(ctx, true); return err },
			map[string]float64{"list_podsandbox": 1, "list_containers": 1}, map[string]float64{"list_containers": 1}, nil},
		{"relist hung in ListPodSandbox", []fault.Spec{{Method: "ListPodSandbox", Type: fault.Hang}},
			func(ctx context.Context, c *Client) error { _, err := c.GetPods(ctx, true); return err },
			map[string]float64{"list_podsandbox": 1}, map[string]float64{"list_podsandbox": 1}, map[string]float64{"list_podsandbox": timeout.Seconds()}},
		{"slow status", []fault.Spec{{Method: "Status", Type: fault.Latency, Delay: metav1.Duration{Duration: 3 * time.Second}}},
			func(ctx context.Context, c *Client) error { _, err := c.Status(ctx); return err },
			map[string]float64{"status": 1}, nil, map[string]float64{"status": 3}},
		{"pod status", nil, func(ctx context.Context, c *Client) error {
			_, err := c.GetPodStatus(ctx, "uid", "p", "default")
			return err
		},
			map[string]float64{"list_podsandbox": 1, "list_containers": 1}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk, loop, c, _ := newRuntime(t, tt.faults...)
			reg := metrics.NewRegistry("kubelet_")
			c.Instrument(reg)
			_ = simtest.Await(t, clk, []runner.Loop{loop}, time.Hour, func(ctx context.Context) error { return tt.call(ctx, c) })
			got := map[string]map[string]float64{"total": {}, "errors": {}, "sum": {}}
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range families {
				for _, m := range f.GetMetric() {
					op := m.GetLabel()[0].GetValue()
					switch f.GetName() {
					case "kubelet_runtime_operations_total":
						got["total"][op] = m.GetCounter().GetValue()
					case "kubelet_runtime_operations_errors_total":
						got["errors"][op] = m.GetCounter().GetValue()
					case "kubelet_runtime_operations_duration_seconds":
						if s := m.GetHistogram().GetSampleSum(); s != 0 {
							got["sum"][op] = s
						}
					}
				}
			}
			for kind, want := range map[string]map[string]float64{"total": tt.wantTotal, "errors": tt.wantErrors, "sum": tt.wantSum} {
				if want == nil {
					want = map[string]float64{}
				}
				if fmt.Sprint(got[kind]) != fmt.Sprint(want) {
					t.Errorf("%s = %v, want %v", kind, got[kind], want)
				}
			}
		})
	}
}
