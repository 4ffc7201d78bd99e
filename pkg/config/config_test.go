package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/features"
)

// TestConfigJSONRoundTrip checks that the effective configuration serialises (for
// /configz) with the documented keys and reads back unchanged, including the verbatim
// unsimulated fields of a real node's file.
func TestConfigJSONRoundTrip(t *testing.T) {
	// The node's file serves the debugging handlers on 0.0.0.0, as upstream's do.
	cfg, err := Load([]string{"--config=" + filepath.Join("testdata", "production-node.yaml"), "--allow-remote-debugging"}, features.NewFeatureGate(), nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"kubeletConfiguration":`, `"simulatorConfiguration":`, `"featureGates":`, `"configFile":`, `"unsimulatedFields":`,
		`"tlsCipherSuites":["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("JSON lacks %s:\n%s", key, data)
		}
	}
	var back Config
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(&back)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(data) {
		t.Errorf("round trip changed the JSON:\n%s\n%s", data, again)
	}
	if !reflect.DeepEqual(back.FeatureGates, cfg.FeatureGates) {
		t.Errorf("featureGates %v, want %v", back.FeatureGates, cfg.FeatureGates)
	}
}

// TestProductionConfigEffectiveValues pins what the simulator takes from a tuned node's file.
func TestProductionConfigEffectiveValues(t *testing.T) {
	path := filepath.Join("testdata", "production-node.yaml")
	abs, _ := filepath.Abs(path)
	gate := features.NewFeatureGate()
	cfg, err := Load([]string{"--config=" + path, "--allow-remote-debugging"}, gate, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, sc := cfg.Kubelet, cfg.Simulator
	if kc.MaxPods != 58 || kc.Address != "0.0.0.0" || kc.ReadOnlyPort != 0 || !*kc.EnableDebuggingHandlers ||
		kc.NodeStatusReportFrequency.Duration != kc.NodeStatusUpdateFrequency.Duration ||
		kc.StaticPodPath != filepath.Join(filepath.Dir(abs), "manifests") || kc.EvictionHard["pid.available"] != "5%" {
		t.Errorf("kubelet values: %+v", kc)
	}
	if sc.NodeName != "ip-10-0-1-23.eu-west-1.compute.internal" || sc.Machine.CPU.String() != "8" || sc.Machine.Memory.String() != "32Gi" {
		t.Errorf("simulator values: %+v", sc)
	}
	if !gate.Enabled(features.EventedPLEG) || !cfg.GracefulShutdownEnabled(gate) {
		t.Error("the file's gates were not applied")
	}
}

// TestMetricsPrefix: the kubelet's names by default; a file or the flag may change the prefix
// or drop it with an explicit empty value.
func TestMetricsPrefix(t *testing.T) {
	dir := t.TempDir()
	file := func(body string) string {
		p := filepath.Join(dir, fmt.Sprintf("c%d.yaml", len(body)))
		if err := os.WriteFile(p, []byte("apiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"default", nil, "kubelet_"},
		{"file", []string{"--config=" + file("metricsPrefix: sim_\n")}, "sim_"},
		{"file, explicitly empty", []string{"--config=" + file("metricsPrefix: \"\"\n")}, ""},
		{"file without the field", []string{"--config=" + file("nodeName: n1\n")}, "kubelet_"},
		{"flag, explicitly empty", []string{"--metrics-prefix="}, ""},
		{"flag wins over file", []string{"--config=" + file("metricsPrefix: sim_\n"), "--metrics-prefix=x_"}, "x_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(append([]string{"--hostname-override=n"}, tt.args...), features.NewFeatureGate(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Simulator.MetricsPrefix; got != tt.want {
				t.Errorf("metricsPrefix = %q, want %q", got, tt.want)
			}
		})
	}
}
