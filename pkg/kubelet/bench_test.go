package kubelet

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// BenchmarkHandlePodAdditions measures admitting a batch of new pods: each one is checked
// against every pod admitted before it, as upstream, so the cost grows with the square of
// the batch.
func BenchmarkHandlePodAdditions(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			cfg, gate := loadConfig(b, b.TempDir(), fmt.Sprintf("--max-pods=%d", n))
			pods := make([]*v1.Pod, n)
			for i := range pods {
				pods[i] = &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%d", i))},
					Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{
						Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1m"), v1.ResourceMemory: resource.MustParse("1Mi")},
					}}}},
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				k, err := New(Config{Config: cfg, Gate: gate, Clock: clocktesting.NewFakeClock(epoch), Synchronous: true})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				k.HandlePodAdditions(pods)
				b.StopTimer()
				if got := len(k.PodWorkers().PendingPods()); got != n {
					b.Fatalf("%d pods dispatched, want %d", got, n)
				}
				k.Stop()
				b.StartTimer()
			}
		})
	}
}
