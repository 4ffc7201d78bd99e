package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/config"
)

const goodKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

// TestKubeClient: --kubeconfig builds a client with the kubelet's QPS, burst and content type
// (protobuf, accepting JSON, unless contentType says otherwise); a file that cannot be read
// or parsed is an error naming it (the daemon exits 2).
func TestKubeClient(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", goodKubeconfig)
	tests := []struct {
		name    string
		path    string
		qps     string
		ctype   string
		want    [2]string // ContentType, AcceptContentTypes
		wantErr string
	}{
		{name: "valid", path: good, want: [2]string{"application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json"}},
		{name: "json", path: good, ctype: `"application/json"`, want: [2]string{"application/json", ""}},
		{name: "bad content type", path: good, ctype: "7", wantErr: "kubeletConfiguration.contentType 7"},
		{name: "missing file", path: filepath.Join(dir, "nope"), wantErr: "--kubeconfig " + filepath.Join(dir, "nope")},
		{name: "not a kubeconfig", path: write("bad", "clusters: [\n"), wantErr: "--kubeconfig " + filepath.Join(dir, "bad")},
		{name: "bad qps", path: good, qps: "-1", wantErr: "kubeletConfiguration.kubeAPIQPS -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Kubeconfig: tt.path}
			cfg.Simulator.NodeName = "n1"
			if tt.qps != "" {
				cfg.Kubelet.KubeAPIQPS = []byte(tt.qps)
			}
			if tt.ctype != "" {
				cfg.Kubelet.ContentType = []byte(tt.ctype)
			}
			rest, err := kubeRESTConfig(cfg)
			var client any
			if err == nil {
				client, err = kubeClient(rest, "n1")
			}
			if tt.wantErr == "" {
				if err != nil || client == nil {
					t.Fatalf("kubeClient = %v, %v", client, err)
				}
				if got := [2]string{rest.ContentType, rest.AcceptContentTypes}; got != tt.want {
					t.Errorf("content types %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
