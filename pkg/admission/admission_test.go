package admission

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/metrics"
)

func rl(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

type podOpt func(*v1.Pod)

func mkPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func app(req v1.ResourceList) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req}})
	}
}

func initC(req v1.ResourceList) podOpt {
	return func(p *v1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "i", Resources: v1.ResourceRequirements{Requests: req}})
	}
}

func sidecar(req v1.ResourceList) podOpt {
	always := v1.ContainerRestartPolicyAlways
	return func(p *v1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "s", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: req}})
	}
}

func overhead(l v1.ResourceList) podOpt { return func(p *v1.Pod) { p.Spec.Overhead = l } }

func podLevel(req v1.ResourceList) podOpt {
	return func(p *v1.Pod) { p.Spec.Resources = &v1.ResourceRequirements{Requests: req} }
}

func podLevelLimits(lim v1.ResourceList) podOpt {
	return func(p *v1.Pod) { p.Spec.Resources = &v1.ResourceRequirements{Limits: lim} }
}

func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want v1.ResourceList
	}{
		{"app containers add up", mkPod("p", app(rl("cpu", "100m", "memory", "64Mi")), app(rl("cpu", "200m"))), rl("cpu", "300m", "memory", "64Mi")},
		{"a bigger init container wins", mkPod("p", initC(rl("cpu", "1")), app(rl("cpu", "200m"))), rl("cpu", "1")},
		{"init containers take the max, not the sum", mkPod("p", initC(rl("memory", "100Mi")), initC(rl("memory", "200Mi")), app(rl("memory", "50Mi"))), rl("memory", "200Mi")},
		{"a sidecar adds to the app containers", mkPod("p", sidecar(rl("cpu", "500m")), app(rl("cpu", "1"))), rl("cpu", "1500m")},
		{"an init container after a sidecar runs next to it", mkPod("p", sidecar(rl("cpu", "500m")), initC(rl("cpu", "2")), app(rl("cpu", "100m"))), rl("cpu", "2500m")},
		{"an init container before a sidecar does not", mkPod("p", initC(rl("cpu", "2")), sidecar(rl("cpu", "500m")), app(rl("cpu", "100m"))), rl("cpu", "2")},
		{"overhead is added", mkPod("p", app(rl("memory", "100Mi")), overhead(rl("memory", "20Mi"))), rl("memory", "120Mi")},
		{"no requests", mkPod("p", app(nil)), rl()},
		{"pod-level requests replace the containers'", mkPod("p", app(rl("cpu", "100m", "memory", "64Mi")), podLevel(rl("cpu", "1", "memory", "1Gi"))), rl("cpu", "1", "memory", "1Gi")},
		{"a resource pod-level requests leave out comes from the containers", mkPod("p", app(rl("cpu", "100m", "memory", "64Mi")), podLevel(rl("cpu", "1"))), rl("cpu", "1", "memory", "64Mi")},
		{"pod-level requests replace the init container peak too", mkPod("p", initC(rl("cpu", "3")), app(rl("cpu", "100m")), podLevel(rl("cpu", "2"))), rl("cpu", "2")},
		{"pod-level hugepages count", mkPod("p", app(nil), podLevel(rl("memory", "1Gi", "hugepages-2Mi", "4Mi"))), rl("memory", "1Gi", "hugepages-2Mi", "4Mi")},
		{"overhead is added to pod-level requests", mkPod("p", app(rl("cpu", "100m")), podLevel(rl("cpu", "1")), overhead(rl("cpu", "250m"))), rl("cpu", "1250m")},
		{"pod-level limits alone change no request", mkPod("p", app(rl("cpu", "100m")), podLevelLimits(rl("cpu", "1"))), rl("cpu", "100m")},
		{"only unsupported pod-level requests: not set", mkPod("p", app(rl("ephemeral-storage", "1Gi")), podLevel(rl("ephemeral-storage", "5Gi"))), rl("ephemeral-storage", "1Gi")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodRequests(tt.pod)
			if len(got) != len(tt.want) {
				t.Fatalf("PodRequests = %v, want %v", got, tt.want)
			}
			for name, q := range tt.want {
				if g := got[name]; g.Cmp(q) != 0 {
					t.Errorf("%s = %s, want %s", name, g.String(), q.String())
				}
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	node := NodeInfo{Allocatable: rl("cpu", "2", "memory", "1Gi", "ephemeral-storage", "10Gi", "pods", "110"), MaxPods: 3}
	small := func(n string) *v1.Pod { return mkPod(n, app(rl("cpu", "500m", "memory", "256Mi"))) }
	tests := []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
		node     NodeInfo
		reason   string
		message  string
	}{
		{"fits", small("new"), []*v1.Pod{small("a"), small("b")}, node, "", ""},
		{"max pods", small("new"), []*v1.Pod{small("a"), small("b"), small("c")}, node,
			"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{"maxPods 0 falls back to allocatable pods", small("new"), []*v1.Pod{small("a")}, NodeInfo{Allocatable: rl("cpu", "2", "memory", "1Gi", "pods", "1")},
			"OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"},
		{"terminal pods do not count", small("new"), []*v1.Pod{mkPod("done", phase(v1.PodSucceeded)), mkPod("failed", phase(v1.PodFailed)), small("a"), small("b")}, node, "", ""},
		{"the pod itself does not count", small("new"), []*v1.Pod{small("new"), small("a"), small("b")}, node, "", ""},
		{"cpu", mkPod("new", app(rl("cpu", "1200m"))), []*v1.Pod{small("a"), small("b")}, node,
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 1200, used: 1000, capacity: 2000"},
		{"memory", mkPod("new", app(rl("memory", "800Mi"))), []*v1.Pod{small("a")}, node,
			"OutOfmemory", "Node didn't have enough resource: memory, requested: 838860800, used: 268435456, capacity: 1073741824"},
		{"ephemeral storage", mkPod("new", app(rl("ephemeral-storage", "11Gi"))), nil, node,
			"OutOfephemeral-storage", "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240"},
		{"exactly full fits", mkPod("new", app(rl("cpu", "1"))), []*v1.Pod{small("a"), small("b")}, node, "", ""},
		{"pods is reported before cpu", mkPod("new", app(rl("cpu", "3"))), []*v1.Pod{small("a"), small("b"), small("c")}, node, "OutOfpods", ""},
		{"cpu is reported before memory", mkPod("new", app(rl("cpu", "3", "memory", "2Gi"))), nil, node, "OutOfcpu", ""},
		{"a best-effort pod fits a full node", mkPod("new", app(nil)), []*v1.Pod{mkPod("hog", app(rl("cpu", "2", "memory", "1Gi")))}, node, "", ""},
		{"init container peak", mkPod("new", initC(rl("cpu", "2500m")), app(rl("cpu", "100m"))), nil, node,
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 2500, used: 0, capacity: 2000"},
		{"sidecars add up", mkPod("new", sidecar(rl("cpu", "1")), app(rl("cpu", "1"))), []*v1.Pod{mkPod("a", app(rl("cpu", "100m")))}, node,
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 2000, used: 100, capacity: 2000"},
		{"overhead counts", mkPod("new", app(rl("memory", "1Gi")), overhead(rl("memory", "1Mi"))), nil, node, "OutOfmemory", ""},
		{"an extended resource the node lacks is ignored", mkPod("new", app(rl("example.com/gpu", "1"))), nil, node, "", ""},
		{"an extended resource the node has is checked", mkPod("new", app(rl("example.com/gpu", "2"))), nil,
			NodeInfo{Allocatable: rl("example.com/gpu", "1"), MaxPods: 10},
			"OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1"},
		{"hugepages the node lacks", mkPod("new", app(rl("hugepages-2Mi", "4Mi"))), nil, node, "OutOfhugepages-2Mi", ""},
		{"pod-level cpu is what is checked", mkPod("new", app(rl("cpu", "100m")), podLevel(rl("cpu", "1600m"))), []*v1.Pod{small("a")}, node,
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 1600, used: 500, capacity: 2000"},
		{"pod-level memory of the admitted pods is what is used", mkPod("new", app(rl("memory", "600Mi"))), []*v1.Pod{mkPod("a", app(rl("memory", "1Mi")), podLevel(rl("memory", "512Mi")))}, node,
			"OutOfmemory", "Node didn't have enough resource: memory, requested: 629145600, used: 536870912, capacity: 1073741824"},
		{"pod-level requests below the containers' sum fit", mkPod("new", app(rl("cpu", "3")), podLevel(rl("cpu", "1"))), []*v1.Pod{small("a")}, node, "", ""},
		{"a resource the scheduler does not count is not checked", mkPod("new", app(rl("foo", "1"))), nil, node, "", ""},
		{"a zero node admits nothing", small("new"), nil, NodeInfo{}, "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 0, capacity: 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Admit(tt.pod, tt.admitted, tt.node)
			if got.Admit != (tt.reason == "") {
				t.Fatalf("Admit = %+v, want admit %v", got, tt.reason == "")
			}
			if got.Reason != tt.reason {
				t.Errorf("reason = %q, want %q", got.Reason, tt.reason)
			}
			if tt.message != "" && got.Message != tt.message {
				t.Errorf("message = %q\nwant      %q", got.Message, tt.message)
			}
			if !got.Admit && !strings.HasPrefix(got.Message, "Node didn't have enough resource: ") {
				t.Errorf("message %q lacks upstream's prefix", got.Message)
			}
		})
	}
}

func TestFitsListsEveryShortage(t *testing.T) {
	node := NodeInfo{Allocatable: rl("cpu", "1", "memory", "1Gi", "zz.io/b", "0", "aa.io/a", "0"), MaxPods: 1}
	short := Fits(mkPod("new", app(rl("cpu", "2", "memory", "2Gi", "zz.io/b", "1", "aa.io/a", "1"))), []*v1.Pod{mkPod("x")}, node)
	var got []string
	for _, s := range short {
		got = append(got, s.Reason())
	}
	if want := "OutOfpods OutOfcpu OutOfmemory OutOfaa.io/a OutOfzz.io/b"; strings.Join(got, " ") != want {
		t.Errorf("Fits reasons = %v, want %s", got, want)
	}
}

func TestMetrics(t *testing.T) {
	reg := metrics.NewRegistry("kubelet_")
	m := NewMetrics(reg)
	m.Observe(Result{Admit: true})
	m.Observe(Result{Reason: "OutOfcpu"})
	m.Observe(Result{Reason: "OutOfcpu"})
	m.Observe(Result{Reason: "OutOfpods"})
	m.Observe(Result{Reason: "OutOfexample.com/gpu"})
	m.Observe(Result{Reason: "OutOfhugepages-2Mi"})
	m.Observe(Result{Reason: ReasonSysctlForbidden})
	m.Observe(Result{Reason: ReasonNodePorts})
	m.Observe(Result{Reason: ReasonNodeAffinity})
	m.Observe(Result{Reason: ReasonTaintToleration})
	want := `
# HELP kubelet_admission_rejections_total Cumulative number pod admission rejections by the Kubelet.
# TYPE kubelet_admission_rejections_total counter
kubelet_admission_rejections_total{reason="Other"} 3
kubelet_admission_rejections_total{reason="OutOfExtendedResources"} 2
kubelet_admission_rejections_total{reason="OutOfcpu"} 2
kubelet_admission_rejections_total{reason="OutOfpods"} 1
kubelet_admission_rejections_total{reason="SysctlForbidden"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_admission_rejections_total"); err != nil {
		t.Error(err)
	}
}

func BenchmarkAdmit(b *testing.B) {
	node := NodeInfo{Allocatable: rl("cpu", "64", "memory", "256Gi", "pods", "110"), MaxPods: 110}
	admitted := make([]*v1.Pod, 109)
	for i := range admitted {
		admitted[i] = mkPod("p"+string(rune('a'+i%26))+string(rune('a'+i/26)), app(rl("cpu", "100m", "memory", "128Mi")))
	}
	pod := mkPod("new", app(rl("cpu", "100m", "memory", "128Mi")))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !Admit(pod, admitted, node).Admit {
			b.Fatal("rejected")
		}
	}
}

// refFits is Fits as it was before Usage: it re-sums admittedPods itself. Usage must give
// exactly its results.
func refFits(pod *v1.Pod, admittedPods []*v1.Pod, node NodeInfo) []InsufficientResource {
	var active int64
	used := v1.ResourceList{}
	for _, p := range admittedPods {
		if p == nil || p.UID == pod.UID || isTerminal(p) {
			continue
		}
		active++
		addResourceList(used, PodRequests(p))
	}
	var out []InsufficientResource
	allowedPods := int64(node.MaxPods)
	if allowedPods <= 0 {
		q := node.Allocatable[v1.ResourcePods]
		allowedPods = q.Value()
	}
	if active+1 > allowedPods {
		out = append(out, InsufficientResource{ResourceName: v1.ResourcePods, Requested: 1, Used: active, Capacity: allowedPods})
	}
	req := PodRequests(pod)
	names := []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}
	var others []string
	for name := range req {
		switch name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, v1.ResourcePods:
			continue
		}
		if _, offered := node.Allocatable[name]; !offered && isExtendedResourceName(name) {
			continue
		}
		others = append(others, string(name))
	}
	sort.Strings(others)
	for _, n := range others {
		names = append(names, v1.ResourceName(n))
	}
	for _, name := range names {
		if r := check(name, req, used, node.Allocatable); r != nil {
			out = append(out, *r)
		}
	}
	return out
}

// TestUsageMatchesResumming admits random pods one after the other, as HandlePodAdditions
// does, keeping a Usage up to date with Add and Remove, and checks every decision against
// re-summing the admitted pods: same shortages, same numbers, in the same order.
func TestUsageMatchesResumming(t *testing.T) {
	cpus := []string{"0", "1m", "100m", "250m", "333m", "1", "1500m"}
	mems := []string{"0", "1", "1Mi", "64Mi", "100M", "1.5Gi"}
	phases := []v1.PodPhase{"", v1.PodRunning, v1.PodPending, v1.PodSucceeded, v1.PodFailed}
	node := NodeInfo{Allocatable: rl("cpu", "8", "memory", "8Gi", "ephemeral-storage", "10Gi", "example.com/gpu", "3"), MaxPods: 40}
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			randomPod := func(uid string) *v1.Pod {
				var opts []podOpt
				for c := r.Intn(3); c >= 0; c-- {
					req := rl("cpu", cpus[r.Intn(len(cpus))], "memory", mems[r.Intn(len(mems))])
					if r.Intn(5) == 0 {
						req["example.com/gpu"] = resource.MustParse("1")
					}
					if r.Intn(7) == 0 {
						req["other.io/thing"] = resource.MustParse("2")
					}
					switch r.Intn(4) {
					case 0:
						opts = append(opts, initC(req))
					case 1:
						opts = append(opts, sidecar(req))
					default:
						opts = append(opts, app(req))
					}
				}
				if r.Intn(4) == 0 {
					opts = append(opts, overhead(rl("cpu", "10m", "memory", "1Mi")))
				}
				opts = append(opts, phase(phases[r.Intn(len(phases))]))
				p := mkPod(uid, opts...)
				p.UID = types.UID(uid) // a few UIDs, so ADDs of known UIDs happen
				return p
			}
			var admitted []*v1.Pod
			usage := NewUsage(nil)
			admittedCount, rejectedCount := 0, 0
			for step := 0; step < 300; step++ {
				pod := randomPod(fmt.Sprintf("u%d", r.Intn(60)))
				want := refFits(pod, admitted, node)
				got := usage.Fits(pod, node)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d: Usage.Fits(%s) = %+v, want %+v", step, pod.UID, got, want)
				}
				if res := usage.Admit(pod, node); res.Admit != (len(want) == 0) {
					t.Fatalf("step %d: Usage.Admit = %+v, want admit %v", step, res, len(want) == 0)
				}
				if len(want) > 0 {
					rejectedCount++
					continue
				}
				admittedCount++
				kept := admitted[:0:0]
				for _, p := range admitted {
					if p.UID != pod.UID {
						kept = append(kept, p)
					}
				}
				admitted = append(kept, pod)
				usage.Remove(pod.UID)
				usage.Add(pod)
				if fresh := NewUsage(admitted); fresh.Pods() != usage.Pods() {
					t.Fatalf("step %d: %d pods counted, NewUsage counts %d", step, usage.Pods(), fresh.Pods())
				}
			}
			if admittedCount == 0 || rejectedCount == 0 {
				t.Fatalf("%d pods admitted, %d rejected: the test must exercise both", admittedCount, rejectedCount)
			}
		})
	}
}

func TestUsageCountsDuplicateUIDsLikeAdmit(t *testing.T) {
	node := NodeInfo{Allocatable: rl("cpu", "1", "memory", "1Gi"), MaxPods: 10}
	a := mkPod("a", app(rl("cpu", "400m")))
	tests := []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
	}{
		{"a UID twice counts twice", mkPod("new", app(rl("cpu", "300m"))), []*v1.Pod{a, a}},
		{"the pod's own UID is left out however often", mkPod("a", app(rl("cpu", "900m"))), []*v1.Pod{a, a, mkPod("b", app(rl("cpu", "100m")))}},
		{"terminal pods are skipped", mkPod("new", app(rl("cpu", "1"))), []*v1.Pod{mkPod("done", app(rl("cpu", "1")), phase(v1.PodFailed)), nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := refFits(tt.pod, tt.admitted, node)
			if got := NewUsage(tt.admitted).Fits(tt.pod, node); !reflect.DeepEqual(got, want) {
				t.Errorf("Usage.Fits = %+v, want %+v", got, want)
			}
			if got := Fits(tt.pod, tt.admitted, node); !reflect.DeepEqual(got, want) {
				t.Errorf("Fits = %+v, want %+v", got, want)
			}
		})
	}
}

// BenchmarkUsageAdmit admits one pod against 5000 counted pods: independent of their number.
func BenchmarkUsageAdmit(b *testing.B) {
	node := NodeInfo{Allocatable: rl("cpu", "1000", "memory", "1Ti", "pods", "6000"), MaxPods: 6000}
	admitted := make([]*v1.Pod, 5000)
	for i := range admitted {
		admitted[i] = mkPod(fmt.Sprintf("p%d", i), app(rl("cpu", "100m", "memory", "128Mi")))
	}
	usage := NewUsage(admitted)
	pod := mkPod("new", app(rl("cpu", "100m", "memory", "128Mi")))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !usage.Admit(pod, node).Admit {
			b.Fatal("rejected")
		}
	}
}
