package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestEmulatedReleases runs the same pod on a node of each release: the version the node
// reports, the features it declares (NodeDeclaredFeatures: none before 1.35, alpha and
// off in 1.35, on since 1.36), how soon the pod runs (a pod worker asks for its pod's
// relist since 1.36, PLEGOnDemandRelist; before, each step waits for the periodic
// relist), and which EventedPLEG design the gate selects (a PLEG of its own until 1.37).
func TestEmulatedReleases(t *testing.T) {
	tests := []struct {
		release  string
		kubelet  string
		declares bool
		onDemand bool
		legacy   bool // the EventedPLEG gate on selects the pre-1.37 design
	}{
		{"1.34", "v1.34.4", false, false, true},
		{"1.35", "v1.35.4", false, false, true},
		{"1.36", "v1.36.3", true, true, true},
		{"1.37", "v1.37.2", true, true, false},
	}
	started := map[string]time.Duration{}
	for _, tt := range tests {
		t.Run(tt.release, func(t *testing.T) {
			h := newHarness(t, "--emulated-version="+tt.release)
			start := h.clk.Now()
			h.write("web.yaml", podManifest("web", "busybox", sleeper))
			name := "web-" + testNode
			for i := 0; i < 200 && h.phase(name) != v1.PodRunning; i++ {
				h.round(100 * time.Millisecond)
			}
			if h.phase(name) != v1.PodRunning {
				t.Fatalf("not Running after 20 s: %s", h.describe())
			}
			started[tt.release] = h.clk.Since(start)
			node := h.k.NodeStatus().GetNode()
			if got := node.Status.NodeInfo.KubeletVersion; got != tt.kubelet {
				t.Errorf("kubeletVersion = %q, want %q", got, tt.kubelet)
			}
			if got := len(node.Status.DeclaredFeatures) > 0; got != tt.declares {
				t.Errorf("declared features %v; want some: %t", node.Status.DeclaredFeatures, tt.declares)
			}

			evented := newHarness(t, "--emulated-version="+tt.release, "--feature-gates=EventedPLEG=true")
			if got := evented.k.LegacyEventedPLEG() != nil; got != tt.legacy {
				t.Errorf("EventedPLEG on: the pre-1.37 design %t, want %t", got, tt.legacy)
			}
			// Each design, with or without pod relists, runs the pod (the older one waits
			// for its cache's global timestamp, bumped every 5 s).
			evented.write("web.yaml", podManifest("web", "busybox", sleeper))
			evented.until(30, "the pod Running with the EventedPLEG", func() bool { return evented.phase(name) == v1.PodRunning }, evented.describe)
		})
	}
	// The same pod, the same seed: only the releases' pod relists differ.
	t.Logf("Running after: %v", started)
	for _, tt := range tests {
		if on, off := started["1.37"], started[tt.release]; tt.onDemand && off != on || !tt.onDemand && off <= on {
			t.Errorf("Running after %v at %s and %v at 1.37; with pod relists on demand %t", off, tt.release, on, tt.onDemand)
		}
	}
}
