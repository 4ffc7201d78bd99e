package config

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The kubernetes.io labels a kubelet may set on its node (upstream
// kubeletapis.KubeletLabels and the allowed namespaces).
var (
	kubeletLabels = sets.New(
		"kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
		"failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
		"beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
		"beta.kubernetes.io/os", "beta.kubernetes.io/arch", "kubernetes.io/os", "kubernetes.io/arch",
	)
	kubeletLabelNamespaces = []string{"kubelet.kubernetes.io", "node.kubernetes.io"}
)

// validateNodeLabels checks --node-labels as the kubelet does: well-formed keys and values,
// and no label in the kubernetes.io or k8s.io namespaces outside the allowed ones.
func validateNodeLabels(labels map[string]string) error {
	var bad, unknown []string
	for k, v := range labels {
		for _, msg := range validation.IsQualifiedName(k) {
			bad = append(bad, fmt.Sprintf("%q: %s", k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			bad = append(bad, fmt.Sprintf("%q=%q: %s", k, v, msg))
		}
		if isKubernetesLabel(k) && !allowedKubeletLabel(k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(bad)
	sort.Strings(unknown)
	if len(bad) > 0 {
		return fmt.Errorf("invalid node labels (--node-labels): %s", strings.Join(bad, "; "))
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: %v\n"+
			"--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (%s) or be in the specifically allowed set (%s)",
			unknown, strings.Join(kubeletLabelNamespaces, ", "), strings.Join(sets.List(kubeletLabels), ", "))
	}
	return nil
}

func labelNamespace(key string) string {
	if ns, _, ok := strings.Cut(key, "/"); ok {
		return ns
	}
	return ""
}

func isKubernetesLabel(key string) bool {
	ns := labelNamespace(key)
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

func allowedKubeletLabel(key string) bool {
	if kubeletLabels.Has(key) {
		return true
	}
	ns := labelNamespace(key)
	for _, allowed := range kubeletLabelNamespaces {
		if ns == allowed || strings.HasSuffix(ns, "."+allowed) {
			return true
		}
	}
	return false
}
