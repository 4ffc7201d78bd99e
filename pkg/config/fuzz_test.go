package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/features"
)

// FuzzConfig feeds arbitrary content to the config file decoder (both documents, alone or
// together) and validates what it accepts as Load does. A refused file gets an error naming
// the file, and every problem names its field; a file that decodes and validates has no
// negative duration and no machine quantity that wraps round in int64, and written back
// as a two-document file it decodes to the same configuration. Seeds:
// testdata/fuzz/FuzzConfig (alias bombs, wrong kinds, huge numbers, deep nesting, binary)
// run as regression tests under plain go test.
func FuzzConfig(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "../../configs/minikubelet.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, path := range files {
			if data, err := os.ReadFile(path); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte(kubeletHead + "maxPods: 10\nsyncFrequency: 5s\n"))
	f.Add([]byte(simulatorHead + "machine: {cpu: 2, memory: 1Gi}\npleg: {relistPeriod: 2s}\n"))
	f.Add([]byte(kubeletHead + "---\n" + simulatorHead + "runtime: {faults: [{method: ListPodSandbox, type: hang}]}\n"))
	const path = "/etc/minikubelet/config.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseFile(path, data)
		if err != nil {
			checkNamesFile(t, err, path)
			return
		}
		cfg := effective(file)
		if err := Validate(cfg, features.NewFeatureGate()); err != nil {
			var agg *AggregateError
			if !errors.As(err, &agg) {
				t.Fatalf("validation error %T %q is not an *AggregateError", err, err)
			}
			for _, e := range agg.Errs {
				if s := e.Error(); !strings.HasPrefix(s, "kubeletConfiguration.") && !strings.HasPrefix(s, "simulatorConfiguration.") {
					t.Fatalf("validation error %q does not start with the field's path", s)
				}
			}
			return
		}
		checkNoNegativeDuration(t, reflect.ValueOf(cfg.Kubelet), "kubeletConfiguration")
		checkNoNegativeDuration(t, reflect.ValueOf(cfg.Simulator), "simulatorConfiguration")
		m := cfg.Simulator.Machine
		if m.CPU.MilliValue() <= 0 || m.Memory.Value() <= 0 || m.EphemeralStorage.Value() <= 0 || m.PIDs.Value() <= 0 {
			t.Fatalf("accepted machine %s cpu, %s memory, %s storage, %s pids: an amount the simulator reads as %d, %d, %d, %d",
				m.CPU.String(), m.Memory.String(), m.EphemeralStorage.String(), m.PIDs.String(),
				m.CPU.MilliValue(), m.Memory.Value(), m.EphemeralStorage.Value(), m.PIDs.Value())
		}

		// Written back as a two-document file (as /configz shows it), it decodes the same.
		kd, err := yaml.Marshal(cfg.Kubelet)
		if err != nil {
			t.Fatalf("marshal kubelet document: %v", err)
		}
		sd, err := yaml.Marshal(cfg.Simulator)
		if err != nil {
			t.Fatalf("marshal simulator document: %v", err)
		}
		out := append(append(kd, "---\n"...), sd...)
		back, err := ParseFile(path, out)
		if err != nil {
			t.Fatalf("accepted configuration written back is refused: %v\n%s", err, out)
		}
		if got, want := asJSON(t, effective(back)), asJSON(t, cfg); got != want {
			t.Fatalf("accepted configuration written back decodes differently:\n got %s\nwant %s", got, want)
		}
	})
}

// effective is the configuration Load builds from file alone: each missing document is
// the defaults.
func effective(file *File) *Config {
	cfg := &Config{Kubelet: *NewKubeletConfiguration(), Simulator: *NewSimulatorConfiguration()}
	if file.Kubelet != nil {
		cfg.Kubelet = *file.Kubelet
	}
	if file.Simulator != nil {
		cfg.Simulator = *file.Simulator
	}
	cfg.Kubelet.APIVersion, cfg.Kubelet.Kind = KubeletAPIVersion, KubeletKind
	cfg.Simulator.APIVersion, cfg.Simulator.Kind = SimulatorAPIVersion, SimulatorKind
	cfg.Simulator.NodeName = resolveNodeName("", cfg.Simulator.NodeName)
	cfg.FeatureGates = cfg.Kubelet.FeatureGates
	return cfg
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkNamesFile fails unless err names the file and each of its problems the file too.
func checkNamesFile(t *testing.T, err error, path string) {
	t.Helper()
	var agg *AggregateError
	if !errors.As(err, &agg) {
		if !strings.HasPrefix(err.Error(), "config file "+path+": ") {
			t.Fatalf("error %q does not name the file", err)
		}
		return
	}
	for _, e := range agg.Errs {
		if !strings.HasPrefix(e.Error(), "config file "+path+", document ") {
			t.Fatalf("error %q does not name the file and document", e)
		}
	}
}

var durationType = reflect.TypeOf(metav1.Duration{})

// checkNoNegativeDuration walks v and fails on any negative metav1.Duration.
func checkNoNegativeDuration(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			checkNoNegativeDuration(t, v.Elem(), path)
		}
	case reflect.Struct:
		if v.Type() == durationType {
			if d := v.Interface().(metav1.Duration); d.Duration < 0 {
				t.Fatalf("%s: accepted negative duration %v", path, d.Duration)
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				checkNoNegativeDuration(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			checkNoNegativeDuration(t, v.Index(i), path)
		}
	}
}
