package config

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/features"
)

// TestShippedConfigLoads keeps configs/minikubelet.yaml valid and free of unsimulated
// fields, since `make run` uses it.
func TestShippedConfigLoads(t *testing.T) {
	cfg, err := Load([]string{"--config=" + filepath.Join("..", "..", "configs", "minikubelet.yaml")}, features.NewFeatureGate(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.UnsimulatedFields) != 0 {
		t.Errorf("the shipped config sets unsimulated fields: %v", cfg.UnsimulatedFields)
	}
	if cfg.Simulator.NodeName != "minikubelet-node" {
		t.Errorf("the simulator document was not loaded: nodeName %q", cfg.Simulator.NodeName)
	}
	if fi, err := os.Stat(cfg.Kubelet.StaticPodPath); err != nil || !fi.IsDir() {
		t.Errorf("staticPodPath %q is not the shipped pods directory: %v", cfg.Kubelet.StaticPodPath, err)
	}
}

// TestShippedPodsAreValid decodes every example manifest strictly as a v1.Pod.
func TestShippedPodsAreValid(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "configs", "pods", "*.yaml"))
	if err != nil || len(paths) < 2 {
		t.Fatalf("found %d example pods (%v), want at least 2", len(paths), err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var pod v1.Pod
			if err := yaml.UnmarshalStrict(data, &pod); err != nil {
				t.Fatalf("not a valid Pod: %v", err)
			}
			if pod.Name == "" || len(pod.Spec.Containers) == 0 {
				t.Errorf("pod %q has no name or containers", pod.Name)
			}
		})
	}
}
