package kubelet

import (
	"bytes"
	"fmt"
	"net"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kuberuntime"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Limits of a pod's resolver configuration (upstream's dns configurer and API validation).
const (
	maxDNSNameservers      = 3
	maxDNSSearchPaths      = 32
	maxDNSSearchListChars  = 2048
	defaultResolvConfPath  = nodeResolvPath
	defaultDNSOptionsNdots = "ndots:5"
)

// dnsConfigurer builds pods' /etc/resolv.conf as the kubelet's dns.Configurer builds the
// PodSandboxConfig's DNS config (and containerd writes it out).
type dnsConfigurer struct {
	// clusterDNS and clusterDomain are kubeletConfiguration.clusterDNS and .clusterDomain.
	clusterDNS    []string
	clusterDomain string
	// resolvConf is the node's resolver configuration for dnsPolicy Default
	// (kubeletConfiguration.resolvConf, a path on the node's filesystem); "" gives such pods
	// the local resolver only.
	resolvConf string
	nodeIP     string
	nodeName   string
}

// newDNSConfigurer reads clusterDNS, clusterDomain and resolvConf from the configuration.
// An entry of clusterDNS that is not an IP is logged and skipped, as upstream.
func newDNSConfigurer(c *config.Config, nodeName, nodeIP string) (*dnsConfigurer, error) {
	d := &dnsConfigurer{resolvConf: defaultResolvConfPath, nodeIP: nodeIP, nodeName: nodeName}
	kc := &c.Kubelet
	for _, ip := range kc.ClusterDNS {
		if net.ParseIP(ip) == nil {
			klog.InfoS("Invalid clusterDNS IP", "IP", ip)
			continue
		}
		d.clusterDNS = append(d.clusterDNS, ip)
	}
	d.clusterDomain = kc.ClusterDomain
	if kc.ResolverConfig != nil {
		d.resolvConf = *kc.ResolverConfig
	}
	return d, nil
}

// dnsConfig is a resolver configuration (CRI's DNSConfig).
type dnsConfig struct {
	servers, searches, options []string
}

// podDNS is the pod's resolver configuration by dnsPolicy (upstream's GetPodDNS):
// ClusterFirst (ClusterFirstWithHostNet on the host network) gets clusterDNS as its only
// servers, searches <ns>.svc.<domain> svc.<domain> <domain> before the node's, and ndots:5;
// Default (and ClusterFirst on the host network) gets the node's resolv.conf; None starts
// empty; dnsConfig is then merged in. ClusterFirst without clusterDNS falls back to Default
// with a MissingClusterDNS event on the node and the pod. A node resolv.conf that cannot be
// read is an error.
func (d *dnsConfigurer) podDNS(nodeFS *vfs.View, pod *v1.Pod, recorder events.Recorder) (*dnsConfig, error) {
	cfg, err := d.hostDNS(nodeFS)
	if err != nil {
		return nil, err
	}
	switch podDNSType(pod) {
	case v1.DNSNone:
		cfg = &dnsConfig{}
	case v1.DNSClusterFirst:
		if len(d.clusterDNS) > 0 {
			cfg.servers = append([]string(nil), d.clusterDNS...)
			cfg.searches = d.clusterSearches(cfg.searches, pod)
			cfg.options = []string{defaultDNSOptionsNdots}
			break
		}
		msg := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", v1.DNSClusterFirst, v1.DNSDefault)
		recorder.Eventf(events.NodeRef(d.nodeName), v1.EventTypeWarning, "MissingClusterDNS", "%s", msg)
		recorder.Eventf(events.PodRef(pod), v1.EventTypeWarning, "MissingClusterDNS", "pod: %q. %s", kuberuntime.FormatPod(pod), msg)
		fallthrough
	default: // Default
		if d.resolvConf == "" {
			// No node resolver: the local one, as upstream ("nameserver 127.0.0.1").
			cfg.servers = []string{"127.0.0.1"}
			if ip := net.ParseIP(d.nodeIP); ip != nil && ip.To4() == nil {
				cfg.servers = []string{"::1"}
			}
			cfg.searches = []string{"."}
		}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.servers = omitDuplicates(append(cfg.servers, dc.Nameservers...))
		cfg.searches = omitDuplicates(append(cfg.searches, dc.Searches...))
		cfg.options = mergeDNSOptions(cfg.options, dc.Options)
	}
	d.fitLimits(cfg, pod, recorder)
	return cfg, nil
}

// podDNSType is the policy that applies: ClusterFirst on the host network means Default
// (only ClusterFirstWithHostNet gives such a pod the cluster's DNS).
func podDNSType(pod *v1.Pod) v1.DNSPolicy {
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
		return v1.DNSNone
	case v1.DNSClusterFirstWithHostNet:
		return v1.DNSClusterFirst
	case v1.DNSDefault:
		return v1.DNSDefault
	}
	// ClusterFirst, and "" (the API's default).
	if pod.Spec.HostNetwork {
		return v1.DNSDefault
	}
	return v1.DNSClusterFirst
}

// hostDNS parses the node's resolv.conf (nameserver, search and options lines; comments
// skipped; the last search line wins, a trailing dot dropped).
func (d *dnsConfigurer) hostDNS(nodeFS *vfs.View) (*dnsConfig, error) {
	cfg := &dnsConfig{}
	if d.resolvConf == "" {
		return cfg, nil
	}
	data, err := nodeFS.ReadFile(d.resolvConf)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", d.resolvConf, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if len(line) > 0 && (line[0] == '#' || line[0] == ';') {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) >= 2 {
				cfg.servers = append(cfg.servers, fields[1])
			}
		case "search":
			cfg.searches = nil
			for _, s := range fields[1:] {
				if s != "." {
					cfg.searches = append(cfg.searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.options = mergeDNSOptions(cfg.options, optionsOf(fields[1:]))
		}
	}
	return cfg, nil
}

// clusterSearches puts the cluster's search domains before the node's.
func (d *dnsConfigurer) clusterSearches(hostSearch []string, pod *v1.Pod) []string {
	if d.clusterDomain == "" {
		return hostSearch
	}
	cluster := []string{pod.Namespace + ".svc." + d.clusterDomain, "svc." + d.clusterDomain, d.clusterDomain}
	return omitDuplicates(append(cluster, hostSearch...))
}

// fitLimits cuts the servers to 3 and the searches to 32 paths of at most 2048 characters
// in all, with upstream's DNSConfigForming events.
func (d *dnsConfigurer) fitLimits(cfg *dnsConfig, pod *v1.Pod, recorder events.Recorder) {
	if len(cfg.servers) > maxDNSNameservers {
		cfg.servers = cfg.servers[:maxDNSNameservers]
		recorder.Eventf(events.PodRef(pod), v1.EventTypeWarning, "DNSConfigForming",
			"Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s", strings.Join(cfg.servers, " "))
	}
	limited := false
	if len(cfg.searches) > maxDNSSearchPaths {
		cfg.searches, limited = cfg.searches[:maxDNSSearchPaths], true
	}
	for len(cfg.searches) > 0 && len(strings.Join(cfg.searches, " ")) > maxDNSSearchListChars {
		cfg.searches, limited = cfg.searches[:len(cfg.searches)-1], true
	}
	if limited {
		recorder.Eventf(events.PodRef(pod), v1.EventTypeWarning, "DNSConfigForming",
			"Search Line limits were exceeded, some search paths have been omitted, the applied search line is: %s", strings.Join(cfg.searches, " "))
	}
}

// resolvConf is the file containerd writes from a DNS config: search, nameserver and
// options lines.
func (c *dnsConfig) resolvConf() []byte {
	var b bytes.Buffer
	if len(c.searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(c.searches, " "))
	}
	for _, s := range c.servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(c.options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(c.options, " "))
	}
	return b.Bytes()
}

func omitDuplicates(list []string) []string {
	seen := make(map[string]bool, len(list))
	out := list[:0:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func optionsOf(fields []string) []v1.PodDNSConfigOption {
	out := make([]v1.PodDNSConfigOption, 0, len(fields))
	for _, f := range fields {
		name, value, ok := strings.Cut(f, ":")
		o := v1.PodDNSConfigOption{Name: name}
		if ok {
			v := value
			o.Value = &v
		}
		out = append(out, o)
	}
	return out
}

// mergeDNSOptions merges options, later ones overriding earlier ones of the same name.
// Upstream merges through a map, so its order varies from one pod to the next; here they are
// sorted by name, so a simulation writes the same file each time.
func mergeDNSOptions(existing []string, add []v1.PodDNSConfigOption) []string {
	m := make(map[string]string, len(existing)+len(add))
	for _, op := range existing {
		name, value, _ := strings.Cut(op, ":")
		m[name] = value
	}
	for _, op := range add {
		m[op.Name] = ""
		if op.Value != nil {
			m[op.Name] = *op.Value
		}
	}
	out := make([]string, 0, len(m))
	for name, value := range m {
		if value != "" {
			name += ":" + value
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
