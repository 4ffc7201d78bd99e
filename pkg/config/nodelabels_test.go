package config

import (
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/features"
)

func TestNodeLabelsFlag(t *testing.T) {
	tests := []struct {
		name    string
		flag    string
		want    map[string]string
		wantErr string
	}{
		{name: "own labels", flag: "--node-labels=team=a,tier=edge", want: map[string]string{"team": "a", "tier": "edge"}},
		{name: "allowed kubernetes.io labels", flag: "--node-labels=topology.kubernetes.io/zone=z1,node.kubernetes.io/pool=p,kubelet.kubernetes.io/x=y",
			want: map[string]string{"topology.kubernetes.io/zone": "z1", "node.kubernetes.io/pool": "p", "kubelet.kubernetes.io/x": "y"}},
		{name: "a kubernetes.io label the kubelet may not set", flag: "--node-labels=node-role.kubernetes.io/master=",
			wantErr: "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-role.kubernetes.io/master]"},
		{name: "malformed pair", flag: "--node-labels=team", wantErr: `malformed pair "team"`},
		{name: "bad value", flag: "--node-labels=team=a b", wantErr: `invalid node labels (--node-labels): "team"="a b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load([]string{tt.flag}, features.NewFeatureGate(), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.NodeLabels) != len(tt.want) {
				t.Fatalf("labels %v, want %v", cfg.NodeLabels, tt.want)
			}
			for k, v := range tt.want {
				if cfg.NodeLabels[k] != v {
					t.Errorf("label %s = %q, want %q", k, cfg.NodeLabels[k], v)
				}
			}
		})
	}
}
