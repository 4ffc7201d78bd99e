package kubelet

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/simtest"
)

var churnCycles = flag.Int("churn.cycles", 0, "pods added and removed by TestChurnLeavesNothingBehind, in batches of 100 (0: 10,000, or 1,000 under the race detector)")

// census counts what the kubelet keeps per pod, in every place that could keep a removed
// pod alive: a count that does not return to zero after the pods are gone is a leak.
func (h *harness) census() map[string]int {
	k := h.k
	workers, queued := k.podWorkers.Len()
	k.podsJSON.mu.Lock()
	kept := len(k.podsJSON.entries)
	k.podsJSON.mu.Unlock()
	seen, files := k.fileSource.Kept()
	return map[string]int{
		"desired pods":             len(k.pods.unsortedPods()),
		"pod workers":              workers,
		"resync queue":             queued,
		"status cache entries":     k.cache.Len(),
		"status cache waiters":     k.cache.NumWaiters(),
		"pod statuses":             k.status.Len(),
		"PLEG records":             k.genericPLEG.Records(),
		"probe workers":            k.prober.Workers(),
		"liveness results":         k.probeResults.liveness.Cached(),
		"readiness results":        k.probeResults.readiness.Cached(),
		"startup results":          k.probeResults.startup.Cached(),
		"queued probe results":     k.probeResults.liveness.Len() + k.probeResults.readiness.Len() + k.probeResults.startup.Len(),
		"container back-offs":      k.runtimeMgr.ContainerBackOff().Len(),
		"kept /pods encodings":     kept,
		"container reasons":        k.reasons.Len(),
		"runtime sandboxes":        len(h.runtimeSandboxes()),
		"runtime containers":       len(h.runtimeContainers()),
		"syncs in flight":          k.podWorkers.SyncsInFlight(),
		"runtime transitions":      h.k.Runtime().Scheduled(),
		"file source first-seen":   seen,
		"file source parsed files": files,
		"config merger pods":       len(k.merger.Pods()),
		"pod cgroups":              podCgroupCount(k),
		"pod allocations":          len(k.alloc.Pods()),
	}
}

// TestChurnLeavesNothingBehind adds and removes pods many times (10,000 by default, 100 at a
// time, with probes and a crash-looping container so that prober workers, probe results and
// back-off entries exist) and then checks that nothing is left for the removed pods in any
// of the kubelet's per-pod state, that the goroutines are those of the start, and that the
// live heap is back to what it was after the first batch.
func TestChurnLeavesNothingBehind(t *testing.T) {
	const batch = 100
	cycles := *churnCycles
	if cycles == 0 {
		cycles = 10000
		if simtest.Race {
			cycles = 1000 // make test runs with -race; .ci/run also runs the full 10,000 without
		}
	}
	rounds := max(cycles/batch, 2)
	h := newHarness(t, "--max-pods=200")
	manifest := func(i int) string {
		extra := "    readinessProbe:\n      tcpSocket: {port: 80}\n      periodSeconds: 1\n" +
			"    livenessProbe:\n      tcpSocket: {port: 80}\n      periodSeconds: 1\n" +
			"  - name: crashy\n    image: busybox\n"
		m := podManifest(fmt.Sprintf("churn-%05d", i), "nginx", extra)
		// the second container exits after a second, so it restarts with a back-off
		return strings.Replace(m, "metadata:\n", "metadata:\n  annotations:\n    minikubelet.io/behavior.crashy: runFor=1s,exitCode=1\n", 1)
	}

	var baseHeap uint64
	var baseGoroutines int
	for r := 0; r < rounds; r++ {
		for i := 0; i < batch; i++ {
			h.write(fmt.Sprintf("churn-%05d.yaml", i), manifest(r*batch+i))
		}
		h.until(60, "the batch running", func() bool { return h.runningContainers() >= batch }, h.describe)
		h.round(5 * time.Second) // probes run, the crashy containers exit and restart
		h.k.PodListItems()       // GET /pods keeps each pod's encoding
		if r == 0 {
			// The state the check below expects gone must exist while the pods run, or the
			// check proves nothing.
			c := h.census()
			for _, what := range []string{"pod cgroups", "pod allocations", "pod workers", "status cache entries", "pod statuses", "PLEG records", "probe workers", "readiness results", "container back-offs", "file source first-seen", "runtime containers", "kept /pods encodings"} {
				if c[what] < batch {
					t.Fatalf("with %d pods running: %s = %d, want at least %d (%v)", batch, what, c[what], batch, c)
				}
			}
		}
		for i := 0; i < batch; i++ {
			h.remove(fmt.Sprintf("churn-%05d.yaml", i))
		}
		h.until(120, "the batch gone", func() bool {
			c := h.census()
			return c["desired pods"] == 0 && c["pod workers"] == 0 && c["runtime containers"] == 0 && c["runtime sandboxes"] == 0
		}, h.describe)
		if r == 0 {
			baseHeap, baseGoroutines = liveHeap(), runtime.NumGoroutine()
		}
	}
	// Back-off entries are dropped by housekeeping once quiet for twice the 5m cap, as the
	// kubelet's backOff.GC does.
	h.round(11 * time.Minute)

	for what, n := range h.census() {
		if n != 0 {
			t.Errorf("after %d pods added and removed: %s = %d, want 0", rounds*batch, what, n)
		}
	}
	if g := runtime.NumGoroutine(); g > baseGoroutines {
		t.Errorf("goroutines: %d after %d pods, %d after the first %d", g, rounds*batch, baseGoroutines, batch)
	}
	// The heap may not return byte for byte (maps keep their buckets), but it must not grow
	// with the number of pods that came and went.
	if heap := liveHeap(); heap > baseHeap+baseHeap/4+1<<20 {
		t.Errorf("live heap %d KiB after %d pods, %d KiB after the first %d", heap>>10, rounds*batch, baseHeap>>10, batch)
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// podCgroupCount is how many pod cgroups the node's hierarchy holds.
func podCgroupCount(k *Kubelet) int {
	n := 0
	for _, parent := range qosParents {
		for _, name := range k.podCgroups.children(parent, nil) {
			if strings.HasPrefix(name, "pod") {
				n++
			}
		}
	}
	return n
}
