package kubelet

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/inplacepodresize"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/restartallcontainers"

	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
)

// modelledDeclaredFeatures are the node features (KEP-5328) whose behaviour minikubelet
// has: only these are declared, whatever the gates say, so that a scheduler or the API
// server never sends this node a pod or an update that needs one it would only pretend
// to have.
var modelledDeclaredFeatures = map[string]bool{
	inplacepodresize.PodLevelResourcesResizeFeature.Name():       true,
	inplacepodresize.NonSidecarInitContainerResizeFeature.Name(): true,
	// discovered from the RestartAllContainersOnContainerExits gate
	restartallcontainers.Feature.Name(): true,
}

// declaredFeatures is the node's NodeDeclaredFeatures: upstream's framework over every
// registered feature (so a pod needing one the node lacks is recognised), and the list the
// node declares in its status.
type declaredFeatures struct {
	framework *ndf.Framework
	declared  []string
	set       ndf.FeatureSet
	version   *version.Version
}

// gateAdapter is upstream's FeatureGateAdapter: the library takes gates by name.
type gateAdapter struct{ featuregate.FeatureGate }

func (a gateAdapter) Enabled(key string) bool { return a.FeatureGate.Enabled(featuregate.Feature(key)) }

// newDeclaredFeatures discovers the features of a node with gate at kubeletVersion, keeping
// the modelled ones.
func newDeclaredFeatures(gate featuregate.FeatureGate, kubeletVersion string) (*declaredFeatures, error) {
	v, err := version.ParseGeneric(kubeletVersion)
	if err != nil {
		return nil, fmt.Errorf("node declared features: kubelet version %q: %w", kubeletVersion, err)
	}
	framework := ndf.DefaultFramework // every registered feature, as upstream
	var declared []string
	for _, name := range framework.DiscoverNodeFeatures(&ndf.NodeConfiguration{FeatureGates: gateAdapter{gate}, Version: v}) {
		if modelledDeclaredFeatures[name] {
			declared = append(declared, name)
		}
	}
	set, err := framework.MapSorted(declared)
	if err != nil {
		return nil, fmt.Errorf("node declared features: %w", err)
	}
	return &declaredFeatures{framework: framework, declared: declared, set: set, version: v}, nil
}

// PodFeatureUnsupported is the admission reason for a pod that needs a feature the node
// does not declare (upstream's lifecycle.PodFeatureUnsupported).
const PodFeatureUnsupported = "PodFeatureUnsupported"

// admit is upstream's declaredFeaturesAdmitHandler.
func (d *declaredFeatures) admit(pod *v1.Pod) admission.Result {
	reqs, err := d.framework.InferForPodScheduling(&ndf.PodInfo{Spec: &pod.Spec, Status: &pod.Status}, d.version)
	if err != nil {
		return admission.Result{Reason: PodFeatureUnsupported, Message: fmt.Sprintf("Failed to infer pod's feature requirements: %v", err)}
	}
	if reqs.IsEmpty() {
		return admission.Result{Admit: true}
	}
	match, err := d.framework.MatchNodeFeatureSet(reqs, d.set)
	if err != nil {
		return admission.Result{Reason: PodFeatureUnsupported, Message: fmt.Sprintf("Failed to match pod's feature requirements against the node: %v", err)}
	}
	if !match.IsMatch {
		return admission.Result{Reason: PodFeatureUnsupported, Message: "Pod requires node features that are not available: " + strings.Join(match.UnsatisfiedRequirements, ", ")}
	}
	return admission.Result{Admit: true}
}

// checkUpdateFeatures is upstream's check of a pod update (HandlePodUpdates): one needing a
// feature the node does not declare gets a FailedNodeDeclaredFeaturesCheck event.
func (k *Kubelet) checkUpdateFeatures(old, pod *v1.Pod) {
	d := k.declared
	if d == nil || old == nil {
		return
	}
	reqs, err := d.framework.InferForPodUpdate(&ndf.PodInfo{Spec: &old.Spec, Status: &old.Status}, &ndf.PodInfo{Spec: &pod.Spec, Status: &pod.Status}, d.version)
	if err != nil || reqs.IsEmpty() {
		return
	}
	if match, err := d.framework.MatchNodeFeatureSet(reqs, d.set); err == nil && !match.IsMatch {
		missing := strings.Join(match.UnsatisfiedRequirements, ", ")
		k.recordEvent(events.PodRef(pod), v1.EventTypeWarning, "FailedNodeDeclaredFeaturesCheck", "Pod requires node features that are not available: %s", missing)
	}
}

// declaredList is what the node declares: nil without NodeDeclaredFeatures, else the
// (possibly empty) list.
func (k *Kubelet) declaredList() []string {
	if k.declared == nil {
		return nil
	}
	return append([]string{}, k.declared.declared...)
}
