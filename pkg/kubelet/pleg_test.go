package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestPodRelistLatency: v1.37's on-demand pod relists, with the generic relist slowed to
// 1m so that only they can explain a fast reaction. A sync that changed the runtime has its
// pod relisted at once (the post-sync relist), so a pod starts in seconds; with the
// EventedPLEG gate a container exit is relisted at once too, while without it the exit waits
// for the relist. The v1.30 design (legacy) had neither: the start waits for the relist too.
func TestPodRelistLatency(t *testing.T) {
	const job = `apiVersion: v1
kind: Pod
metadata:
  name: job
  annotations: {minikubelet.io/behavior.main: "runFor=5s,exitCode=0"}
spec:
  restartPolicy: Never
  containers: [{name: main, image: busybox, command: [sleep, infinity]}]
`
	tests := []struct {
		name   string
		flags  []string
		legacy bool
		// toRunning bounds the time from the manifest to Running (0: not checked, the pod may
		// go from Pending to Succeeded); doneMin and doneMax bound the time from the manifest
		// to Succeeded (the container runs for 5s).
		toRunning        time.Duration
		doneMin, doneMax time.Duration
	}{
		{"generic: post-sync relist, exit at the relist", nil, false, 10 * time.Second, time.Minute - time.Second, time.Minute + 10*time.Second},
		{"evented: post-sync relist, exit relisted at once", []string{"--feature-gates=EventedPLEG=true"}, false, 10 * time.Second, 5 * time.Second, 10 * time.Second},
		{"legacy generic: the start waits for the relist too", nil, true, 0, time.Minute - time.Second, time.Minute + 10*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, gate := loadConfig(t, dir, append(tt.flags, "--relist-period=1m")...)
			h := newHarnessWithConfig(t, dir, cfg, gate, func(c *Config) { c.LegacyEventedPLEG = tt.legacy })
			h.round(time.Second) // the first relist: an empty node
			start := h.clk.Now()
			h.write("job.yaml", job)
			// phaseAt steps 100ms at a time until the job is in phase p and returns when,
			// from the manifest; it fails after limit.
			phaseAt := func(p v1.PodPhase, limit time.Duration) time.Duration {
				t.Helper()
				for h.clk.Now().Sub(start) <= limit {
					if h.phase("job-"+testNode) == p {
						return h.clk.Now().Sub(start)
					}
					h.round(100 * time.Millisecond)
				}
				t.Fatalf("job not %s within %v: %s", p, limit, h.describe())
				return 0
			}
			if tt.toRunning > 0 {
				phaseAt(v1.PodRunning, tt.toRunning)
			}
			if d := phaseAt(v1.PodSucceeded, tt.doneMax); d < tt.doneMin {
				t.Fatalf("Succeeded %v after the manifest, want at least %v", d, tt.doneMin)
			}
		})
	}
}
