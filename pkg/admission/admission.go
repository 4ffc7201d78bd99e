package admission

import (
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/pkg/metrics"
)

// NodeInfo is what admission needs to know about the node.
type NodeInfo struct {
	// Allocatable is the node's allocatable resources. A resource missing here has
	// capacity 0 (as upstream), except extended resources (domain-prefixed names outside
	// kubernetes.io), which are not checked when the node does not offer them.
	Allocatable v1.ResourceList
	// MaxPods caps the pods on the node (the kubelet's maxPods). 0 means Allocatable["pods"];
	// when both are unset no pod fits, as on a real node without a pods capacity.
	MaxPods int
	// Name, Labels and Taints are only read by AdmitPredicates. Name is the node's name (a
	// pod whose spec.nodeName is another fails NodeName); Labels are what nodeSelector,
	// required node affinity and the kubernetes.io/os check match; a pod must tolerate the
	// NoExecute ones among Taints.
	Name   string
	Labels map[string]string
	Taints []v1.Taint
	// SupplementalGroupsPolicy says whether the node's status.features.supplementalGroupsPolicy
	// is true now (its runtime honours Strict); nil: it is not. Only read by AdmitPredicates.
	SupplementalGroupsPolicy func() bool
}

// Result is the outcome of Admit. A rejected pod gets phase Failed with Reason and Message.
type Result struct {
	Admit   bool
	Reason  string
	Message string
}

// InsufficientResource is one resource the node lacks for the pod: upstream's
// InsufficientResourceError. Quantities are millicores for cpu and plain units (bytes,
// pods, devices) otherwise.
type InsufficientResource struct {
	ResourceName v1.ResourceName
	Requested    int64
	Used         int64
	Capacity     int64
}

// Reason is the rejection reason the kubelet gives: "OutOf" + the resource name.
func (r InsufficientResource) Reason() string { return "OutOf" + string(r.ResourceName) }

// Message is upstream's InsufficientResourceError text.
func (r InsufficientResource) Message() string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		r.ResourceName, r.Requested, r.Used, r.Capacity)
}

// Admit decides whether pod may run next to admittedPods, as the kubelet's
// predicateAdmitHandler does with the noderesources fit check: the pod count against the
// pods capacity, then cpu, memory, ephemeral-storage and other resources the pod requests
// against allocatable minus what the other pods request. Only the first shortage is
// returned, as upstream ("OutOfpods", "OutOfcpu", "OutOfmemory", "OutOfephemeral-storage",
// ...). admittedPods are the pods admitted before; terminal ones (phase Succeeded or Failed)
// and pod itself (same UID) are not counted. Pure and safe for concurrent use.
func Admit(pod *v1.Pod, admittedPods []*v1.Pod, node NodeInfo) Result {
	short := Fits(pod, admittedPods, node)
	if len(short) == 0 {
		return Result{Admit: true}
	}
	return Result{Admit: false, Reason: short[0].Reason(), Message: short[0].Message()}
}

// Fits returns every resource the node lacks for pod, in upstream's order: pods, cpu,
// memory, ephemeral-storage, then other resources by name. Empty means the pod fits.
func Fits(pod *v1.Pod, admittedPods []*v1.Pod, node NodeInfo) []InsufficientResource {
	var active int64
	used := v1.ResourceList{}
	for _, p := range admittedPods {
		if p == nil || p.UID == pod.UID || isTerminal(p) {
			continue
		}
		active++
		addResourceList(used, PodRequests(p))
	}
	return fits(pod, active, used, node)
}

// Usage is what a set of admitted pods holds: how many count and the sum of their
// requests. Admit re-sums its admittedPods on every call, so admitting n pods one after the
// other against a growing set costs O(n^2); a Usage is summed once and then kept up to date
// with Add and Remove, so each admission costs only the new pod's own requests. The
// results are exactly Admit's: quantities are added and subtracted exactly. Not safe for
// concurrent use.
type Usage struct {
	pods     int64
	requests v1.ResourceList
	// ports are the host ports the counted pods bind (the NodePorts predicate).
	ports portsInUse
	// byUID is each counted UID's share, so the pod being admitted can be left out (Admit
	// skips admitted pods with its UID) and a pod can be removed.
	byUID map[types.UID]*share
}

type share struct {
	pods     int64
	requests v1.ResourceList
	ports    []hostPort
}

// NewUsage sums pods as Admit would count them as admittedPods: nil and terminal pods
// (phase Succeeded or Failed) are skipped.
func NewUsage(pods []*v1.Pod) *Usage {
	u := &Usage{requests: v1.ResourceList{}, ports: portsInUse{}, byUID: make(map[types.UID]*share, len(pods))}
	for _, p := range pods {
		u.Add(p)
	}
	return u
}

// Add counts pod as one more admitted pod (nil and terminal pods are skipped, as Admit skips
// them). A UID added twice counts twice, as it would twice in Admit's admittedPods.
func (u *Usage) Add(pod *v1.Pod) {
	if pod == nil || isTerminal(pod) {
		return
	}
	u.AddWithRequests(pod, PodRequests(pod))
}

// AddWithRequests is Add for a caller that keeps PodRequests(pod) already: requests must be
// that, and is read, never modified (the Usage may keep it).
func (u *Usage) AddWithRequests(pod *v1.Pod, requests v1.ResourceList) {
	if pod == nil || isTerminal(pod) {
		return
	}
	ports := hostPorts(pod)
	u.pods++
	addResourceList(u.requests, requests)
	u.ports.add(ports, 1)
	s, ok := u.byUID[pod.UID]
	if !ok {
		u.byUID[pod.UID] = &share{pods: 1, requests: requests, ports: ports}
		return
	}
	merged := s.requests.DeepCopy()
	addResourceList(merged, requests)
	s.pods, s.requests, s.ports = s.pods+1, merged, append(s.ports[:len(s.ports):len(s.ports)], ports...)
}

// Remove stops counting every pod with uid.
func (u *Usage) Remove(uid types.UID) {
	s, ok := u.byUID[uid]
	if !ok {
		return
	}
	delete(u.byUID, uid)
	u.pods -= s.pods
	subResourceList(u.requests, s.requests)
	u.ports.add(s.ports, -1)
}

// Pods is how many pods are counted.
func (u *Usage) Pods() int64 { return u.pods }

// Admit is Admit(pod, the counted pods, node).
func (u *Usage) Admit(pod *v1.Pod, node NodeInfo) Result {
	short := u.Fits(pod, node)
	if len(short) == 0 {
		return Result{Admit: true}
	}
	return Result{Admit: false, Reason: short[0].Reason(), Message: short[0].Message()}
}

// Fits is Fits(pod, the counted pods, node).
func (u *Usage) Fits(pod *v1.Pod, node NodeInfo) []InsufficientResource {
	active, used := u.pods, u.requests
	if s, ok := u.byUID[pod.UID]; ok {
		// The pod itself does not count against itself.
		active -= s.pods
		used = used.DeepCopy()
		subResourceList(used, s.requests)
	}
	return fits(pod, active, used, node)
}

// fits checks pod against the node with active other pods requesting used.
func fits(pod *v1.Pod, active int64, used v1.ResourceList, node NodeInfo) []InsufficientResource {
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
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if r := check(name, req, used, node.Allocatable); r != nil {
			out = append(out, *r)
		}
	}
	var others []string
	for name := range req {
		switch name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, v1.ResourcePods:
			continue
		}
		if !isScalarResourceName(name) {
			// The scheduler's Resource keeps no other names, so they are never checked.
			continue
		}
		if _, offered := node.Allocatable[name]; !offered && isExtendedResourceName(name) {
			// Upstream drops requests of extended resources the node does not know
			// (cluster-level resources); static pods are the documented caveat.
			continue
		}
		others = append(others, string(name))
	}
	sort.Strings(others)
	for _, name := range others {
		if r := check(v1.ResourceName(name), req, used, node.Allocatable); r != nil {
			out = append(out, *r)
		}
	}
	return out
}

func check(name v1.ResourceName, req, used, allocatable v1.ResourceList) *InsufficientResource {
	r, u, c := value(name, req), value(name, used), value(name, allocatable)
	if r > 0 && r > c-u {
		return &InsufficientResource{ResourceName: name, Requested: r, Used: u, Capacity: c}
	}
	return nil
}

func value(name v1.ResourceName, l v1.ResourceList) int64 {
	q, ok := l[name]
	if !ok {
		return 0
	}
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// PodRequests is the pod's effective resource request (component-helpers PodRequests, with
// the PodLevelResources gate on as in v1.37): the larger, per resource, of the app
// containers plus restartable (sidecar) init containers, and the peak while any init
// container runs (itself plus the sidecars started before it); then the pod-level requests
// (spec.resources.requests) replace that for each resource they name among cpu, memory and
// hugepages; plus the pod overhead.
//
// Upstream counts an admitted pod at the larger of its spec and its allocated and actuated
// resources (in-place resize); the simulator does not resize pods, so the spec is all three.
func PodRequests(pod *v1.Pod) v1.ResourceList {
	reqs := containersAggregate(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Requests })
	if isPodLevelRequestsSet(pod) {
		for name, q := range pod.Spec.Resources.Requests {
			if isSupportedPodLevelResource(name) {
				reqs[name] = q.DeepCopy()
			}
		}
	}
	addResourceList(reqs, pod.Spec.Overhead)
	return reqs
}

// PodLimits is the containers' aggregate of their limits, as PodRequests aggregates the
// requests (component-helpers PodLimits without its pod-level and overhead steps, which
// the callers apply as the cgroup they size needs them).
func PodLimits(pod *v1.Pod) v1.ResourceList {
	return containersAggregate(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Limits })
}

// containersAggregate is the larger, per resource, of the app containers plus the
// restartable (sidecar) init containers, and the peak while any init container runs
// (itself plus the sidecars started before it), of what of picks from each container.
func containersAggregate(pod *v1.Pod, of func(*v1.Container) v1.ResourceList) v1.ResourceList {
	total := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		addResourceList(total, of(&pod.Spec.Containers[i]))
	}
	sidecars := v1.ResourceList{}
	initPeak := v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		var during v1.ResourceList
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			// A sidecar keeps running next to the app containers.
			addResourceList(total, of(c))
			addResourceList(sidecars, of(c))
			during = sidecars
		} else {
			during = v1.ResourceList{}
			addResourceList(during, of(c))
			addResourceList(during, sidecars)
		}
		maxResourceList(initPeak, during)
	}
	maxResourceList(total, initPeak)
	return total
}

func addResourceList(into, add v1.ResourceList) {
	for name, q := range add {
		if cur, ok := into[name]; ok {
			cur.Add(q)
			into[name] = cur
		} else {
			into[name] = q.DeepCopy()
		}
	}
}

// subResourceList takes sub from from. Every name of sub is in from: sub was added to it.
func subResourceList(from, sub v1.ResourceList) {
	for name, q := range sub {
		cur := from[name]
		cur.Sub(q)
		from[name] = cur
	}
}

func maxResourceList(into, other v1.ResourceList) {
	for name, q := range other {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}

func isTerminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// isExtendedResourceName: a domain-prefixed name outside kubernetes.io that is not a quota
// "requests." name (v1helper.IsExtendedResourceName).
func isExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, v1.ResourceDefaultNamespacePrefix) {
		return false
	}
	return !strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix)
}

// isScalarResourceName: a resource the scheduler's fit check counts besides cpu, memory,
// ephemeral-storage and pods (schedutil.IsScalarResourceName): an extended resource,
// hugepages, a kubernetes.io-prefixed native resource or an attachable volume count.
func isScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	return isExtendedResourceName(name) ||
		strings.HasPrefix(s, v1.ResourceHugePagesPrefix) ||
		strings.Contains(s, v1.ResourceDefaultNamespacePrefix) ||
		strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix)
}

// Metrics counts rejections in admission_rejections_total{reason}, labelled as upstream's
// recordAdmissionRejection does.
type Metrics struct {
	rejections *prometheus.CounterVec
}

// NewMetrics registers the rejection counter into reg (nil: an unregistered counter).
func NewMetrics(reg *metrics.Registry) *Metrics {
	name := metrics.PodAdmissionRejections
	if reg != nil {
		name = reg.Name(name)
	}
	m := &Metrics{rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: name,
		Help: "Cumulative number pod admission rejections by the Kubelet.",
	}, []string{"reason"})}
	if reg != nil {
		reg.MustRegister(m.rejections)
	}
	return m
}

// Observe counts r when it is a rejection.
func (m *Metrics) Observe(r Result) {
	if !r.Admit {
		m.rejections.WithLabelValues(rejectionLabel(r.Reason)).Inc()
	}
}

// labelledReasons are the reasons upstream records as themselves (admissionRejectionReasons),
// so that the label's cardinality stays bounded. Upstream lists the TaintToleration
// failure by its description rather than its reason, so that reason is counted as "Other"
// there and here; NodeAffinity, NodeName and NodePorts are "Other" too.
var labelledReasons = map[string]bool{
	"AppArmor":                            true,
	ReasonPodOSSelector:                   true,
	ReasonPodOS:                           true,
	"InvalidNodeInfo":                     true,
	"InitContainerRestartPolicyForbidden": true,
	ReasonSupplementalGroupsPolicy:        true,
	"UnexpectedAdmissionError":            true,
	"UnknownReason":                       true,
	"UnexpectedPredicateFailureType":      true,
	"OutOfcpu":                            true,
	"OutOfmemory":                         true,
	"OutOfephemeral-storage":              true,
	"OutOfpods":                           true,
	ReasonPodLevelResources:               true,
	"PodFeatureUnsupported":               true,
	"node(s) had taints that the pod didn't tolerate": true,
	"Evicted":                       true,
	ReasonSysctlForbidden:           true,
	"TopologyAffinityError":         true,
	"NodeShutdown":                  true,
	"VolumeAttachmentLimitExceeded": true,
}

// rejectionLabel is the reason label upstream's recordAdmissionRejection gives a rejection:
// the reason when listed, "OutOfExtendedResources" for any other shortage, else "Other".
func rejectionLabel(reason string) string {
	switch {
	case labelledReasons[reason]:
		return reason
	case strings.HasPrefix(reason, "OutOf"):
		return "OutOfExtendedResources"
	}
	return "Other"
}
