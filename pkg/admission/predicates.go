package admission

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/kubetypes"
)

// The general predicates' failures as upstream's predicate admit handler reports them:
// the scheduler plugin's name as the reason, and PredicateFailureError's
// "Predicate <name> failed: <the plugin's ErrReason>" as the message.
const (
	ReasonNodeAffinity     = "NodeAffinity"
	ReasonNodeName         = "NodeName"
	ReasonNodePorts        = "NodePorts"
	ReasonTaintToleration  = "TaintToleration"
	MessageNodeAffinity    = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	MessageNodeName        = "Predicate NodeName failed: node(s) didn't match the requested node name"
	MessageNodePorts       = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
	MessageTaintToleration = "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
)

// AdmitPredicates is upstream's predicate admit handler against admittedPods (see
// Usage.AdmitPredicates). Pure and safe for concurrent use.
func AdmitPredicates(pod *v1.Pod, admittedPods []*v1.Pod, node NodeInfo) Result {
	return NewUsage(admittedPods).AdmitPredicates(pod, node)
}

// AdmitPredicates decides as upstream's predicate admit handler does. First the checks
// preemption cannot help: the operating system (AdmitOS), then supplementalGroupsPolicy
// Strict on a node whose runtime does not honour it (AdmitSupplementalGroupsPolicy, with
// node.SupplementalGroupsPolicy). Then the general predicates, in
// upstream's order: resources fit (Fits: pods, cpu, memory, ephemeral-storage, other
// resources), NodeAffinity (nodeSelector and required node affinity), NodeName, NodePorts
// (the pod's host ports against those the counted pods bind), and TaintToleration (the
// node's NoExecute taints; not checked for static pods). The first failure is returned.
//
// A critical pod (static, mirror, or of system-critical priority) is not refused for
// resources upstream while another predicate fails: that one is reported instead.
// Deviation: when resources are the only failure, upstream preempts lower-priority pods to
// admit a critical pod; here the resource failure is reported.
func (u *Usage) AdmitPredicates(pod *v1.Pod, node NodeInfo) Result {
	if res := AdmitOS(pod, node.Labels[v1.LabelOSStable]); !res.Admit {
		return res
	}
	supports := node.SupplementalGroupsPolicy != nil && node.SupplementalGroupsPolicy()
	if res := AdmitSupplementalGroupsPolicy(pod, supports); !res.Admit {
		return res
	}
	short := u.Fits(pod, node)
	if len(short) > 0 && !kubetypes.IsCriticalPod(pod) {
		return Result{Reason: short[0].Reason(), Message: short[0].Message()}
	}
	if res := u.predicates(pod, node); !res.Admit {
		return res
	}
	if len(short) > 0 {
		return Result{Reason: short[0].Reason(), Message: short[0].Message()}
	}
	return Result{Admit: true}
}

// predicates runs the general predicates after the resources fit, in upstream's order.
func (u *Usage) predicates(pod *v1.Pod, node NodeInfo) Result {
	if !MatchesNode(pod, node.Name, node.Labels) {
		return Result{Reason: ReasonNodeAffinity, Message: MessageNodeAffinity}
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return Result{Reason: ReasonNodeName, Message: MessageNodeName}
	}
	if want := hostPorts(pod); len(want) > 0 {
		var own []hostPort
		if s, ok := u.byUID[pod.UID]; ok {
			own = s.ports
		}
		if u.ports.conflicts(want, own) {
			return Result{Reason: ReasonNodePorts, Message: MessageNodePorts}
		}
	}
	// Static pods are exempt: the node's own manifests must run whatever its taints.
	if !kubetypes.IsStaticPod(pod) {
		if _, untolerated := untoleratedNoExecuteTaint(node.Taints, pod.Spec.Tolerations); untolerated {
			return Result{Reason: ReasonTaintToleration, Message: MessageTaintToleration}
		}
	}
	return Result{Admit: true}
}

// untoleratedNoExecuteTaint returns the first NoExecute taint no toleration tolerates
// (component-helpers FindMatchingUntoleratedTaint with the kubelet's NoExecute filter). The
// TaintTolerationComparisonOperators gate is alpha and off in v1.37, so Gt and Lt
// tolerations tolerate nothing.
func untoleratedNoExecuteTaint(taints []v1.Taint, tolerations []v1.Toleration) (v1.Taint, bool) {
	logger := klog.Background()
	for i := range taints {
		taint := &taints[i]
		if taint.Effect != v1.TaintEffectNoExecute {
			continue
		}
		tolerated := false
		for j := range tolerations {
			if tolerations[j].ToleratesTaint(logger, taint, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return *taint, true
		}
	}
	return v1.Taint{}, false
}

// SupplementalGroupsPolicy rejection (upstream's predicate admit handler, after the
// operating system checks and before the general predicates; the gate is GA in v1.37).
const ReasonSupplementalGroupsPolicy = "SupplementalGroupsPolicyNotSupported"

// MessageSupplementalGroupsPolicy is upstream's message for ReasonSupplementalGroupsPolicy.
var MessageSupplementalGroupsPolicy = fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)

// AdmitSupplementalGroupsPolicy rejects a pod asking for supplementalGroupsPolicy Strict on
// a node that does not report status.features.supplementalGroupsPolicy true (nodeSupports):
// its runtime would merge the image's groups in anyway.
func AdmitSupplementalGroupsPolicy(pod *v1.Pod, nodeSupports bool) Result {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil {
		return Result{Admit: true}
	}
	if *sc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict && !nodeSupports {
		return Result{Reason: ReasonSupplementalGroupsPolicy, Message: MessageSupplementalGroupsPolicy}
	}
	return Result{Admit: true}
}
