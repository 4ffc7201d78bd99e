package kubelet

import (
	"context"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/cluster"
	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// The cluster's DNS (CoreDNS at kubeletConfiguration.clusterDNS) as the simulated pod
// network answers it: the kubelet, which has the only API client of the simulation, feeds
// it the Services' names (NAME.NAMESPACE.svc.DOMAIN, their cluster IP). It reads them
// only when a pod asks for a name of the cluster's domain the DNS does not know, at most
// once per clusterDNSRefresh: a pod waiting for its Service (until nslookup NAME; do sleep
// 1; done) finds it within a second of its creation. In the daemon it reads them from the
// kubelet's Service informer (services.go), so the cluster DNS costs the API server nothing;
// where the Services are not watched (simulate) it lists them.

// clusterDNSRefresh is how often at most the Services are listed again.
const clusterDNSRefresh = time.Second

// clusterDNSFeed keeps a simulated network's DNS records in step with the Services.
type clusterDNSFeed struct {
	client  kubernetes.Interface
	caller  *cluster.Caller
	watched func() ([]*v1.Service, bool) // the Service informer's, false before its first list
	clock   clock.PassiveClock
	network *simnet.Network
	suffix  string // ".svc." + the cluster domain

	mu       sync.Mutex
	listed   time.Time
	inFlight bool
	names    map[string]bool // the records it set
}

// startClusterDNS makes the cluster DNS answer on network at the configured addresses
// (clusterDNS; none: no DNS) and, in cluster mode, feeds it the Services; standalone there
// are none, and it answers every name NXDOMAIN.
func (k *Kubelet) startClusterDNS(network *simnet.Network) {
	if network == nil || k.dns == nil || len(k.dns.clusterDNS) == 0 {
		return
	}
	network.SetDNSServers(k.dns.clusterDNS...)
	if k.kubeClient == nil || k.dns.clusterDomain == "" {
		return
	}
	f := &clusterDNSFeed{client: k.kubeClient, caller: k.apiCaller, watched: k.objects.watchedServices, clock: k.clock, network: network,
		suffix: ".svc." + strings.ToLower(strings.TrimSuffix(k.dns.clusterDomain, ".")), names: map[string]bool{}}
	network.OnDNSMiss(f.miss)
}

// miss is told of a name the DNS did not know: a Service's name of the cluster's domain
// has the Services listed again, unless they were a moment ago or are being listed. It
// never blocks: the list runs on the API caller.
func (f *clusterDNSFeed) miss(name string) {
	if !strings.HasSuffix(name, f.suffix) {
		return
	}
	now := f.clock.Now()
	f.mu.Lock()
	if f.inFlight || !f.listed.IsZero() && now.Sub(f.listed) < clusterDNSRefresh {
		f.mu.Unlock()
		return
	}
	f.inFlight = true
	f.listed = now
	f.mu.Unlock()
	f.caller.Go(func(ctx context.Context) error {
		defer func() {
			f.mu.Lock()
			f.inFlight = false
			f.mu.Unlock()
		}()
		if services, ok := f.watched(); ok {
			f.update(services)
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, objectGetTimeout)
		defer cancel()
		// From the API server's cache, as CoreDNS's informer reads.
		list, err := f.client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Unable to list the Services for the cluster DNS", "err", err)
			return err
		}
		services := make([]*v1.Service, len(list.Items))
		for i := range list.Items {
			services[i] = &list.Items[i]
		}
		f.update(services)
		return nil
	})
}

// update sets the records of the Services with a cluster IP and removes those of the
// Services gone.
func (f *clusterDNSFeed) update(services []*v1.Service) {
	seen := map[string]bool{}
	for _, s := range services {
		if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == v1.ClusterIPNone {
			continue
		}
		name := strings.ToLower(s.Name + "." + s.Namespace + f.suffix)
		seen[name] = true
		f.network.SetRecord(name, s.Spec.ClusterIP)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.names {
		if !seen[name] {
			f.network.SetRecord(name)
		}
	}
	f.names = seen
}
