package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/features"
)

const goodKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

// TestKubeClient: --kubeconfig builds a node's clients as the kubelet's: the main one with
// kubeAPIQPS, kubeAPIBurst and contentType (defaults 50, 100 and protobuf accepting JSON),
// the heartbeat one with no rate limit, the events one with eventRecordQPS (default 50). The
// configuration file and the flags set them, flags winning; a bad value is an error naming
// its field and flag, a kubeconfig that cannot be read or parsed one naming the file (the
// daemon exits 2).
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
	file := write("kubelet.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nkubeAPIQPS: 20\nkubeAPIBurst: 40\ncontentType: application/json\neventRecordQPS: 9\n")
	type client struct {
		qps           float32
		burst         int
		ctype, accept string
		eventQPS      float32
	}
	tests := []struct {
		name    string
		args    []string
		want    client
		wantErr string
	}{
		{name: "defaults", args: []string{"--kubeconfig", good},
			want: client{50, 100, "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json", 50}},
		{name: "file", args: []string{"--kubeconfig", good, "--config", file}, want: client{20, 40, "application/json", "", 9}},
		{name: "flags win", args: []string{"--kubeconfig", good, "--config", file, "--kube-api-qps=7", "--kube-api-content-type=application/vnd.kubernetes.protobuf", "--event-qps=3"},
			want: client{7, 40, "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json", 3}},
		{name: "zero is client-go's default", args: []string{"--kubeconfig", good, "--kube-api-qps=0", "--kube-api-burst=0", "--event-qps=0"},
			want: client{5, 0, "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json", 5}},
		{name: "bad content type", args: []string{"--kubeconfig", good, "--kube-api-content-type=text/plain"},
			wantErr: `kubeletConfiguration.contentType: invalid value "text/plain" (set by --kube-api-content-type)`},
		{name: "negative qps", args: []string{"--kubeconfig", good, "--kube-api-qps=-1"},
			wantErr: "kubeletConfiguration.kubeAPIQPS: invalid value -1 (set by --kube-api-qps): must not be a negative number"},
		{name: "missing file", args: []string{"--kubeconfig", filepath.Join(dir, "nope")}, wantErr: "--kubeconfig " + filepath.Join(dir, "nope")},
		{name: "not a kubeconfig", args: []string{"--kubeconfig", write("bad", "clusters: [\n")}, wantErr: "--kubeconfig " + filepath.Join(dir, "bad")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(append(tt.args, "--hostname-override=n1"), features.NewFeatureGate(), nil)
			var rest *restclient.Config
			if err == nil {
				rest, err = kubeRESTConfig(cfg)
			}
			var clients nodeClients
			if err == nil {
				clients, err = kubeClients(rest, cfg, "n1")
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				limiter := func(c kubernetes.Interface) flowcontrol.RateLimiter {
					return c.CoreV1().RESTClient().(*restclient.RESTClient).GetRateLimiter()
				}
				got := client{limiter(clients.main).QPS(), rest.Burst, rest.ContentType, rest.AcceptContentTypes, limiter(clients.events).QPS()}
				if got != tt.want {
					t.Errorf("client %+v, want %+v", got, tt.want)
				}
				if l := limiter(clients.heartbeat); l != nil {
					t.Errorf("the heartbeat client has a rate limit (%v QPS), want none", l.QPS())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
