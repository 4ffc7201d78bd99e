package app

import (
	"context"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/features"
)

// TestRunDaemonReportsBusyPort: a port already in use fails the start with an error naming
// the address and the flags, instead of running a daemon nobody can reach.
func TestRunDaemonReportsBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, tt := range []struct {
		args []string
		flag string
	}{
		{[]string{"--read-only-port=" + port, "--port=0"}, "--read-only-port"},
		{[]string{"--read-only-port=0", "--port=" + port}, "--port"},
	} {
		cfg, err := config.Load(append(tt.args, "--hostname-override=n1"), features.NewFeatureGate(), nil)
		if err != nil {
			t.Fatal(err)
		}
		err = runDaemon(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), tt.flag) {
			t.Errorf("runDaemon = %v, want an error naming %s and %s", err, ln.Addr(), tt.flag)
		}
	}
}

// TestRunDaemonRefusesWebhooksStandalone: the secure defaults of a config file need an API
// server; standalone, the daemon says so instead of serving a port nobody can call.
func TestRunDaemonRefusesWebhooksStandalone(t *testing.T) {
	cfg, err := config.Load([]string{"--read-only-port=0", "--port=0", "--hostname-override=n1", "--authentication-token-webhook", "--anonymous-auth=false"}, features.NewFeatureGate(), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = runDaemon(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "no client provided, cannot use webhook authentication") {
		t.Errorf("runDaemon = %v, want the kubelet's webhook error", err)
	}
}

// TestClientCommandsRegistered: get, describe and fault are reachable from the root.
func TestClientCommandsRegistered(t *testing.T) {
	cmd, _, _, _ := testCommand(t)
	for _, path := range [][]string{{"get", "pods"}, {"get", "node"}, {"describe", "pod"}, {"fault", "add"}} {
		found, _, err := cmd.Find(path)
		if err != nil || found.Name() != path[len(path)-1] {
			t.Errorf("command %v not found: %v", path, err)
		}
	}
}

// TestTuneGC: the daemon collects at 50% heap growth unless GOGC says otherwise.
func TestTuneGC(t *testing.T) {
	tests := []struct {
		name string
		env  *string // nil: GOGC unset
		want int
	}{
		{"unset", nil, daemonGCPercent},
		{"GOGC set", ptr.To("100"), 77}, // the percent in force before tuneGC is kept
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != nil {
				t.Setenv("GOGC", *tt.env)
			} else if v, ok := os.LookupEnv("GOGC"); ok {
				os.Unsetenv("GOGC")
				t.Cleanup(func() { os.Setenv("GOGC", v) })
			}
			orig := debug.SetGCPercent(77)
			t.Cleanup(func() { debug.SetGCPercent(orig) })
			tuneGC(klog.Background())
			if got := debug.SetGCPercent(77); got != tt.want {
				t.Errorf("GC percent = %d, want %d", got, tt.want)
			}
		})
	}
}
