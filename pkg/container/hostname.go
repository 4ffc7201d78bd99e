package container

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// PodHostname is the hostname the pod's containers see, as the kubelet's
// GeneratePodHostNameAndDomain: spec.hostnameOverride, else spec.hostname, else the pod's
// name, cut to 63 characters without a trailing '-' or '.' (truncatePodHostnameIfNeeded).
// The API server has validated the names.
func PodHostname(pod *v1.Pod) string {
	hostname := pod.Name
	switch {
	case pod.Spec.HostnameOverride != nil:
		hostname = *pod.Spec.HostnameOverride
	case pod.Spec.Hostname != "":
		hostname = pod.Spec.Hostname
	}
	if len(hostname) > 63 {
		hostname = strings.TrimRight(hostname[:63], "-.")
	}
	return hostname
}
