package monitoring

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

func TestMain(m *testing.M) {
	klog.SetLogger(logr.Discard()) // simulate's kubelet logs are noise here
	os.Exit(m.Run())
}

// repo is the repository's root, from this package's directory.
var repo = filepath.Join("..", "..")

// tool finds a Prometheus binary. Without it the test is skipped, unless
// MINIKUBELET_REQUIRE_TOOLS is set (CI sets it after installing them): then it fails.
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("MINIKUBELET_REQUIRE_TOOLS") != "" {
		t.Fatalf("%s not found and MINIKUBELET_REQUIRE_TOOLS is set: install Debian's prometheus package", name)
	}
	t.Skipf("%s not installed (Debian package prometheus); .ci/run installs it", name)
	return ""
}

// run runs a command with a deadline and returns its combined output.
func run(t *testing.T, timeout time.Duration, dir string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
