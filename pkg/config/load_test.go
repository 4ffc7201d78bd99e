package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kubeletref"
)

const kubeletHead = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
const simulatorHead = "apiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\n"

// writeConfig writes content to a config file in a fresh directory and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "minikubelet.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// expandArgs replaces $CONFIG in args with path.
func expandArgs(args []string, path string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "$CONFIG", path)
	}
	return out
}

func TestLoadPrecedence(t *testing.T) {
	tests := []struct {
		name  string
		file  string // config file content; "" means no file
		args  []string
		check func(t *testing.T, cfg *Config, gate featuregate.FeatureGate)
	}{
		{
			name: "defaults without a config file",
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				kc := cfg.Kubelet
				if kc.SyncFrequency.Duration != time.Minute || kc.FileCheckFrequency.Duration != 20*time.Second ||
					kc.NodeStatusUpdateFrequency.Duration != 10*time.Second || kc.NodeStatusReportFrequency.Duration != 5*time.Minute ||
					kc.NodeLeaseDurationSeconds != 40 || kc.MaxPods != 110 || kc.Address != "127.0.0.1" || kc.ReadOnlyPort != 10255 {
					t.Errorf("defaults wrong: %+v", kc)
				}
				if gate.Enabled(features.EventedPLEG) || !gate.Enabled(features.GracefulNodeShutdown) {
					t.Error("gates are not at their defaults")
				}
				if cfg.ConfigFile != "" || len(cfg.FeatureGates) != 0 || cfg.FeatureGates == nil {
					t.Errorf("configFile=%q featureGates=%v, want empty", cfg.ConfigFile, cfg.FeatureGates)
				}
			},
		},
		{
			name: "gate set in the file and overridden by a flag",
			file: kubeletHead + "featureGates:\n  EventedPLEG: true\n",
			args: []string{"--config=$CONFIG", "--feature-gates=EventedPLEG=false"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				if gate.Enabled(features.EventedPLEG) || cfg.FeatureGates["EventedPLEG"] {
					t.Errorf("EventedPLEG on (gates %v); the flag's false must win", cfg.FeatureGates)
				}
			},
		},
		{
			name: "flag set before --config still wins",
			file: kubeletHead + "featureGates:\n  EventedPLEG: false\n",
			args: []string{"--feature-gates=EventedPLEG=true", "--config", "$CONFIG"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				if !gate.Enabled(features.EventedPLEG) {
					t.Error("EventedPLEG off; the flag's true must win")
				}
			},
		},
		{
			name: "file-only key kept beside a flag key",
			file: kubeletHead + "featureGates:\n  RotateKubeletServerCertificate: false\n",
			args: []string{"--config=$CONFIG", "--feature-gates=EventedPLEG=true"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				want := map[string]bool{"EventedPLEG": true, "RotateKubeletServerCertificate": false}
				if !equalGates(cfg.FeatureGates, want) || gate.Enabled(features.RotateKubeletServerCertificate) || !gate.Enabled(features.EventedPLEG) {
					t.Errorf("featureGates = %v, want %v", cfg.FeatureGates, want)
				}
			},
		},
		{
			name: "repeated --feature-gates accumulate",
			file: kubeletHead + "featureGates:\n  GracefulNodeShutdown: true\n",
			args: []string{"--config=$CONFIG", "--feature-gates=EventedPLEG=true", "--feature-gates=GracefulNodeShutdown=false,RotateKubeletServerCertificate=false"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				want := map[string]bool{"EventedPLEG": true, "GracefulNodeShutdown": false, "RotateKubeletServerCertificate": false}
				if !equalGates(cfg.FeatureGates, want) {
					t.Errorf("featureGates = %v, want %v", cfg.FeatureGates, want)
				}
			},
		},
		{
			name: "repeated --feature-gates accumulate without a file",
			args: []string{"--feature-gates=EventedPLEG=true", "--feature-gates=GracefulNodeShutdown=false"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				if !gate.Enabled(features.EventedPLEG) || gate.Enabled(features.GracefulNodeShutdown) {
					t.Errorf("featureGates = %v, want both flags applied", cfg.FeatureGates)
				}
			},
		},
		{
			name: "flag duration overrides the file, file overrides the default",
			file: kubeletHead + "syncFrequency: 30s\nfileCheckFrequency: 5s\nmaxPods: 20\n",
			args: []string{"--sync-frequency=15s", "--config=$CONFIG"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				if cfg.Kubelet.SyncFrequency.Duration != 15*time.Second {
					t.Errorf("syncFrequency = %v, want the flag's 15s", cfg.Kubelet.SyncFrequency.Duration)
				}
				if cfg.Kubelet.FileCheckFrequency.Duration != 5*time.Second || cfg.Kubelet.MaxPods != 20 {
					t.Errorf("fileCheckFrequency = %v maxPods = %d, want the file's 5s and 20", cfg.Kubelet.FileCheckFrequency.Duration, cfg.Kubelet.MaxPods)
				}
			},
		},
		{
			name: "read-only port: 10255 when a file leaves it out",
			file: kubeletHead,
			args: []string{"--config=$CONFIG"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				if cfg.Kubelet.ReadOnlyPort != DefaultReadOnlyPort {
					t.Errorf("readOnlyPort = %d, want %d", cfg.Kubelet.ReadOnlyPort, DefaultReadOnlyPort)
				}
			},
		},
		{
			name: "read-only port: explicit 0 in the file (a free port) is kept",
			file: kubeletHead + "readOnlyPort: 0\n",
			args: []string{"--config=$CONFIG"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				if cfg.Kubelet.ReadOnlyPort != 0 {
					t.Errorf("readOnlyPort = %d, want 0", cfg.Kubelet.ReadOnlyPort)
				}
			},
		},
		{
			name: "read-only port: the flag wins over the file's 0",
			file: kubeletHead + "readOnlyPort: 0\n",
			args: []string{"--read-only-port=10300", "--config=$CONFIG"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				if cfg.Kubelet.ReadOnlyPort != 10300 {
					t.Errorf("readOnlyPort = %d, want the flag's 10300", cfg.Kubelet.ReadOnlyPort)
				}
			},
		},
		{
			name: "simulator flags override the simulator document",
			file: simulatorHead + "pleg:\n  relistPeriod: 5s\n  relistThreshold: 1m\nmetricsPrefix: sim_\nruntime:\n  seed: 7\n",
			args: []string{"--config=$CONFIG", "--relist-period=2s", "--metrics-prefix=kubelet_"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				sc := cfg.Simulator
				if sc.PLEG.RelistPeriod.Duration != 2*time.Second || sc.MetricsPrefix != "kubelet_" {
					t.Errorf("relistPeriod=%v metricsPrefix=%q, want the flags' 2s and kubelet_", sc.PLEG.RelistPeriod.Duration, sc.MetricsPrefix)
				}
				if sc.PLEG.RelistThreshold.Duration != time.Minute || sc.Runtime.Seed != 7 {
					t.Errorf("relistThreshold=%v seed=%d, want the file's 1m and 7", sc.PLEG.RelistThreshold.Duration, sc.Runtime.Seed)
				}
				// No kubelet document: the kubelet part keeps the no-file defaults.
				if cfg.Kubelet.ReadOnlyPort != DefaultReadOnlyPort {
					t.Errorf("readOnlyPort = %d, want %d", cfg.Kubelet.ReadOnlyPort, DefaultReadOnlyPort)
				}
			},
		},
		{
			name: "every flag reaches its field",
			args: []string{"--pod-manifest-path=/pods", "--hostname-override=Node-A", "--sync-frequency=2m",
				"--file-check-frequency=3s", "--node-status-update-frequency=4s", "--max-pods=5", "--address=::",
				"--read-only-port=0", "--enable-debugging-handlers", "--relist-period=6s", "--relist-threshold=7m",
				"--metrics-prefix=p_", "--seed=8", "--allow-remote-debugging", "--program-cpu=250m"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				kc, sc := cfg.Kubelet, cfg.Simulator
				if kc.StaticPodPath != "/pods" || kc.SyncFrequency.Duration != 2*time.Minute || kc.FileCheckFrequency.Duration != 3*time.Second ||
					kc.NodeStatusUpdateFrequency.Duration != 4*time.Second || kc.MaxPods != 5 || kc.Address != "::" || kc.ReadOnlyPort != 0 ||
					!*kc.EnableDebuggingHandlers {
					t.Errorf("kubelet flags not applied: %+v", kc)
				}
				if sc.NodeName != "node-a" || sc.PLEG.RelistPeriod.Duration != 6*time.Second || sc.PLEG.RelistThreshold.Duration != 7*time.Minute ||
					sc.MetricsPrefix != "p_" || sc.Runtime.Seed != 8 || !sc.AllowRemoteDebugging || sc.Runtime.ProgramCPU.MilliValue() != 250 {
					t.Errorf("simulator flags not applied: %+v", sc)
				}
			},
		},
		{
			name: "hostname override wins over nodeName",
			file: simulatorHead + "nodeName: from-file\n",
			args: []string{"--config=$CONFIG", "--hostname-override=from-flag"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				if cfg.Simulator.NodeName != "from-flag" {
					t.Errorf("nodeName = %q, want from-flag", cfg.Simulator.NodeName)
				}
			},
		},
		{
			name: "nodeName from the file",
			file: simulatorHead + "nodeName: from-file\n",
			args: []string{"--config=$CONFIG"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				if cfg.Simulator.NodeName != "from-file" {
					t.Errorf("nodeName = %q, want from-file", cfg.Simulator.NodeName)
				}
			},
		},
		{
			name: "v1.37 gates the simulator does not model are accepted and listed",
			file: kubeletHead + "featureGates:\n  CSIVolumeHealth: true\n  EventedPLEG: true\nclusterDomain: cluster.local\n",
			args: []string{"--config=$CONFIG", "--feature-gates=KubeletInUserNamespace=true"},
			check: func(t *testing.T, cfg *Config, gate featuregate.FeatureGate) {
				if len(cfg.UnsimulatedFields) != 0 { // clusterDomain is simulated (resolv.conf)
					t.Errorf("unsimulated fields = %v, want none", cfg.UnsimulatedFields)
				}
				want := []string{"CSIVolumeHealth=true", "KubeletInUserNamespace=true"}
				if strings.Join(cfg.UnsimulatedGates, ",") != strings.Join(want, ",") {
					t.Errorf("unsimulated gates = %v, want %v", cfg.UnsimulatedGates, want)
				}
				if !gate.Enabled(features.EventedPLEG) || !gate.Enabled("KubeletInUserNamespace") {
					t.Errorf("featureGates = %v, want EventedPLEG and KubeletInUserNamespace on", cfg.FeatureGates)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hostnameFunc = func() (string, error) { return "Test-Host", nil }
			t.Cleanup(func() { hostnameFunc = os.Hostname })
			path := ""
			if tt.file != "" {
				path = writeConfig(t, tt.file)
			}
			gate := features.NewFeatureGate()
			cfg, err := Load(expandArgs(tt.args, path), gate, nil)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if path != "" && cfg.ConfigFile != path {
				t.Errorf("ConfigFile = %q, want %q", cfg.ConfigFile, path)
			}
			tt.check(t, cfg, gate)
		})
	}
}

// TestLoadSecurePortDefaults: the kubelet's two sets of defaults for the secure port.
// Without a config file the flag defaults hold (anonymous, AlwaysAllow); a config file
// brings v1beta1's (webhook authentication and authorization); flags win over both.
func TestLoadSecurePortDefaults(t *testing.T) {
	tests := []struct {
		name          string
		file          string
		args          []string
		anonymous     bool
		webhook       bool
		mode          string
		port          int32
		authnCacheTTL time.Duration
	}{
		{"no config file: flag defaults", "", nil, true, false, "AlwaysAllow", 10250, 2 * time.Minute},
		{"config file: v1beta1 defaults", kubeletHead, []string{"--config=$CONFIG"}, false, true, "Webhook", 10250, 2 * time.Minute},
		{"config file values", kubeletHead + "port: 10260\nauthentication:\n  anonymous: {enabled: true}\n  webhook: {enabled: false, cacheTTL: 10s}\nauthorization: {mode: AlwaysAllow}\n",
			[]string{"--config=$CONFIG"}, true, false, "AlwaysAllow", 10260, 10 * time.Second},
		{"flags win over the file", kubeletHead + "authentication:\n  anonymous: {enabled: true}\n",
			[]string{"--config=$CONFIG", "--anonymous-auth=false", "--authentication-token-webhook", "--authorization-mode=Webhook", "--port=0"},
			false, true, "Webhook", 0, 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeConfig(t, tt.file)
			}
			cfg, err := Load(expandArgs(tt.args, path), features.NewFeatureGate(), nil)
			if err != nil {
				t.Fatal(err)
			}
			kc := cfg.Kubelet
			if got := *kc.Authentication.Anonymous.Enabled; got != tt.anonymous {
				t.Errorf("anonymous = %v, want %v", got, tt.anonymous)
			}
			if got := *kc.Authentication.Webhook.Enabled; got != tt.webhook {
				t.Errorf("webhook = %v, want %v", got, tt.webhook)
			}
			if got := string(kc.Authorization.Mode); got != tt.mode {
				t.Errorf("mode = %q, want %q", got, tt.mode)
			}
			if kc.Port != tt.port {
				t.Errorf("port = %d, want %d", kc.Port, tt.port)
			}
			if got := kc.Authentication.Webhook.CacheTTL.Duration; got != tt.authnCacheTTL {
				t.Errorf("authentication cache TTL = %v, want %v", got, tt.authnCacheTTL)
			}
			if a, u := kc.Authorization.Webhook.CacheAuthorizedTTL.Duration, kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration; a != 5*time.Minute || u != 30*time.Second {
				t.Errorf("authorization cache TTLs = %v/%v, want 5m0s/30s", a, u)
			}
		})
	}
}

func TestLoadNodeNameFallsBackToHostname(t *testing.T) {
	hostnameFunc = func() (string, error) { return " Worker-1.Example.COM ", nil }
	t.Cleanup(func() { hostnameFunc = os.Hostname })
	cfg, err := Load(nil, features.NewFeatureGate(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Simulator.NodeName != "worker-1.example.com" {
		t.Errorf("nodeName = %q, want the lower-cased host name", cfg.Simulator.NodeName)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		args []string
		want []string // substrings of the error
	}{
		{"unknown flag", "", []string{"--sync-frequncy=1s"}, []string{"unknown flag: --sync-frequncy"}},
		{"malformed duration flag", "", []string{"--sync-frequency=soon"}, []string{`invalid argument "soon" for "--sync-frequency"`}},
		{"malformed feature-gates flag", "", []string{"--feature-gates=EventedPLEG"}, []string{"--feature-gates", "malformed pair, expect string=bool"}},
		{"unknown gate in a flag", "", []string{"--feature-gates=NoSuchGate=true"}, []string{"invalid --feature-gates", "unrecognized feature gate: NoSuchGate"}},
		{"positional argument", "", []string{"run"}, []string{`unknown command "run"`}},
		{"missing config file", "", []string{"--config=/nonexistent/minikubelet.yaml"}, []string{"/nonexistent/minikubelet.yaml"}},
		{"unknown field in the file", kubeletHead + "maxPod: 3\n", []string{"--config=$CONFIG"}, []string{"$CONFIG", `unknown field "kubeletConfiguration.maxPod"`}},
		{"locked gate off by flag", "", []string{"--feature-gates=PodReadyToStartContainersCondition=false"},
			[]string{"cannot set feature gate PodReadyToStartContainersCondition to false, feature is locked to true"}},
		{"locked gate off in the file", kubeletHead + "featureGates:\n  PodReadyToStartContainersCondition: false\n", []string{"--config=$CONFIG"},
			[]string{"kubeletConfiguration.featureGates (set in $CONFIG)", "cannot set feature gate PodReadyToStartContainersCondition to false, feature is locked to true"}},
		{"misspelt simulator gate in the file", kubeletHead + "featureGates:\n  EventedPleg: true\n", []string{"--config=$CONFIG"},
			[]string{"kubeletConfiguration.featureGates (set in $CONFIG)", "unrecognized feature gate: EventedPleg (did you mean EventedPLEG?)"}},
		{"gate v1.37 does not have, in the file", kubeletHead + "featureGates:\n  NoSuchGateAtAll: true\n", []string{"--config=$CONFIG"},
			[]string{"kubeletConfiguration.featureGates (set in $CONFIG): unrecognized feature gate: NoSuchGateAtAll"}},
		{"kubelet flag of the wrong type", "", []string{"--fail-swap-on=maybe"}, []string{`invalid argument "maybe" for "--fail-swap-on" flag`}},
		{"kubelet IP flag not an IP", "", []string{"--healthz-bind-address=here"}, []string{`invalid argument "here" for "--healthz-bind-address" flag`}},
		{"eviction flag over a file's soft threshold", kubeletHead + "evictionSoftGracePeriod:\n  memory.available: 1m\n", []string{"--config=$CONFIG", "--eviction-soft=memory.available<1Gi", "--eviction-soft-grace-period=nodefs.available=1m"},
			[]string{`kubeletConfiguration.evictionSoft[memory.available]: invalid value "1Gi" (set by --eviction-soft): grace period must be specified`}},
		{"invalid flag value names the flag", "", []string{"--max-pods=-1"},
			[]string{`kubeletConfiguration.maxPods: invalid value -1 (set by --max-pods): must not be a negative number`}},
		{"unsafe sysctl the kernel does not namespace", "", []string{"--allowed-unsafe-sysctls=net.core.somaxconn,kernel.panic"},
			[]string{`kubeletConfiguration.allowedUnsafeSysctls: invalid value "kernel.panic" (set by --allowed-unsafe-sysctls): the sysctls "kernel.panic" are not known to be namespaced`}},
		{"unsafe sysctl that is no sysctl name", kubeletHead + "allowedUnsafeSysctls: [Net.Core]\n", []string{"--config=$CONFIG"},
			[]string{`kubeletConfiguration.allowedUnsafeSysctls: invalid value "Net.Core" (set in $CONFIG): sysctl "Net.Core" must have at most 253 characters`}},
		{"invalid file value names the file", kubeletHead + "nodeLeaseDurationSeconds: -5\n", []string{"--config=$CONFIG"},
			[]string{`kubeletConfiguration.nodeLeaseDurationSeconds: invalid value -5 (set in $CONFIG): must be greater than 0`}},
		{"flag zero duration is not a default", "", []string{"--sync-frequency=0s"},
			[]string{`kubeletConfiguration.syncFrequency: invalid value "0s" (set by --sync-frequency): must be greater than 0`}},
		{"every validation error is returned", simulatorHead + "pleg:\n  channelCapacity: 0\n", []string{"--config=$CONFIG", "--address=localhost", "--relist-period=-1s"},
			[]string{"3 errors", `kubeletConfiguration.address: invalid value "localhost" (set by --address)`,
				`simulatorConfiguration.pleg.relistPeriod: invalid value "-1s" (set by --relist-period)`,
				`simulatorConfiguration.pleg.channelCapacity: invalid value 0 (set in $CONFIG): must be at least 1`}},
		{"read-only port out of range", kubeletHead + "readOnlyPort: 70000\n", []string{"--config=$CONFIG"},
			[]string{`kubeletConfiguration.readOnlyPort: invalid value 70000 (set in $CONFIG): must be between 0 and 65535, inclusive (0 picks a free port)`}},
		{"soft threshold without its grace period", kubeletHead + "evictionSoft:\n  memory.available: 1Gi\n", []string{"--config=$CONFIG"},
			[]string{`kubeletConfiguration.evictionSoft[memory.available]: invalid value "1Gi" (set in $CONFIG): grace period must be specified for the soft eviction threshold memory.available`}},
		{"bad soft grace period", kubeletHead + "evictionSoft:\n  memory.available: 1Gi\nevictionSoftGracePeriod:\n  memory.available: soon\n", []string{"--config=$CONFIG"},
			[]string{`kubeletConfiguration.evictionSoftGracePeriod[memory.available]: invalid value "soon" (set in $CONFIG): must be a duration`}},
		{"negative minimum reclaim", kubeletHead + "evictionMinimumReclaim:\n  nodefs.available: -1Gi\n", []string{"--config=$CONFIG"},
			[]string{`kubeletConfiguration.evictionMinimumReclaim[nodefs.available]: invalid value "-1Gi" (set in $CONFIG): eviction reclaim threshold nodefs.available must be non-negative`}},
		{"unknown authorization mode", "", []string{"--authorization-mode=RBAC"},
			[]string{`kubeletConfiguration.authorization.mode: invalid value "RBAC" (set by --authorization-mode): must be one of AlwaysAllow, Webhook`}},
		{"certificate without its key", kubeletHead + "tlsCertFile: /etc/tls.crt\n", []string{"--config=$CONFIG"},
			[]string{`kubeletConfiguration.tlsCertFile: invalid value "/etc/tls.crt" (set in $CONFIG): tlsCertFile and tlsPrivateKeyFile must be given together`}},
		{"negative cache TTL", "", []string{"--authentication-token-webhook-cache-ttl=-1s"},
			[]string{`kubeletConfiguration.authentication.webhook.cacheTTL: invalid value "-1s" (set by --authentication-token-webhook-cache-ttl): must not be negative`}},
		{"secure port out of range", "", []string{"--port=70000"},
			[]string{`kubeletConfiguration.port: invalid value 70000 (set by --port)`}},
		{"node IP not an address", "", []string{"--node-ip=node-1"}, []string{`invalid --node-ip "node-1"`}},
		{"taint effect", kubeletHead + "registerWithTaints:\n- {key: x, effect: Sometimes}\n", []string{"--config=$CONFIG"},
			[]string{`kubeletConfiguration.registerWithTaints[0].effect: invalid value "Sometimes" (set in $CONFIG): must be NoSchedule, PreferNoSchedule or NoExecute`}},
		{"taint key", "", []string{"--register-with-taints=a/b/c:NoSchedule"},
			[]string{`kubeletConfiguration.registerWithTaints[0].key: invalid value "a/b/c" (set by --register-with-taints): a valid label key must consist of alphanumeric characters`}},
		{"taint without effect", "", []string{"--register-with-taints=dedicated=sim"},
			[]string{`invalid argument "dedicated=sim" for "--register-with-taints" flag: invalid taint spec "dedicated=sim": want key=value:effect or key:effect`}},
		{"negative burst", kubeletHead + "kubeAPIBurst: -3\n", []string{"--config=$CONFIG"},
			[]string{`kubeletConfiguration.kubeAPIBurst: invalid value -3 (set in $CONFIG): must not be a negative number`}},
		{"node IP unspecified", "", []string{"--node-ip=0.0.0.0"}, []string{`invalid --node-ip "0.0.0.0": must be a specific IP address`}},
		{"shutdown grace period needs the gate", kubeletHead + "shutdownGracePeriod: 30s\n", []string{"--config=$CONFIG", "--feature-gates=GracefulNodeShutdown=false"},
			[]string{"requires feature gate GracefulNodeShutdown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeConfig(t, tt.file)
			}
			cfg, err := Load(expandArgs(tt.args, path), features.NewFeatureGate(), nil)
			if err == nil {
				t.Fatalf("Load succeeded (%+v), want an error", cfg)
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "$CONFIG", path)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestLoadHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		if _, err := Load([]string{arg}, features.NewFeatureGate(), nil); !errors.Is(err, pflag.ErrHelp) {
			t.Errorf("Load(%s) = %v, want pflag.ErrHelp", arg, err)
		}
	}
}

// TestLoadGlobalFlagsParsedOnce checks that a global flag (klog's -v in the daemon) is
// applied in the first parse and accepted but not applied again over the config file.
func TestLoadGlobalFlagsParsedOnce(t *testing.T) {
	var sets []string
	globals := pflag.NewFlagSet("globals", pflag.ContinueOnError)
	globals.VarP(recorder{&sets}, "v", "v", "verbosity")
	path := writeConfig(t, kubeletHead)
	if _, err := Load([]string{"-v=4", "--config=" + path}, features.NewFeatureGate(), globals); err != nil {
		t.Fatal(err)
	}
	if strings.Join(sets, ",") != "4" {
		t.Errorf("global flag set %v, want exactly once with 4", sets)
	}
}

type recorder struct{ sets *[]string }

func (r recorder) String() string     { return "" }
func (r recorder) Set(s string) error { *r.sets = append(*r.sets, s); return nil }
func (r recorder) Type() string       { return "level" }

// TestLoadWarnsOnGAGate checks the upstream warning when a GA gate is set (to its locked
// value, which is allowed).
func TestLoadWarnsOnGAGate(t *testing.T) {
	var buf bytes.Buffer
	klog.LogToStderr(false)
	klog.SetOutput(&buf)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	path := writeConfig(t, kubeletHead+"featureGates:\n  PodReadyToStartContainersCondition: true\n")
	if _, err := Load([]string{"--config=" + path}, features.NewFeatureGate(), nil); err != nil {
		t.Fatal(err)
	}
	klog.Flush()
	const want = `"Warning: setting GA feature gate. It will be removed in a future release." featureGate="PodReadyToStartContainersCondition" value=true`
	if !strings.Contains(buf.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, buf.String())
	}
}

func TestLoadDoesNotShareStateBetweenCalls(t *testing.T) {
	gate := features.NewFeatureGate()
	path := writeConfig(t, kubeletHead+"featureGates:\n  EventedPLEG: true\n")
	first, err := Load([]string{"--config=" + path}, gate, nil)
	if err != nil {
		t.Fatal(err)
	}
	first.FeatureGates["EventedPLEG"] = false // a consumer mutating its copy
	second, err := Load([]string{"--config=" + path}, features.NewFeatureGate(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !second.FeatureGates["EventedPLEG"] {
		t.Error("a mutation of one Load result leaked into the next")
	}
	if !gate.Enabled(features.EventedPLEG) {
		t.Error("mutating Config.FeatureGates changed the gate")
	}
}

func equalGates(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestKubeadmCommandLine: the command line kind runs its v1.37 kubelets with (kubeadm's
// flags, kind's additions; v1.37 no longer has --pod-infra-container-image) starts the
// daemon: the modelled flags act, the others are accepted, checked, and listed as not
// simulated; --version asks for the version.
func TestKubeadmCommandLine(t *testing.T) {
	args := []string{
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--container-runtime-endpoint=unix:///run/containerd/containerd.sock", "--node-ip=172.18.0.2", "--node-labels=",
		"--provider-id=kind://docker/kind/kind-control-plane",
		"--fail-swap-on=false", "--cgroup-root=/kubelet", "--runtime-cgroups=/system.slice/containerd.service",
		"--eviction-hard=memory.available<100Mi,nodefs.available<10%", "--feature-gates=KubeletInUserNamespace=true",
		"--runtime-request-timeout=15m",
	}
	cache := t.TempDir()
	userCacheDir = func() (string, error) { return cache, nil }
	t.Cleanup(func() { userCacheDir = os.UserCacheDir })
	cfg, err := Load(append(args, "--hostname-override=kind-worker"), features.NewFeatureGate(), nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if want := filepath.Join(cache, "minikubelet", "kind-worker", "pki"); cfg.CertDir != want || cfg.BootstrapKubeconfig != "/etc/kubernetes/bootstrap-kubelet.conf" {
		t.Errorf("cert dir %q (want %q), bootstrap kubeconfig %q", cfg.CertDir, want, cfg.BootstrapKubeconfig)
	}
	wantFlags := []string{"--cgroup-root", "--container-runtime-endpoint", "--fail-swap-on",
		"--provider-id", "--runtime-cgroups"}
	if strings.Join(cfg.UnsimulatedFlags, ",") != strings.Join(wantFlags, ",") {
		t.Errorf("unsimulated flags %v, want %v", cfg.UnsimulatedFlags, wantFlags)
	}
	if strings.Join(cfg.UnsimulatedGates, ",") != "KubeletInUserNamespace=true" {
		t.Errorf("unsimulated gates %v", cfg.UnsimulatedGates)
	}
	if cfg.NodeIP != "172.18.0.2" || cfg.Kubeconfig != "/etc/kubernetes/kubelet.conf" {
		t.Errorf("node IP %q, kubeconfig %q", cfg.NodeIP, cfg.Kubeconfig)
	}
	if cfg.Kubelet.EvictionHard["memory.available"] != "100Mi" || cfg.Kubelet.EvictionHard["nodefs.available"] != "10%" {
		t.Errorf("evictionHard %v, want the flag's", cfg.Kubelet.EvictionHard)
	}
	if cfg.Kubelet.RuntimeRequestTimeout.Duration != 15*time.Minute {
		t.Errorf("runtimeRequestTimeout %v, want 15m", cfg.Kubelet.RuntimeRequestTimeout.Duration)
	}
	for _, v := range []string{"--version", "--version=raw"} {
		if _, err := Load([]string{"--fail-swap-on", v}, features.NewFeatureGate(), nil); !errors.Is(err, ErrVersion) {
			t.Errorf("Load(%s) = %v, want ErrVersion", v, err)
		}
	}
	// verflag's --version=vX.Y.Z sets the reported version and goes on.
	if _, err := Load([]string{"--version=v1.37.2", "--feature-gates=AllAlpha=true"}, features.NewFeatureGate(), nil); err != nil {
		t.Errorf("Load(--version=v1.37.2): %v, want the daemon to go on", err)
	}
}

// TestEveryKubeletGateStartsTheDaemon: every gate name of kubelet v1.37, set by
// --feature-gates to the value it may take (a locked gate its locked value, another the
// opposite of its default), is accepted, as by the kubelet.
func TestEveryKubeletGateStartsTheDaemon(t *testing.T) {
	var pairs []string
	for _, g := range kubeletref.Gates() {
		v := !g.Default
		if g.LockToDefault {
			v = g.Default
		}
		pairs = append(pairs, fmt.Sprintf("%s=%t", g.Name, v))
	}
	gate := features.NewFeatureGate()
	cfg, err := Load([]string{"--feature-gates=" + strings.Join(pairs, ",")}, gate, nil)
	if err != nil {
		t.Fatalf("Load with every v1.37 gate: %v", err)
	}
	if len(cfg.FeatureGates) != len(pairs) {
		t.Errorf("%d gates in effect, %d set", len(cfg.FeatureGates), len(pairs))
	}
	for _, g := range kubeletref.Gates() {
		want := !g.Default
		if g.LockToDefault {
			want = g.Default
		}
		if gate.Enabled(featuregate.Feature(g.Name)) != want {
			t.Errorf("%s is %t, set to %t", g.Name, !want, want)
		}
	}
}
