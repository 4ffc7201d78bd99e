package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/features"
)

// TestEmulatedReleases runs the same pod on a node of each release: the version the node
// reports, the features it declares (NodeDeclaredFeatures: none before 1.35, alpha and
// off in 1.35, on since 1.36), how soon the pod runs (a pod worker asks for its pod's
// relist since 1.36, PLEGOnDemandRelist; before, each step waits for the periodic
// relist), the User-Agent of its probes and hooks, and which EventedPLEG design the gate
// selects (a PLEG of its own until 1.37), and whether the per-pod relist's metric is served.
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
			// The per-pod relist's histogram is served from 1.36 on, as its pod relists.
			mfs, err := h.k.Registry().Gather()
			if err != nil {
				t.Fatal(err)
			}
			served := false
			for _, mf := range mfs {
				served = served || strings.HasSuffix(mf.GetName(), "pleg_pod_relist_duration_seconds")
			}
			if served != tt.onDemand {
				t.Errorf("pleg_pod_relist_duration_seconds served %t, want %t", served, tt.onDemand)
			}

			// The release's major.minor in what the kubelet sends: nc prints the requests of
			// the readiness probe and of the other container's postStart hook.
			h.write("ua.yaml", `apiVersion: v1
kind: Pod
metadata: {name: ua}
spec:
  containers:
  - name: main
    image: busybox
    command: [sh, -c, "printf 'HTTP/1.1 200 OK\\r\\nContent-Length: 0\\r\\n\\r\\n' | nc -lk -p 8080"]
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
      periodSeconds: 1
  - name: hooked
    image: busybox
    command: [sleep, infinity]
    lifecycle:
      postStart:
        httpGet: {path: /hook, port: 8080}
`)
			probe, hook := "GET /ready HTTP/1.1", "GET /hook HTTP/1.1"
			sent := func() string {
				p := h.pod("ua-" + testNode)
				if p == nil {
					return ""
				}
				for _, cs := range p.Status.ContainerStatuses {
					if lines, err := h.k.Runtime().ContainerLog(strings.TrimPrefix(cs.ContainerID, "fake://"), 0, 0); cs.Name == "main" && err == nil {
						var b strings.Builder
						for _, l := range lines {
							b.WriteString(l.Text + "\n")
						}
						return b.String()
					}
				}
				return ""
			}
			h.until(30, "a probe and a hook sent", func() bool {
				return strings.Contains(sent(), probe) && strings.Contains(sent(), hook)
			}, func() string { return h.describe() + "\nsent:\n" + sent() })
			for _, want := range []string{"User-Agent: kube-probe/" + tt.release, "User-Agent: kube-lifecycle/" + tt.release} {
				if !strings.Contains(sent(), want) {
					t.Errorf("no %q in what the kubelet sent:\n%s", want, sent())
				}
			}

			evented := newHarness(t, "--emulated-version="+tt.release, "--feature-gates=EventedPLEG=true")
			if got := evented.k.LegacyEventedPLEG() != nil; got != tt.legacy {
				t.Errorf("EventedPLEG on: the pre-1.37 design %t, want %t", got, tt.legacy)
			}
			// No release's cache answers a pod it does not hold before its global timestamp
			// is newer (only v1.30's did, the kubelet's internal LegacyEventedPLEG option).
			if _, fresh, _ := evented.k.cache.GetIfNewerThan(types.UID("not-a-pod"), evented.clk.Now()); fresh {
				t.Error("the status cache answered an unknown pod at once")
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

// TestNewRefusesAGateOfAnotherRelease: the gate decides what a release's gates are, so a
// configuration built in code that names one release and a gate emulating another, or a
// release the simulator does not emulate, is refused rather than run as the newest.
func TestNewRefusesAGateOfAnotherRelease(t *testing.T) {
	cfg, _ := loadConfig(t, t.TempDir(), "--emulated-version=1.35")
	for _, tt := range []struct {
		name    string
		version string
		want    string
	}{
		{"a gate of 1.37 for a node of 1.35", "1.35", "the feature gate emulates 1.37 but the node is kubelet 1.35"},
		{"a release not emulated", "1.33", `simulatorConfiguration.emulatedVersion "1.33": the simulator emulates the kubelet releases`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := *cfg
			c.Simulator.EmulatedVersion = tt.version
			_, err := New(Config{Config: &c, Gate: features.NewFeatureGate(), Clock: clocktesting.NewFakeClock(epoch)})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
