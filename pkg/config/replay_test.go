package config

import (
	"slices"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/features"
)

// A recording keeps the flags that shape the node, each as --name=value, and drops those
// naming this machine's files, the cluster, the recorder's own and klog's.
func TestReplayArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"nothing", nil, nil},
		{"kept, both forms", []string{"--max-pods", "20", "--feature-gates=EventedPLEG=true", "--enable-debugging-handlers"},
			[]string{"--max-pods=20", "--feature-gates=EventedPLEG=true", "--enable-debugging-handlers"}},
		{"dropped", []string{"--config", "/etc/k.yaml", "--kubeconfig=/x", "--pod-manifest-path", "/m", "--record=/r.yaml",
			"--record-max-bytes", "4096", "--cert-dir=/c", "--tls-cert-file", "/t", "--max-pods=3"}, []string{"--max-pods=3"}},
		{"klog's", []string{"-v", "4", "--vmodule=x=2", "--sync-frequency=30s", "-v=2"}, []string{"--sync-frequency=30s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReplayArgs(tt.args)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ReplayArgs(%q) = %q, want %q", tt.args, got, tt.want)
			}
			// What is kept loads.
			if _, err := Load(got, features.NewFeatureGate(), nil); err != nil {
				t.Fatalf("Load(%q): %v", got, err)
			}
		})
	}
}

// --record names one node, and bounds its file sensibly.
func TestRecordFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--record=/tmp/r.yaml", "--node-count=2"}, `invalid --record "/tmp/r.yaml": it records one node, and --node-count is 2`},
		{[]string{"--record=/tmp/r.yaml", "--record-max-bytes=10"}, "invalid --record-max-bytes 10: must be at least 4096"},
	} {
		_, err := Load(tt.args, features.NewFeatureGate(), nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Load(%q) = %v, want %q", tt.args, err, tt.want)
		}
	}
	cfg, err := Load([]string{"--record=/tmp/r.yaml"}, features.NewFeatureGate(), nil)
	if err != nil || cfg.Record != "/tmp/r.yaml" || cfg.RecordMaxBytes != DefaultRecordMaxBytes {
		t.Fatalf("Load = %+v, %v", cfg, err)
	}
}
