package app

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
)

// testCommand builds the root command with a fresh gate, captured output and a daemon
// stub that records the configuration it was started with.
func testCommand(t *testing.T, args ...string) (cmd *cobra.Command, out *bytes.Buffer, started **config.Config, gate featuregate.MutableFeatureGate) {
	t.Helper()
	out = &bytes.Buffer{}
	var cfg *config.Config
	gate = features.NewFeatureGate()
	cmd = newCommand(options{
		gate:   gate,
		out:    out,
		errOut: out,
		run: func(_ context.Context, c *config.Config) error {
			cfg = c
			return nil
		},
	})
	cmd.SetArgs(args)
	return cmd, out, &cfg, gate
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "minikubelet.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHelpListsKnownFeatures(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--config=x.yaml", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd, out, started, gate := testCommand(t, args...)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if *started != nil {
				t.Fatal("--help started the daemon")
			}
			for _, known := range gate.KnownFeatures() {
				if !strings.Contains(out.String(), known) {
					t.Errorf("help lacks %q:\n%s", known, out.String())
				}
			}
			for _, flag := range []string{"--config", "--feature-gates", "--pod-manifest-path", "--hostname-override", "--sync-frequency",
				"--file-check-frequency", "--node-status-update-frequency", "--max-pods", "--address", "--read-only-port",
				"--enable-debugging-handlers", "--relist-period", "--relist-threshold", "--metrics-prefix", "--seed", "-v, --v", "feature-gates", "version"} {
				if !strings.Contains(out.String(), flag) {
					t.Errorf("help lacks %q", flag)
				}
			}
		})
	}
}

func TestRootStartsDaemonWithLoadedConfig(t *testing.T) {
	path := writeFile(t, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  EventedPLEG: true\nmaxPods: 12\n")
	cmd, _, started, gate := testCommand(t, "--config", path, "--feature-gates=GracefulNodeShutdown=false", "--hostname-override=n1")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	cfg := *started
	if cfg == nil {
		t.Fatal("the daemon was not started")
	}
	if cfg.Kubelet.MaxPods != 12 || cfg.Simulator.NodeName != "n1" {
		t.Errorf("daemon got maxPods=%d node=%q", cfg.Kubelet.MaxPods, cfg.Simulator.NodeName)
	}
	if !gate.Enabled(features.EventedPLEG) || gate.Enabled(features.GracefulNodeShutdown) {
		t.Error("gates were not applied before the daemon started")
	}
}

func TestRootRejectsInvalidConfigBeforeStarting(t *testing.T) {
	tests := [][]string{
		{"--max-pods=-1"},
		{"--feature-gates=PodReadyToStartContainersCondition=false"},
		{"--config=/does/not/exist.yaml"},
		{"not-a-command"},
		// Fault injection on every interface without --allow-remote-debugging.
		{"--address=0.0.0.0", "--enable-debugging-handlers"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd, _, started, _ := testCommand(t, args...)
			if err := cmd.Execute(); err == nil {
				t.Fatal("Execute succeeded, want an error")
			}
			if *started != nil {
				t.Fatal("the daemon started despite the error")
			}
		})
	}
}

func TestVersion(t *testing.T) {
	cmd, out, started, _ := testCommand(t, "version")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if *started != nil {
		t.Fatal("version started the daemon")
	}
	for _, want := range []string{"minikubelet " + version, "git commit:", "go version:", "kubelet compatibility: v1.37.2", "--emulated-version:    1.34 (v1.34.4), 1.35 (v1.35.4), 1.36 (v1.36.3), 1.37 (v1.37.2)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestFeatureGatesCommand(t *testing.T) {
	path := writeFile(t, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  EventedPLEG: true\n  GracefulNodeShutdown: false\n")
	tests := []struct {
		name string
		args []string
		want map[string]string // gate -> expected row fields after the name
	}{
		{"defaults", []string{"feature-gates"}, map[string]string{
			"EventedPLEG":                        "ALPHA false false false true",
			"GracefulNodeShutdown":               "BETA true false true true",
			"PodReadyToStartContainersCondition": "GA true true true true",
			"KubeletFineGrainedAuthz":            "GA true true true true",
			"ReduceDefaultCrashLoopBackOffDecay": "ALPHA false false false true",
			"ImageVolume":                        "GA true true true true",
		}},
		{"file, then flag over it", []string{"feature-gates", "--config=" + path, "--feature-gates=EventedPLEG=false"}, map[string]string{
			"EventedPLEG":          "ALPHA false false false true",
			"GracefulNodeShutdown": "BETA true false false true",
		}},
		{"flags given before the subcommand", []string{"--config", path, "feature-gates"}, map[string]string{
			"EventedPLEG": "ALPHA false false true true",
		}},
		{"a v1.37 gate the simulator does not model", []string{"feature-gates", "--feature-gates=PodLevelResources=false"}, map[string]string{
			"PodLevelResources":      "BETA true false false false",
			"KubeletInUserNamespace": "BETA true false true false",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, out, started, _ := testCommand(t, tt.args...)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if *started != nil {
				t.Fatal("feature-gates started the daemon")
			}
			rows := map[string]string{}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if got := strings.Join(strings.Fields(lines[0]), " "); got != "NAME STAGE DEFAULT LOCKED ENABLED SIMULATED" {
				t.Errorf("header = %q", got)
			}
			for _, l := range lines[1:] {
				f := strings.Fields(l)
				rows[f[0]] = strings.Join(f[1:], " ")
			}
			for gate, want := range tt.want {
				if rows[gate] != want {
					t.Errorf("%s row = %q, want %q\n%s", gate, rows[gate], want, out.String())
				}
			}
			if _, ok := rows["AllAlpha"]; ok {
				t.Error("the AllAlpha switch is listed as a feature")
			}
		})
	}
}

func TestFeatureGatesCommandReportsErrors(t *testing.T) {
	path := writeFile(t, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  PodReadyToStartContainersCondition: false\n")
	cmd, _, _, _ := testCommand(t, "feature-gates", "--config="+path)
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "feature is locked to true") {
		t.Fatalf("err = %v, want the locked-gate error", err)
	}
}

// TestClientCommandsFailInOneLine checks what main relies on: a client command that
// cannot reach the daemon prints nothing itself (no usage, no second copy of the error)
// and returns the one error main prints.
func TestClientCommandsFailInOneLine(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	for _, args := range [][]string{
		{"get", "pods", "--server", url},
		{"describe", "node", "--server", url},
		{"fault", "list", "--server", url},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			cmd, out, started, _ := testCommand(t, args...)
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), "cannot reach minikubelet at "+url) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line naming the unreachable daemon", err)
			}
			if out.Len() != 0 {
				t.Errorf("the command printed %q itself; main prints the error", out.String())
			}
			if *started != nil {
				t.Error("a client command started the daemon")
			}
		})
	}
}

func TestCommitFromLdflags(t *testing.T) {
	old := gitCommit
	t.Cleanup(func() { gitCommit = old })
	gitCommit = "0123abc"
	if commit() != "0123abc" {
		t.Errorf("commit() = %q, want the -ldflags value", commit())
	}
	gitCommit = ""
	if !regexp.MustCompile(`^([0-9a-f]{40}( \(modified\))?|unknown)$`).MatchString(commit()) {
		t.Errorf("commit() = %q, want a revision or unknown", commit())
	}
}

// TestKubeletCommandLineStartsTheDaemon: flags a kubeadm node passes its kubelet start the
// daemon (klog's -v among them); --version prints the version and starts nothing.
func TestKubeletCommandLineStartsTheDaemon(t *testing.T) {
	cmd, _, started, gate := testCommand(t, "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
		"--fail-cgroupv1=false", "--fail-swap-on=false", "--v=2",
		"--feature-gates=InPlacePodVerticalScaling=true", "--hostname-override=n1", "--read-only-port=0", "--port=0")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if *started == nil {
		t.Fatal("the daemon did not start")
	}
	if got := strings.Join((*started).UnsimulatedFlags, ","); got != "--container-runtime-endpoint,--fail-cgroupv1,--fail-swap-on" {
		t.Errorf("unsimulated flags %s", got)
	}
	if !gate.Enabled("InPlacePodVerticalScaling") {
		t.Error("InPlacePodVerticalScaling=true is not in effect")
	}

	cmd, out, started, _ := testCommand(t, "--version")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if *started != nil || !strings.Contains(out.String(), "kubelet compatibility: v1.37") {
		t.Errorf("--version: started %v, printed %q", *started != nil, out.String())
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--emulated-version=1.34", "--version"}, "kubelet compatibility: v1.34.4 (--emulated-version 1.34)\n"},
		{[]string{"--version", "--emulated-version", "1.36"}, "kubelet compatibility: v1.36.3 (--emulated-version 1.36)\n"},
		{[]string{"--version", "--emulated-version", "1.37"}, "kubelet compatibility: v1.37.2\n"},
	} {
		cmd, out, started, _ := testCommand(t, tt.args...)
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		if *started != nil || !strings.Contains(out.String(), tt.want) {
			t.Errorf("%v: started %v, printed %q, want %q in it", tt.args, *started != nil, out.String(), tt.want)
		}
	}
	// The flags parse first, as the kubelet's: one the release does not have fails
	// --version too.
	cmd, _, started, _ = testCommand(t, "--emulated-version=1.35", "--pod-infra-container-image=x", "--version")
	if err := cmd.Execute(); err == nil || *started != nil || !strings.Contains(err.Error(), "unknown flag: --pod-infra-container-image (kubelet 1.35 has no such flag") {
		t.Errorf("--version with a flag 1.35 lacks: %v", err)
	}
}
