package cluster

import (
	"testing"

	"k8s.io/client-go/rest"
)

// TestNodeClientset checks that each group a node calls is served, at its own API path, by
// one node clientset.
func TestNodeClientset(t *testing.T) {
	cs, err := NodeClientset(&rest.Config{Host: "https://127.0.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		group string
		rc    rest.Interface
		want  string
	}{
		{"core", cs.CoreV1().RESTClient(), "/api/v1/nodes"},
		{"coordination", cs.CoordinationV1().RESTClient(), "/apis/coordination.k8s.io/v1/nodes"},
		{"authentication", cs.AuthenticationV1().RESTClient(), "/apis/authentication.k8s.io/v1/nodes"},
		{"authorization", cs.AuthorizationV1().RESTClient(), "/apis/authorization.k8s.io/v1/nodes"},
		{"certificates", cs.CertificatesV1().RESTClient(), "/apis/certificates.k8s.io/v1/nodes"},
		{"node", cs.NodeV1().RESTClient(), "/apis/node.k8s.io/v1/nodes"},
	} {
		if got := tc.rc.Get().Resource("nodes").URL().Path; got != tc.want {
			t.Errorf("%s: GET nodes goes to %s, want %s", tc.group, got, tc.want)
		}
	}
}

// TestNodeClientsetRateLimiter checks that the groups share the client's one rate limiter,
// as kubernetes.NewForConfig's do, and that a negative QPS (the heartbeat client's) has none.
func TestNodeClientsetRateLimiter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		qps     float32
		burst   int
		limited bool
	}{
		{"main", 50, 100, true},
		{"heartbeat", -1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := NodeClientset(&rest.Config{Host: "https://127.0.0.1:6443", QPS: tc.qps, Burst: tc.burst})
			if err != nil {
				t.Fatal(err)
			}
			core := cs.CoreV1().RESTClient().(*rest.RESTClient).GetRateLimiter()
			lease := cs.CoordinationV1().RESTClient().(*rest.RESTClient).GetRateLimiter()
			if (core != nil) != tc.limited {
				t.Fatalf("core rate limiter %v, want limited=%v", core, tc.limited)
			}
			if core != lease {
				t.Errorf("core and coordination have rate limiters of their own (%p, %p), want the client's one", core, lease)
			}
		})
	}
}
