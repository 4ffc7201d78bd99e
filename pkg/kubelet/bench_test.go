package kubelet

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
)

// scaleConfig is a configuration for n pods of benchPod: maxPods and the machine are large
// enough that every one of them is admitted.
func scaleConfig(b testing.TB, dir string, n int, flags ...string) (*config.Config, featuregate.MutableFeatureGate) {
	cfg, gate := loadConfig(b, dir, append([]string{fmt.Sprintf("--max-pods=%d", n+10)}, flags...)...)
	cfg.Simulator.Machine.CPU = *resource.NewQuantity(int64(n/10+4), resource.DecimalSI)
	cfg.Simulator.Machine.Memory = *resource.NewQuantity(int64(n/10+8)<<30, resource.BinarySI)
	return cfg, gate
}

// benchPod is a small pod with requests, as a scale test would write them.
func benchPod(i int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%d", i))},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")},
		}}}},
	}
}

// BenchmarkHandlePodAdditions measures admitting a batch of new pods. Each one is admitted
// against every pod admitted before it, as upstream, but their requests are summed once per
// batch (admission.Usage), so the cost grows linearly with the batch; re-summing them for
// every pod made 1000 pods take about 0.5s.
func BenchmarkHandlePodAdditions(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			cfg, gate := scaleConfig(b, b.TempDir(), n)
			pods := make([]*v1.Pod, n)
			for i := range pods {
				pods[i] = benchPod(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				k, err := New(Config{Config: cfg, Gate: gate, Clock: clocktesting.NewFakeClock(epoch)})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				k.HandlePodAdditions(pods)
				b.StopTimer()
				if got := dispatched(k, pods); got != n {
					b.Fatalf("%d pods dispatched, want %d", got, n)
				}
				k.Stop()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkHandlePodAdditionsOneByOne measures adding one pod to a node that already runs
// existing pods, as when manifests are written one at a time: the active pods are filtered
// and summed once per batch, so this is the per-batch cost.
func BenchmarkHandlePodAdditionsOneByOne(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("existing=%d", n), func(b *testing.B) {
			cfg, gate := scaleConfig(b, b.TempDir(), n+1)
			k, err := New(Config{Config: cfg, Gate: gate, Clock: clocktesting.NewFakeClock(epoch)})
			if err != nil {
				b.Fatal(err)
			}
			defer k.Stop()
			pods := make([]*v1.Pod, n)
			for i := range pods {
				pods[i] = benchPod(i)
			}
			k.HandlePodAdditions(pods)
			extra := []*v1.Pod{benchPod(n)}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// The same UID again: an ADD that replaces the pod, admitted each time.
				k.HandlePodAdditions(extra)
			}
			b.StopTimer()
			if got := dispatched(k, append(pods, extra...)); got != n+1 {
				b.Fatalf("%d pods dispatched, want %d", got, n+1)
			}
		})
	}
}

// dispatched counts the pods that have a pod worker.
func dispatched(k *Kubelet, pods []*v1.Pod) int {
	n := 0
	for _, p := range pods {
		if _, ok := k.PodWorkers().State(p.UID); ok {
			n++
		}
	}
	return n
}
