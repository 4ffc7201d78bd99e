package podworkers

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// countingHandler does nothing but count syncs; with wait set, each SyncPod waits for it
// (a pending runtime operation), so the sync runs as a suspended task.
type countingHandler struct {
	syncs int
	wait  *task.Op
}

func (h *countingHandler) SyncPod(ctx context.Context, _ kubetypes.SyncPodType, _ *v1.Pod, _ *container.PodStatus) (bool, error) {
	h.syncs++
	if h.wait != nil {
		return false, task.Await(ctx, h.wait)
	}
	return false, nil
}
func (*countingHandler) SyncTerminatingPod(context.Context, *v1.Pod, *container.PodStatus, *int64, func(*v1.PodStatus)) error {
	return nil
}
func (*countingHandler) SyncTerminatingRuntimePod(context.Context, *container.Pod) error { return nil }
func (*countingHandler) SyncTerminatedPod(context.Context, *v1.Pod, *container.PodStatus) error {
	return nil
}

// BenchmarkStep measures the pod workers' own cost per sync round (update, freshness check,
// task, state machine, requeue) with a handler that does nothing: one Step runs every pod's
// sync. With "await", each sync also waits once for a runtime operation, which costs a task
// suspension and a second Step.
func BenchmarkStep(b *testing.B) {
	for _, await := range []bool{false, true} {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("pods=%d/await=%t", n, await), func(b *testing.B) {
				clk := simtest.NewClock()
				cache := statuscache.New(statuscache.Config{})
				h := &countingHandler{}
				p, err := New(Config{Handler: h, Cache: cache, Clock: clk})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Stop()
				pods := make([]*v1.Pod, n)
				for i := range pods {
					pods[i] = testPod(fmt.Sprint("p", i))
				}
				ctx := task.WithoutBlocking(context.Background())
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if await {
						h.wait = task.NewOp()
					}
					for _, pod := range pods {
						p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodSync})
					}
					clk.Step(time.Second)
					cache.UpdateTime(clk.Now())
					h.syncs = 0
					p.Step(ctx)
					if await {
						h.wait.Complete(nil)
						p.Step(ctx)
					}
					if h.syncs != n || p.SyncsInFlight() != 0 {
						b.Fatalf("Step ran %d syncs (%d in flight), want %d done", h.syncs, p.SyncsInFlight(), n)
					}
				}
			})
		}
	}
}
