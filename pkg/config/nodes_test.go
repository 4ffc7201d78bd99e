package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/features"
)

// TestNodeCount: --node-count N gives node i its own name, manifest directory, ports and
// certificate directory, and refuses counts and port ranges that cannot work, naming the
// flags and values.
func TestNodeCount(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, cfg *Config)
	}{
		{name: "one node by default", args: []string{"--hostname-override=n", "--pod-manifest-path=/m", "--cert-dir=/c"}, check: func(t *testing.T, cfg *Config) {
			if cfg.Nodes() != 1 || cfg.ForNode(0) != cfg || cfg.ForNode(0).Kubelet.StaticPodPath != "/m" {
				t.Errorf("nodes %d, ForNode(0) = %+v", cfg.Nodes(), cfg.ForNode(0).Simulator.NodeName)
			}
		}},
		{name: "three nodes", args: []string{"--node-count=3", "--hostname-override=sim", "--pod-manifest-path=/m", "--cert-dir=/c", "--port=20250", "--read-only-port=30255"}, check: func(t *testing.T, cfg *Config) {
			n := cfg.ForNode(2)
			if n.Simulator.NodeName != "sim-2" || n.Kubelet.StaticPodPath != filepath.Join("/m", "sim-2") || n.CertDir != filepath.Join("/c", "sim-2") ||
				n.Kubelet.Port != 20252 || n.Kubelet.ReadOnlyPort != 30257 {
				t.Errorf("node 2 = %s %s %s :%d :%d", n.Simulator.NodeName, n.Kubelet.StaticPodPath, n.CertDir, n.Kubelet.Port, n.Kubelet.ReadOnlyPort)
			}
			if cfg.Simulator.NodeName != "sim" || cfg.Kubelet.Port != 20250 {
				t.Errorf("ForNode changed the base configuration: %s :%d", cfg.Simulator.NodeName, cfg.Kubelet.Port)
			}
		}},
		{name: "free ports stay free", args: []string{"--node-count=100", "--port=0", "--read-only-port=0"}, check: func(t *testing.T, cfg *Config) {
			if n := cfg.ForNode(99); n.Kubelet.Port != 0 || n.Kubelet.ReadOnlyPort != 0 {
				t.Errorf("node 99 ports :%d :%d, want 0 and 0", n.Kubelet.Port, n.Kubelet.ReadOnlyPort)
			}
		}},
		{name: "zero nodes", args: []string{"--node-count=0"}, wantErr: "invalid --node-count 0: must be from 1 to 1000"},
		{name: "too many nodes", args: []string{"--node-count=5000"}, wantErr: "invalid --node-count 5000: must be from 1 to 1000"},
		{name: "default ports overlap", args: []string{"--node-count=10"},
			wantErr: "invalid --node-count 10: nodes listen on --port 10250-10259 and --read-only-port 10255-10264, which overlap; set them at least 10 apart"},
		{name: "past the last port", args: []string{"--node-count=10", "--port=65530", "--read-only-port=0"},
			wantErr: "invalid --port 65530 with --node-count 10: node 9 would listen on 65539, past 65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(tt.args, features.NewFeatureGate(), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load(%v) = %v, want an error with %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfg)
		})
	}
}
