package kuberuntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestOOMScoreAdjByQOS: the kubelet gives each container the oom_score_adj of its pod's
// QoS class (upstream's GetContainerOOMScoreAdjust), so the OOM killer of a full node
// chooses BestEffort, then Burstable by request, never Guaranteed first.
func TestOOMScoreAdjByQOS(t *testing.T) {
	rl := func(kv ...string) v1.ResourceList {
		out := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	tests := []struct {
		name     string
		res      v1.ResourceRequirements
		priority string
		static   bool
		want     int64
	}{
		{name: "BestEffort", want: 1000},
		{name: "Guaranteed", res: v1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi"), Limits: rl("cpu", "1", "memory", "1Gi")}, want: -997},
		{name: "Burstable, an eighth of the node", res: v1.ResourceRequirements{Requests: rl("memory", "1Gi")}, want: 875},
		{name: "Burstable by CPU alone", res: v1.ResourceRequirements{Requests: rl("cpu", "100m")}, want: 999},
		{name: "Burstable, limit only on memory, CPU unset", res: v1.ResourceRequirements{Requests: rl("cpu", "1"), Limits: rl("memory", "2Gi")}, want: 1000 - 250},
		{name: "a static pod of system-node-critical", priority: "system-node-critical", static: true, want: -997},
	}
	m := &Manager{cfg: Config{MemoryCapacity: 8 << 30}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := v1.Container{Name: "c", Resources: tt.res}
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}, PriorityClassName: tt.priority}}
			if tt.static {
				pod.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
			}
			if got := m.containerResources(pod, &c).OomScoreAdj; got != tt.want {
				t.Errorf("oom_score_adj %d, want %d", got, tt.want)
			}
		})
	}
}
