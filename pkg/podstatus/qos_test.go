package podstatus

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// cpuMem is a list of a CPU and a memory quantity, each left out when "".
func cpuMem(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func TestPodQOS(t *testing.T) {
	res := cpuMem
	ctr := func(req, lim v1.ResourceList) v1.Container {
		return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	for _, c := range []struct {
		name  string
		inits []v1.Container
		apps  []v1.Container
		want  v1.PodQOSClass
	}{
		{"nothing requested", nil, []v1.Container{ctr(nil, nil)}, v1.PodQOSBestEffort},
		{"zero requests and limits", nil, []v1.Container{ctr(res("0", "0"), res("0", "0"))}, v1.PodQOSBestEffort},
		{"only other resources", nil, []v1.Container{ctr(v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}, nil)}, v1.PodQOSBestEffort},
		{"requests only", nil, []v1.Container{ctr(res("10m", "16Mi"), nil)}, v1.PodQOSBurstable},
		{"limits equal to requests", nil, []v1.Container{ctr(res("100m", "64Mi"), res("100m", "64Mi"))}, v1.PodQOSGuaranteed},
		{"equal, written differently", nil, []v1.Container{ctr(res("0.1", "64Mi"), res("100m", "67108864"))}, v1.PodQOSGuaranteed},
		{"limits without requests", nil, []v1.Container{ctr(nil, res("100m", "64Mi"))}, v1.PodQOSGuaranteed},
		{"a cpu limit only", nil, []v1.Container{ctr(res("100m", "64Mi"), res("100m", ""))}, v1.PodQOSBurstable},
		{"a request below its limit", nil, []v1.Container{ctr(res("50m", "64Mi"), res("100m", "64Mi"))}, v1.PodQOSBurstable},
		{"one of two containers unlimited", nil, []v1.Container{ctr(res("100m", "64Mi"), res("100m", "64Mi")), ctr(nil, nil)}, v1.PodQOSBurstable},
		{"two guaranteed containers", nil, []v1.Container{ctr(res("100m", "64Mi"), res("100m", "64Mi")), ctr(res("1", "1Gi"), res("1", "1Gi"))}, v1.PodQOSGuaranteed},
		{"an init container without limits", []v1.Container{ctr(res("10m", ""), nil)}, []v1.Container{ctr(res("100m", "64Mi"), res("100m", "64Mi"))}, v1.PodQOSBurstable},
		{"an init container guaranteed too", []v1.Container{ctr(nil, res("1", "1Gi"))}, []v1.Container{ctr(nil, res("100m", "64Mi"))}, v1.PodQOSGuaranteed},
		{"only an init container requests", []v1.Container{ctr(res("10m", ""), nil)}, []v1.Container{ctr(nil, nil)}, v1.PodQOSBurstable},
	} {
		t.Run(c.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: c.inits, Containers: c.apps}}
			for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
				for i := range cs {
					// As the API server defaults them: requests from limits.
					for name, q := range cs[i].Resources.Limits {
						if _, ok := cs[i].Resources.Requests[name]; !ok {
							if cs[i].Resources.Requests == nil {
								cs[i].Resources.Requests = v1.ResourceList{}
							}
							cs[i].Resources.Requests[name] = q
						}
					}
				}
			}
			if got := podQOS(pod); got != c.want {
				t.Errorf("QoS class %s, want %s", got, c.want)
			}
		})
	}
}

func BenchmarkPodQOS(b *testing.B) {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "app", Resources: v1.ResourceRequirements{Requests: req}},
		{Name: "side", Resources: v1.ResourceRequirements{Requests: req}},
	}}}
	b.ReportAllocs()
	for b.Loop() {
		podQOS(pod)
	}
}

// TestPodQOSPodLevel: pod-level resources, when set, decide the class alone.
func TestPodQOSPodLevel(t *testing.T) {
	l := cpuMem
	guaranteedContainer := v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: l("100m", "64Mi"), Limits: l("100m", "64Mi")}}
	tests := []struct {
		name      string
		container v1.Container
		pod       v1.ResourceRequirements
		want      v1.PodQOSClass
	}{
		{"limits equal to requests", v1.Container{Name: "c"}, v1.ResourceRequirements{Requests: l("1", "1Gi"), Limits: l("1", "1Gi")}, v1.PodQOSGuaranteed},
		{"a cpu limit only, over a guaranteed container", guaranteedContainer, v1.ResourceRequirements{Requests: l("1", "1Gi"), Limits: l("1", "")}, v1.PodQOSBurstable},
		{"requests only", v1.Container{Name: "c"}, v1.ResourceRequirements{Requests: l("1", "")}, v1.PodQOSBurstable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{tc.container}, Resources: &tc.pod}}
			if got := podQOS(pod); got != tc.want {
				t.Errorf("QoS class %s, want %s", got, tc.want)
			}
		})
	}
}
