package cluster

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	certificatesv1 "k8s.io/client-go/kubernetes/typed/certificates/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	nodev1 "k8s.io/client-go/kubernetes/typed/node/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// NodeClientset returns a client of the API groups a node calls (core, coordination for
// the lease, authentication and authorization for its server's webhooks, certificates for
// its client certificate, node for the RuntimeClasses), over one HTTP client built from c.
//
// kubernetes.NewForConfig builds a REST client, a rate limiter and a codec negotiator for
// each of the fifty-odd groups it knows: about 27 KB a clientset, and a node holds three (the
// kubelet's main, heartbeat and event clients), 81 MB of the heap at 1,000 nodes
// (docs/scale.md). Any other group's method panics on its nil client: a node has no call
// to make there, and a test that made one would fail loudly rather than quietly build it.
func NodeClientset(c *rest.Config) (kubernetes.Interface, error) {
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, err
	}
	// One rate limiter for all the groups, as kubernetes.NewForConfigAndClient makes it:
	// the node's QPS is the client's, not each group's.
	shared := *c
	c = &shared
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	cs := &nodeClientset{}
	if cs.core, err = corev1.NewForConfigAndClient(c, hc); err != nil {
		return nil, err
	}
	if cs.coordination, err = coordinationv1.NewForConfigAndClient(c, hc); err != nil {
		return nil, err
	}
	if cs.authentication, err = authenticationv1.NewForConfigAndClient(c, hc); err != nil {
		return nil, err
	}
	if cs.authorization, err = authorizationv1.NewForConfigAndClient(c, hc); err != nil {
		return nil, err
	}
	if cs.certificates, err = certificatesv1.NewForConfigAndClient(c, hc); err != nil {
		return nil, err
	}
	if cs.node, err = nodev1.NewForConfigAndClient(c, hc); err != nil {
		return nil, err
	}
	return cs, nil
}

type nodeClientset struct {
	kubernetes.Interface // nil: the groups a node never calls

	core           *corev1.CoreV1Client
	coordination   *coordinationv1.CoordinationV1Client
	authentication *authenticationv1.AuthenticationV1Client
	authorization  *authorizationv1.AuthorizationV1Client
	certificates   *certificatesv1.CertificatesV1Client
	node           *nodev1.NodeV1Client
}

func (c *nodeClientset) CoreV1() corev1.CoreV1Interface { return c.core }
func (c *nodeClientset) CoordinationV1() coordinationv1.CoordinationV1Interface {
	return c.coordination
}
func (c *nodeClientset) AuthenticationV1() authenticationv1.AuthenticationV1Interface {
	return c.authentication
}
func (c *nodeClientset) AuthorizationV1() authorizationv1.AuthorizationV1Interface {
	return c.authorization
}
func (c *nodeClientset) NodeV1() nodev1.NodeV1Interface { return c.node }
func (c *nodeClientset) CertificatesV1() certificatesv1.CertificatesV1Interface {
	return c.certificates
}
