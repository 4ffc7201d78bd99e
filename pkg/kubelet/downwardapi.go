package kubelet

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// podFieldValue resolves a fieldRef of the downward API as the kubelet does for env
// (podFieldSelectorRuntimeValue): the pod's node, service account, host and pod IPs, then
// the metadata fields fieldPathValue knows.
func podFieldValue(pod *v1.Pod, fieldPath string, podIPs []string, hostIP string) (string, error) {
	switch fieldPath {
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return fieldPathValue(pod, fieldPath)
}

// fieldPathValue is upstream's fieldpath.ExtractFieldPathAsString for a pod: its name,
// namespace and UID, one label or annotation (metadata.labels['key']), or all of them in
// the `key="value"` lines format (downward API volumes). An unknown path is an error
// naming it.
func fieldPathValue(pod *v1.Pod, fieldPath string) (string, error) {
	if p, key, ok := splitSubscriptedPath(fieldPath); ok {
		switch p {
		case "metadata.annotations":
			if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return pod.Annotations[key], nil
		case "metadata.labels":
			if errs := validation.IsQualifiedName(key); len(errs) != 0 {
				return "", fmt.Errorf("invalid key subscript in %s: %s", fieldPath, strings.Join(errs, ";"))
			}
			return pod.Labels[key], nil
		default:
			return "", fmt.Errorf("fieldPath %q does not support subscript", fieldPath)
		}
	}
	switch fieldPath {
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", fieldPath)
}

// splitSubscriptedPath splits "metadata.labels['key']" into its path and key.
func splitSubscriptedPath(fieldPath string) (string, string, bool) {
	s, ok := strings.CutSuffix(fieldPath, "']")
	if !ok {
		return fieldPath, "", false
	}
	p, key, ok := strings.Cut(s, "['")
	if !ok || p == "" {
		return fieldPath, "", false
	}
	return p, key, true
}

// formatMap writes a map as the downward API's labels and annotations files are: one
// key="value" line per entry (the value Go-quoted), sorted by key, with no final newline.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	for i, k := range keys {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendQuote(b, m[k])
	}
	return string(b)
}

// resourceFieldValue resolves a resourceFieldRef (upstream's
// ExtractResourceValueByContainerNameAndNodeAllocatable): the named container's limit or
// request in units of the divisor, rounded up, a missing or zero limit being the node's
// allocatable. c is the container the reference is in, used when it names none.
func resourceFieldValue(ref *v1.ResourceFieldSelector, pod *v1.Pod, c *v1.Container, allocatable v1.ResourceList) (string, error) {
	target := c
	if ref.ContainerName != "" || c == nil {
		target = findContainer(pod, ref.ContainerName)
		if target == nil {
			return "", fmt.Errorf("container %s not found", ref.ContainerName)
		}
	}
	// A pod's own limits stand in for the node's (upstream's
	// defaultPodLimitsForDownwardAPI, PodLevelResources): a container without a limit is
	// bounded by its pod's first. Only CPU and memory are pod-level resources.
	if pod.Spec.Resources != nil && len(pod.Spec.Resources.Limits) > 0 {
		copied := false
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := pod.Spec.Resources.Limits[name]; ok && !q.IsZero() {
				if _, ok := allocatable[name]; ok {
					if !copied { // the node's list is shared
						allocatable, copied = allocatable.DeepCopy(), true
					}
					allocatable[name] = q.DeepCopy()
				}
			}
		}
	}
	limits := make(v1.ResourceList, len(target.Resources.Limits)+3)
	for name, q := range target.Resources.Limits {
		limits[name] = q
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := limits[name]; !ok || q.IsZero() {
			if a, ok := allocatable[name]; ok {
				limits[name] = a.DeepCopy()
			}
		}
	}
	divisor := resource.MustParse("1")
	if !ref.Divisor.IsZero() {
		divisor = ref.Divisor
	}
	requests := target.Resources.Requests
	quantity := func(list v1.ResourceList, name v1.ResourceName) *resource.Quantity {
		q := list[name]
		return &q
	}
	switch ref.Resource {
	case "limits.cpu":
		return cpuInUnits(quantity(limits, v1.ResourceCPU), divisor), nil
	case "requests.cpu":
		return cpuInUnits(quantity(requests, v1.ResourceCPU), divisor), nil
	case "limits.memory":
		return bytesInUnits(quantity(limits, v1.ResourceMemory), divisor), nil
	case "requests.memory":
		return bytesInUnits(quantity(requests, v1.ResourceMemory), divisor), nil
	case "limits.ephemeral-storage":
		return bytesInUnits(quantity(limits, v1.ResourceEphemeralStorage), divisor), nil
	case "requests.ephemeral-storage":
		return bytesInUnits(quantity(requests, v1.ResourceEphemeralStorage), divisor), nil
	}
	for prefix, list := range map[string]v1.ResourceList{"requests.": requests, "limits.": limits} {
		if name, ok := strings.CutPrefix(ref.Resource, prefix); ok && strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
			return bytesInUnits(quantity(list, v1.ResourceName(name)), divisor), nil
		}
	}
	return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
}

func cpuInUnits(q *resource.Quantity, divisor resource.Quantity) string {
	return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10)
}

func bytesInUnits(q *resource.Quantity, divisor resource.Quantity) string {
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10)
}

// findContainer is the app or init container of that name, or nil.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
