package podworkers

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
)

type nopHandler struct{}

func (nopHandler) SyncPod(context.Context, kubetypes.SyncPodType, *v1.Pod, *container.PodStatus) (bool, error) {
	return false, nil
}
func (nopHandler) SyncTerminatingPod(context.Context, *v1.Pod, *container.PodStatus, *int64, func(*v1.PodStatus)) error {
	return nil
}
func (nopHandler) SyncTerminatingRuntimePod(context.Context, *container.Pod) error { return nil }
func (nopHandler) SyncTerminatedPod(context.Context, *v1.Pod, *container.PodStatus) error {
	return nil
}

// BenchmarkStepAll measures the pod workers' own cost per sync round (update, freshness
// check, state machine, requeue) in synchronous mode, with a handler that does nothing.
func BenchmarkStepAll(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			clk := testclock.NewFakeClock(epoch)
			cache := statuscache.New(statuscache.Config{})
			p, err := New(Config{Handler: nopHandler{}, Cache: cache, Clock: clk, Synchronous: true})
			if err != nil {
				b.Fatal(err)
			}
			pods := make([]*v1.Pod, n)
			for i := range pods {
				pods[i] = testPod(fmt.Sprint("p", i))
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, pod := range pods {
					p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodSync})
				}
				clk.Step(time.Second)
				cache.UpdateTime(clk.Now())
				if got := p.StepAll(ctx); got != n {
					b.Fatalf("StepAll ran %d, want %d", got, n)
				}
			}
		})
	}
}
