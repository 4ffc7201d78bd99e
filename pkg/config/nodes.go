package config

import (
	"fmt"
	"path/filepath"
)

// MaxNodeCount bounds --node-count: far past what a laptop runs (100 nodes of 30 pods take
// under 1 GB), low enough that a typo does not exhaust the machine.
const MaxNodeCount = 1000

// Nodes is how many nodes the configuration runs: NodeCount, at least 1.
func (c *Config) Nodes() int { return max(c.NodeCount, 1) }

// ForNode is the configuration of node i of --node-count nodes: named <nodeName>-i, with
// the static pods of <staticPodPath>/<name>, the ports port+i and readOnlyPort+i (0 stays
// 0: a free port), and its certificate in <certDir>/<name>. The nested values (auth
// settings, maps) are shared with c: read only. With one node, c itself.
func (c *Config) ForNode(i int) *Config {
	if c.Nodes() == 1 {
		return c
	}
	n := *c
	n.Simulator.NodeName = fmt.Sprintf("%s-%d", c.Simulator.NodeName, i)
	if c.Kubelet.StaticPodPath != "" {
		n.Kubelet.StaticPodPath = filepath.Join(c.Kubelet.StaticPodPath, n.Simulator.NodeName)
	}
	if c.Kubelet.Port != 0 {
		n.Kubelet.Port = c.Kubelet.Port + int32(i)
	}
	if c.Kubelet.ReadOnlyPort != 0 {
		n.Kubelet.ReadOnlyPort = c.Kubelet.ReadOnlyPort + int32(i)
	}
	if c.CertDir != "" {
		n.CertDir = filepath.Join(c.CertDir, n.Simulator.NodeName)
	}
	if c.BootstrapKubeconfig != "" {
		// Each node bootstraps its own system:node identity, into a kubeconfig of its own.
		n.Kubeconfig = filepath.Join(n.CertDir, "kubeconfig")
	}
	return &n
}

// validateNodePorts refuses port ranges of --node-count nodes that overlap or run past
// 65535: node i listens on port+i and readOnlyPort+i.
func validateNodePorts(kc *KubeletConfiguration, nodes int) error {
	if nodes <= 1 {
		return nil
	}
	last := int32(nodes - 1)
	for _, p := range []struct {
		flag string
		port int32
	}{{flagPort, kc.Port}, {flagReadOnlyPort, kc.ReadOnlyPort}} {
		if p.port != 0 && p.port+last > 65535 {
			return fmt.Errorf("invalid --%s %d with --%s %d: node %d would listen on %d, past 65535", p.flag, p.port, flagNodeCount, nodes, last, p.port+last)
		}
	}
	if kc.Port != 0 && kc.ReadOnlyPort != 0 && kc.Port <= kc.ReadOnlyPort+last && kc.ReadOnlyPort <= kc.Port+last {
		return fmt.Errorf("invalid --%s %d: nodes listen on --%s %d-%d and --%s %d-%d, which overlap; set them at least %d apart (e.g. --%s 20250 --%s 30255), or 0 for free ports",
			flagNodeCount, nodes, flagPort, kc.Port, kc.Port+last, flagReadOnlyPort, kc.ReadOnlyPort, kc.ReadOnlyPort+last, nodes, flagPort, flagReadOnlyPort)
	}
	return nil
}
