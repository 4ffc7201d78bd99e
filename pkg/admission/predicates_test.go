package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

func ports(ps ...v1.ContainerPort) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c", Ports: ps})
	}
}

func sidecarPorts(ps ...v1.ContainerPort) podOpt {
	always := v1.ContainerRestartPolicyAlways
	return func(p *v1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "s", RestartPolicy: &always, Ports: ps})
	}
}

func initPorts(ps ...v1.ContainerPort) podOpt {
	return func(p *v1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "i", Ports: ps})
	}
}

// hp is a container port bound on the host: hostPort, protocol ("" is TCP) and hostIP
// ("" is every address).
func hp(port int32, protocol v1.Protocol, ip string) v1.ContainerPort {
	return v1.ContainerPort{ContainerPort: 8080, HostPort: port, Protocol: protocol, HostIP: ip}
}

func nodeSelector(sel map[string]string) podOpt { return func(p *v1.Pod) { p.Spec.NodeSelector = sel } }

func nodeName(n string) podOpt { return func(p *v1.Pod) { p.Spec.NodeName = n } }

func tolerate(ts ...v1.Toleration) podOpt {
	return func(p *v1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, ts...) }
}

func static() podOpt {
	return func(p *v1.Pod) {
		p.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource}
	}
}

func podLabels(l map[string]string) podOpt { return func(p *v1.Pod) { p.Labels = l } }

func podOS(os v1.OSName) podOpt { return func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: os} } }

func TestAdmitPredicates(t *testing.T) {
	node := NodeInfo{
		Allocatable: rl("cpu", "2", "memory", "1Gi", "pods", "110"),
		MaxPods:     10,
		Name:        "n1",
		Labels:      map[string]string{v1.LabelOSStable: "linux", v1.LabelHostname: "n1", "zone": "a"},
		Taints: []v1.Taint{
			{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoExecute},
			{Key: "spot", Effect: v1.TaintEffectNoSchedule},
			{Key: "drain", Effect: v1.TaintEffectPreferNoSchedule},
		},
	}
	tolerateDB := tolerate(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "db", Effect: v1.TaintEffectNoExecute})
	web := func(name string, opts ...podOpt) *v1.Pod {
		return mkPod(name, append([]podOpt{tolerateDB}, opts...)...)
	}
	strict := func(p *v1.Pod) {
		policy := v1.SupplementalGroupsPolicyStrict
		p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &policy}
	}
	hog := web("hog", app(rl("cpu", "1800m")))
	port80 := web("port80", ports(hp(80, "", "")))
	critical := int32(kubetypes.SystemCriticalPriority)
	tests := []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
		reason   string
		message  string
	}{
		{"everything fits", web("new", app(rl("cpu", "100m")), nodeSelector(map[string]string{"zone": "a"}), nodeName("n1"), ports(hp(8080, "", ""))), []*v1.Pod{hog, port80}, "", ""},

		{"OS label", web("new", podLabels(map[string]string{v1.LabelOSStable: "windows"})), nil,
			"PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{"OS field", web("new", podOS("windows")), nil,
			"PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"},
		{"the OS is checked before resources", web("new", podOS("windows"), app(rl("cpu", "1"))), []*v1.Pod{hog}, "PodOSNotSupported", ""},

		{"Strict on a node whose runtime lacks it", web("new", strict), nil,
			"SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node"},
		{"the OS is checked before the policy", web("new", strict, podOS("windows")), nil, "PodOSNotSupported", ""},
		{"the policy is checked before resources", web("new", strict, app(rl("cpu", "500m"))), []*v1.Pod{hog}, "SupplementalGroupsPolicyNotSupported", ""},
		{"Merge needs nothing of the runtime", web("new", func(p *v1.Pod) {
			merge := v1.SupplementalGroupsPolicyMerge
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &merge}
		}), nil, "", ""},

		{"resources", web("new", app(rl("cpu", "500m"))), []*v1.Pod{hog},
			"OutOfcpu", "Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000"},

		{"node selector", web("new", nodeSelector(map[string]string{"zone": "b"})), nil,
			"NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{"required node affinity", web("new", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n2"}}}}},
			}}}
		}), nil, "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{"resources are reported before node affinity", web("new", app(rl("cpu", "500m")), nodeSelector(map[string]string{"zone": "b"})), []*v1.Pod{hog}, "OutOfcpu", ""},

		{"node name", web("new", nodeName("n2")), nil,
			"NodeName", "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{"node affinity is reported before node name", web("new", nodeName("n2"), nodeSelector(map[string]string{"zone": "b"})), nil, "NodeAffinity", ""},

		{"host port", web("new", ports(hp(80, "", ""))), []*v1.Pod{port80},
			"NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{"node name is reported before host ports", web("new", nodeName("n2"), ports(hp(80, "", ""))), []*v1.Pod{port80}, "NodeName", ""},

		{"untolerated NoExecute taint", mkPod("new"), nil,
			"TaintToleration", "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{"host ports are reported before taints", mkPod("new", ports(hp(80, "", ""))), []*v1.Pod{port80}, "NodePorts", ""},
		{"a toleration with Exists and no key tolerates every taint", mkPod("new", tolerate(v1.Toleration{Operator: v1.TolerationOpExists})), nil, "", ""},
		{"a toleration of the key with Exists", mkPod("new", tolerate(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists})), nil, "", ""},
		{"a toleration of another value", mkPod("new", tolerate(v1.Toleration{Key: "dedicated", Value: "web", Effect: v1.TaintEffectNoExecute})), nil, "TaintToleration", ""},
		{"a toleration of another effect", mkPod("new", tolerate(v1.Toleration{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule})), nil, "TaintToleration", ""},
		{"Gt tolerates nothing with comparison operators off", mkPod("new", tolerate(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpGt, Value: "1"})), nil, "TaintToleration", ""},
		{"NoSchedule and PreferNoSchedule taints are the scheduler's", web("new"), nil, "", ""},
		{"a static pod ignores taints", mkPod("new", static()), nil, "", ""},

		{"a critical pod short of resources is refused for another predicate first",
			mkPod("new", static(), app(rl("cpu", "500m")), ports(hp(80, "", ""))), []*v1.Pod{hog, port80}, "NodePorts", ""},
		{"a critical pod short of resources only (upstream would preempt)",
			web("new", app(rl("cpu", "500m")), func(p *v1.Pod) { p.Spec.Priority = &critical }), []*v1.Pod{hog}, "OutOfcpu", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AdmitPredicates(tt.pod, tt.admitted, node)
			if got.Admit != (tt.reason == "") || got.Reason != tt.reason {
				t.Fatalf("AdmitPredicates = %+v, want reason %q", got, tt.reason)
			}
			if tt.message != "" && got.Message != tt.message {
				t.Errorf("message = %q\nwant      %q", got.Message, tt.message)
			}
		})
	}
	t.Run("Strict on a node whose runtime honours it", func(t *testing.T) {
		supporting := node
		supporting.SupplementalGroupsPolicy = func() bool { return true }
		if got := AdmitPredicates(web("new", strict), nil, supporting); !got.Admit {
			t.Errorf("AdmitPredicates = %+v, want admitted", got)
		}
	})
}

// TestHostPortConflicts follows the scheduler's NodePorts plugin (HostPortInfo.CheckConflict).
func TestHostPortConflicts(t *testing.T) {
	node := NodeInfo{Allocatable: rl("pods", "110"), Name: "n1", Labels: map[string]string{v1.LabelOSStable: "linux"}}
	tests := []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
		conflict bool
	}{
		{"same port, protocol and no IP", mkPod("new", ports(hp(80, "", ""))), []*v1.Pod{mkPod("a", ports(hp(80, "", "")))}, true},
		{"TCP is the default protocol", mkPod("new", ports(hp(80, v1.ProtocolTCP, ""))), []*v1.Pod{mkPod("a", ports(hp(80, "", "")))}, true},
		{"another protocol", mkPod("new", ports(hp(53, v1.ProtocolUDP, ""))), []*v1.Pod{mkPod("a", ports(hp(53, v1.ProtocolTCP, "")))}, false},
		{"SCTP against UDP", mkPod("new", ports(hp(53, v1.ProtocolSCTP, ""))), []*v1.Pod{mkPod("a", ports(hp(53, v1.ProtocolUDP, "")))}, false},
		{"another port", mkPod("new", ports(hp(81, "", ""))), []*v1.Pod{mkPod("a", ports(hp(80, "", "")))}, false},
		{"0.0.0.0 is every IP", mkPod("new", ports(hp(80, "", "0.0.0.0"))), []*v1.Pod{mkPod("a", ports(hp(80, "", "")))}, true},
		{"0.0.0.0 against a given IP", mkPod("new", ports(hp(80, "", "0.0.0.0"))), []*v1.Pod{mkPod("a", ports(hp(80, "", "10.0.0.1")))}, true},
		{"no IP against a given IP", mkPod("new", ports(hp(80, "", ""))), []*v1.Pod{mkPod("a", ports(hp(80, "", "10.0.0.1")))}, true},
		{"a given IP against 0.0.0.0", mkPod("new", ports(hp(80, "", "10.0.0.1"))), []*v1.Pod{mkPod("a", ports(hp(80, "", "0.0.0.0")))}, true},
		{"the same IP", mkPod("new", ports(hp(80, "", "10.0.0.1"))), []*v1.Pod{mkPod("a", ports(hp(80, "", "10.0.0.1")))}, true},
		{"two other IPs", mkPod("new", ports(hp(80, "", "10.0.0.1"))), []*v1.Pod{mkPod("a", ports(hp(80, "", "10.0.0.2")))}, false},
		{"0.0.0.0 against another protocol on a given IP", mkPod("new", ports(hp(80, v1.ProtocolUDP, ""))), []*v1.Pod{mkPod("a", ports(hp(80, "", "10.0.0.1")))}, false},
		{"a container port without a host port binds nothing", mkPod("new", ports(v1.ContainerPort{ContainerPort: 80})), []*v1.Pod{mkPod("a", ports(v1.ContainerPort{ContainerPort: 80}))}, false},
		{"any port of the pod", mkPod("new", ports(hp(81, "", ""), hp(80, "", ""))), []*v1.Pod{mkPod("a", ports(hp(80, "", "")))}, true},
		{"a sidecar's host port is held", mkPod("new", ports(hp(80, "", ""))), []*v1.Pod{mkPod("a", sidecarPorts(hp(80, "", "")))}, true},
		{"a sidecar's host port is wanted", mkPod("new", sidecarPorts(hp(80, "", ""))), []*v1.Pod{mkPod("a", ports(hp(80, "", "")))}, true},
		{"a plain init container's host port does not count", mkPod("new", initPorts(hp(80, "", ""))), []*v1.Pod{mkPod("a", initPorts(hp(80, "", "")), ports(hp(80, "", "")))}, false},
		{"a succeeded pod holds no port", mkPod("new", ports(hp(80, "", ""))), []*v1.Pod{mkPod("a", ports(hp(80, "", "")), phase(v1.PodSucceeded))}, false},
		{"a failed pod holds no port", mkPod("new", ports(hp(80, "", ""))), []*v1.Pod{mkPod("a", ports(hp(80, "", "")), phase(v1.PodFailed))}, false},
		{"the pod does not conflict with itself", mkPod("new", ports(hp(80, "", ""))), []*v1.Pod{mkPod("new", ports(hp(80, "", "")))}, false},
		{"two containers of one pod with the same port", mkPod("new", ports(hp(80, "", "")), ports(hp(80, "", ""))), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AdmitPredicates(tt.pod, tt.admitted, node)
			if tt.conflict != (got.Reason == ReasonNodePorts) || got.Admit == tt.conflict {
				t.Errorf("AdmitPredicates = %+v, want conflict %t", got, tt.conflict)
			}
		})
	}
}

// A Usage keeps the ports of the pods it counts: Remove frees a port only when no other
// counted pod binds it, and the pod being admitted leaves out its own bindings.
func TestUsageTracksHostPorts(t *testing.T) {
	node := NodeInfo{Allocatable: rl("pods", "110"), Name: "n1", Labels: map[string]string{v1.LabelOSStable: "linux"}}
	a := mkPod("a", ports(hp(80, "", "")))
	b := mkPod("b", ports(hp(80, "", "10.0.0.1")))
	newPod := mkPod("new", ports(hp(80, "", "")))
	u := NewUsage([]*v1.Pod{a, b})
	steps := []struct {
		name     string
		do       func()
		conflict bool
	}{
		{"both bind 80", func() {}, true},
		{"a removed, b still binds 10.0.0.1:80", func() { u.Remove(a.UID) }, true},
		{"b removed", func() { u.Remove(b.UID) }, false},
		{"new itself counted", func() { u.Add(newPod) }, false},
		{"new counted twice still leaves itself out", func() { u.Add(newPod) }, false},
		{"a back", func() { u.Add(a) }, true},
		{"an unknown UID removed changes nothing", func() { u.Remove("nobody") }, true},
	}
	for _, s := range steps {
		s.do()
		got := u.AdmitPredicates(newPod, node)
		if s.conflict != (got.Reason == ReasonNodePorts) {
			t.Errorf("%s: AdmitPredicates = %+v, want conflict %t", s.name, got, s.conflict)
		}
	}
	if len(u.ports) == 0 {
		t.Fatal("no ports counted")
	}
	u.Remove(a.UID)
	u.Remove(newPod.UID)
	if len(u.ports) != 0 {
		t.Errorf("ports left after every pod was removed: %v", u.ports)
	}
}

func TestAdmitPodLevelResources(t *testing.T) {
	tests := []struct {
		name   string
		pod    *v1.Pod
		gate   bool
		reason string
	}{
		{"gate on", mkPod("p", podLevel(rl("cpu", "1"))), true, ""},
		{"gate off, no pod-level resources", mkPod("p", app(rl("cpu", "1"))), false, ""},
		{"gate off, pod-level requests", mkPod("p", podLevel(rl("cpu", "1"))), false, ReasonPodLevelResources},
		{"gate off, pod-level limits", mkPod("p", podLevelLimits(rl("memory", "1Gi"))), false, ReasonPodLevelResources},
		{"gate off, only unsupported pod-level resources", mkPod("p", podLevel(rl("ephemeral-storage", "1Gi"))), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AdmitPodLevelResources(tt.pod, tt.gate)
			if got.Admit != (tt.reason == "") || got.Reason != tt.reason {
				t.Fatalf("AdmitPodLevelResources = %+v, want reason %q", got, tt.reason)
			}
			if !got.Admit && got.Message != "PodLevelResources feature gate is disabled" {
				t.Errorf("message = %q", got.Message)
			}
		})
	}
}

func TestAdmitSupplementalGroupsPolicy(t *testing.T) {
	policy := func(p v1.SupplementalGroupsPolicy) podOpt {
		return func(pod *v1.Pod) {
			pod.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &p}
		}
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		supports bool
		reason   string
	}{
		{"no policy", mkPod("p"), false, ""},
		{"Merge", mkPod("p", policy(v1.SupplementalGroupsPolicyMerge)), false, ""},
		{"Strict on a node without the feature", mkPod("p", policy(v1.SupplementalGroupsPolicyStrict)), false, ReasonSupplementalGroupsPolicy},
		{"Strict on a node with it", mkPod("p", policy(v1.SupplementalGroupsPolicyStrict)), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AdmitSupplementalGroupsPolicy(tt.pod, tt.supports)
			if got.Admit != (tt.reason == "") || got.Reason != tt.reason {
				t.Fatalf("AdmitSupplementalGroupsPolicy = %+v, want reason %q", got, tt.reason)
			}
			if !got.Admit && got.Message != "SupplementalGroupsPolicy=Strict is not supported in this node" {
				t.Errorf("message = %q", got.Message)
			}
		})
	}
}
