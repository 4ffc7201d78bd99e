package kuberuntime

import (
	"testing"
)

// BenchmarkSyncPodSteadyState measures a sync of a running pod with nothing to do, the
// common case of the resync tick.
func BenchmarkSyncPodSteadyState(b *testing.B) {
	h := newHarness(b, true)
	pod := newPod("bench", withInit("setup", false), withInit("proxy", true), withContainers("a", "b"))
	for i := 0; i < 4; i++ {
		h.sync(pod)
		h.step(DefaultContainerBackOff) // let the init container finish
	}
	status := h.status(pod)
	if r := h.m.SyncPod(h.ctx, pod, status, false); len(r.SyncResults) != 0 {
		b.Fatalf("steady state still acts: %+v", r.SyncResults)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.m.SyncPod(h.ctx, pod, status, false)
	}
}
