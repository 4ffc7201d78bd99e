package kubelet

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPodHostnameAndDomain: as upstream's GeneratePodHostNameAndDomain, hostnameOverride
// wins over hostname and subdomain and leaves no domain.
func TestPodHostnameAndDomain(t *testing.T) {
	long := strings.Repeat("a", 62) + ".b"
	tests := []struct {
		name             string
		spec             v1.PodSpec
		hostname, domain string
	}{
		{"the pod's name", v1.PodSpec{}, "web", ""},
		{"hostname", v1.PodSpec{Hostname: "h"}, "h", ""},
		{"hostname and subdomain", v1.PodSpec{Hostname: "h", Subdomain: "s"}, "h", "s.ns.svc."},
		{"override only", v1.PodSpec{HostnameOverride: ptr.To("over.ride")}, "over.ride", ""},
		{"override over hostname and subdomain", v1.PodSpec{Hostname: "h", Subdomain: "s", HostnameOverride: ptr.To("o")}, "o", ""},
		{"a long override is cut without a trailing dot", v1.PodSpec{HostnameOverride: ptr.To(long)}, strings.Repeat("a", 62), ""},
	}
	k := &Kubelet{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: tt.spec}
			h, d := k.podHostnameAndDomain(pod)
			if h != tt.hostname || d != tt.domain {
				t.Errorf("got %q %q, want %q %q", h, d, tt.hostname, tt.domain)
			}
		})
	}
}
