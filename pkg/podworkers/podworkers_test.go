package podworkers

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
)

func TestStateMachineSyncTerminatingTerminated(t *testing.T) {
	e := newEnv(t, true)
	pod := testPod("life")
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	if e.step(pod.UID) {
		t.Fatal("synced before the cache was ever filled: a worker waits for the first relist")
	}
	e.relist()
	if !e.step(pod.UID) {
		t.Fatal("no sync after the relist")
	}
	if e.p.IsPodTerminationRequested(pod.UID) || !e.p.CouldHaveRunningContainers(pod.UID) {
		t.Fatal("a syncing pod reads as terminating or stopped")
	}
	if e.step(pod.UID) {
		t.Fatal("a second sync ran without an update")
	}

	// SyncPod reports the pod done: terminating and terminated follow without new updates,
	// each after a fresher cache.
	e.h.setTerminal(pod.UID)
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodSync})
	e.relist()
	e.step(pod.UID)
	if !e.p.IsPodTerminationRequested(pod.UID) || !e.p.ShouldPodContainersBeTerminating(pod.UID) {
		t.Fatal("pod not terminating after SyncPod reported it terminal")
	}
	if e.step(pod.UID) {
		t.Fatal("terminating ran on a cache no newer than the last sync")
	}
	e.relist()
	e.step(pod.UID)
	if !e.p.IsPodKnownTerminated(pod.UID) || e.p.CouldHaveRunningContainers(pod.UID) {
		t.Fatal("pod not terminated after SyncTerminatingPod succeeded")
	}
	if e.p.ShouldPodContentBeRemoved(pod.UID) {
		t.Fatal("content of a pod still in config must stay")
	}
	e.relist()
	e.step(pod.UID)
	if !e.p.ShouldPodBeFinished(pod.UID) {
		t.Fatal("pod not finished after SyncTerminatedPod")
	}
	want := "[sync sync terminating terminated]"
	if got := fmt.Sprint(e.h.kinds()); got != want {
		t.Fatalf("calls %s, want %s", got, want)
	}
	if c := e.h.list()[2]; c.grace != 30 {
		t.Errorf("terminating grace = %d, want the pod's 30", c.grace)
	}

	// a finished pod ignores updates until it is forgotten
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodUpdate})
	e.relist()
	if e.step(pod.UID) {
		t.Fatal("a finished pod synced again")
	}
	if got := e.p.SyncKnownPods([]*v1.Pod{pod}); got[pod.UID].State != TerminatedPodState {
		t.Fatalf("SyncKnownPods = %+v, want the terminated pod kept while desired", got)
	}
	if got := e.p.SyncKnownPods(nil); len(got) != 0 {
		t.Fatalf("SyncKnownPods(nil) = %+v, want the finished pod forgotten", got)
	}
	if !e.p.ShouldPodContentBeRemoved(pod.UID) || e.p.CouldHaveRunningContainers(pod.UID) {
		t.Fatal("a forgotten pod must read as removable and not running")
	}
}

func TestUpdatesCoalesce(t *testing.T) {
	e := newEnv(t, true)
	var pods []*v1.Pod
	for i := 1; i <= 3; i++ {
		p := testPod("co")
		p.Labels = map[string]string{"version": fmt.Sprint(i)}
		pods = append(pods, p)
		typ := kubetypes.SyncPodUpdate
		if i == 1 {
			typ = kubetypes.SyncPodCreate
		}
		e.p.UpdatePod(UpdatePodOptions{Pod: p, UpdateType: typ})
		e.clk.Step(time.Second)
	}
	e.relist()
	if n := e.p.StepAll(e.ctx); n != 1 {
		t.Fatalf("StepAll ran %d syncs, want 1", n)
	}
	calls := e.h.list()
	if len(calls) != 1 || calls[0].pod != pods[2] {
		t.Fatalf("calls %+v, want one sync of the latest pod", calls)
	}
	// the duration counts from the oldest coalesced update: 3 updates 1s apart + relist
	if sum := histogramSum(t, e, "kubelet_pod_worker_duration_seconds", "update"); sum != 4 {
		t.Errorf("pod_worker_duration_seconds sum = %v, want 4 (from the first update)", sum)
	}
}

func TestUpdatesCoalesceWhileSyncing(t *testing.T) {
	e := newEnv(t, false)
	e.h.blockKind, e.h.block, e.h.entered = "sync", make(chan struct{}), make(chan call, 10)
	e.cache.UpdateTime(e.clk.Now())
	var latest *v1.Pod
	for i := 1; i <= 3; i++ {
		latest = testPod("busy")
		latest.Labels = map[string]string{"version": fmt.Sprint(i)}
		e.p.UpdatePod(UpdatePodOptions{Pod: latest, UpdateType: kubetypes.SyncPodUpdate})
		if i == 1 {
			<-e.h.entered // the first sync is running, the next two arrive meanwhile
		}
	}
	e.h.block <- struct{}{}
	// the second sync waits for a relist newer than the first
	waitFor(t, "the worker to wait for the cache", func() bool { return e.cache.NumWaiters() == 1 })
	e.relist()
	second := <-e.h.entered
	e.h.block <- struct{}{}
	waitFor(t, "the worker to go idle", func() bool { return e.p.idle(latest.UID) })
	calls := e.h.list()
	if len(calls) != 2 || second.pod != latest {
		t.Fatalf("%d syncs (second with version %s), want 2 with the latest pod last", len(calls), second.pod.Labels["version"])
	}
}

func TestPendingKillIsNotOverwritten(t *testing.T) {
	e := newEnv(t, true)
	pod := testPod("kill")
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	e.step(pod.UID)

	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: int64p(5)}})
	newer := testPod("kill")
	newer.Labels = map[string]string{"v": "2"}
	e.p.UpdatePod(UpdatePodOptions{Pod: newer, UpdateType: kubetypes.SyncPodUpdate})
	e.relist()
	e.step(pod.UID)
	last := e.h.list()[1]
	if last.kind != "terminating" || last.grace != 5 || last.pod != newer {
		t.Fatalf("after kill + update: %+v, want terminating with grace 5 and the newest spec", last)
	}
}

func TestGracePeriodOnlyShrinks(t *testing.T) {
	e := newEnv(t, true)
	pod := testPod("grace")
	e.h.setErr("terminating", errors.New("containers still stopping")) // stay terminating
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	e.step(pod.UID)

	steps := []struct {
		override *int64
		want     int64
	}{
		{nil, 30},        // the pod's terminationGracePeriodSeconds
		{int64p(60), 30}, // longer: ignored
		{int64p(10), 10}, // shorter: taken
		{int64p(20), 10}, // longer again: ignored
		{nil, 10},        // a plain kill keeps the current one
		{int64p(0), 1},   // never below 1s
		{int64p(-5), 1},  // nonsense is clamped too
	}
	for i, s := range steps {
		var opts *KillPodOptions
		if s.override != nil {
			opts = &KillPodOptions{PodTerminationGracePeriodSecondsOverride: s.override}
		}
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: opts})
		e.relist()
		if !e.step(pod.UID) {
			t.Fatalf("step %d: no sync", i)
		}
		calls := e.h.list()
		if c := calls[len(calls)-1]; c.kind != "terminating" || c.grace != s.want {
			t.Fatalf("step %d: %s with grace %d, want terminating with %d", i, c.kind, c.grace, s.want)
		}
	}
}

func TestShorterGracePeriodCancelsTheRunningKill(t *testing.T) {
	e := newEnv(t, false)
	pod := testPod("cancel")
	e.cache.UpdateTime(e.clk.Now())
	e.h.blockKind, e.h.block, e.h.entered = "terminating", make(chan struct{}), make(chan call, 10)
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill})
	if c := <-e.h.entered; c.grace != 30 {
		t.Fatalf("first kill grace %d, want 30", c.grace)
	}
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: int64p(3)}})
	waitFor(t, "the retry to wait for the cache", func() bool { return e.cache.NumWaiters() == 1 })
	e.relist()
	if c := <-e.h.entered; c.grace != 3 {
		t.Fatalf("retried kill grace %d, want 3", c.grace)
	}
	e.h.block <- struct{}{}
}

func TestRequeueDelays(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		min, max time.Duration
	}{
		{"success resyncs after syncFrequency with jitter", nil, time.Minute, 90 * time.Second},
		{"error retries after the back-off with jitter", errors.New("boom"), 10 * time.Second, 15 * time.Second},
		// the sync runs at epoch+1s (after one relist)
		{"a back-off resyncs when it ends", &BackOffError{Until: epoch.Add(26 * time.Second), Err: errors.New("CrashLoopBackOff")}, 25 * time.Second, 25*time.Second + 1},
		{"a back-off longer than syncFrequency resyncs after syncFrequency", &BackOffError{Until: epoch.Add(6 * time.Minute), Err: errors.New("CrashLoopBackOff")}, time.Minute, time.Minute + 1},
		{"a back-off already over resyncs at once", &BackOffError{Until: epoch, Err: errors.New("ImagePullBackOff")}, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, true)
			e.h.setErr("sync", tc.err)
			pod := testPod("rq")
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
			e.relist()
			e.step(pod.UID)
			synced := e.clk.Now()
			next, ok := e.p.NextRequeue()
			if !ok || next.Before(synced.Add(tc.min)) || !next.Before(synced.Add(tc.max)) {
				t.Fatalf("requeue at +%v, want in [%v, %v)", next.Sub(synced), tc.min, tc.max)
			}
			if got := e.p.PodsToSync(next.Add(-time.Millisecond)); len(got) != 0 {
				t.Fatalf("PodsToSync before the due time = %v", got)
			}
			if got := e.p.PodsToSync(next); len(got) != 1 || got[0] != pod.UID {
				t.Fatalf("PodsToSync at the due time = %v", got)
			}
			if got := e.p.PodsToSync(next.Add(time.Hour)); len(got) != 0 {
				t.Fatalf("a due pod is handed out twice: %v", got)
			}
		})
	}
}

func TestJitterIsReproducible(t *testing.T) {
	times := func() []time.Duration {
		e := newEnv(t, true)
		var out []time.Duration
		for i := 0; i < 5; i++ {
			pod := testPod(fmt.Sprint("j", i))
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
			e.relist()
			e.step(pod.UID)
			next, _ := e.p.NextRequeue()
			e.p.PodsToSync(next)
			out = append(out, next.Sub(e.clk.Now()))
		}
		return out
	}
	a, b := times(), times()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same seed, different requeues: %v vs %v", a, b)
	}
}

func TestOrphansAreTerminated(t *testing.T) {
	t.Run("runtime pod", func(t *testing.T) {
		e := newEnv(t, true)
		rp := &container.Pod{ID: "uid-orphan", Name: "orphan", Namespace: "default", Containers: []*container.Container{{Name: "app", State: container.ContainerStateRunning}}}
		e.p.UpdatePod(UpdatePodOptions{RunningPod: rp, UpdateType: kubetypes.SyncPodSync})
		if len(e.p.PendingPods()) != 0 {
			t.Fatal("a runtime pod accepted a non-kill update")
		}
		e.p.UpdatePod(UpdatePodOptions{RunningPod: rp, UpdateType: kubetypes.SyncPodKill})
		if !e.step(rp.ID) {
			t.Fatal("runtime pod kill did not run")
		}
		if got := fmt.Sprint(e.h.kinds()); got != "[runtime]" {
			t.Fatalf("calls %s, want [runtime]", got)
		}
		if _, known := e.p.State(rp.ID); known {
			t.Fatal("a stopped runtime pod is still tracked")
		}
	})
	t.Run("pod gone from config", func(t *testing.T) {
		e := newEnv(t, true)
		pod := testPod("gone")
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
		e.relist()
		e.step(pod.UID)
		got := e.p.SyncKnownPods(nil)
		if w := got[pod.UID]; !w.Orphan || w.State != TerminatingPodState || !w.HasConfig {
			t.Fatalf("SyncKnownPods = %+v, want an orphan that is terminating", w)
		}
		e.relist()
		e.step(pod.UID)
		e.relist()
		e.step(pod.UID)
		if !e.p.ShouldPodContentBeRemoved(pod.UID) {
			t.Fatal("a deleted, stopped pod must be removable")
		}
		if got := fmt.Sprint(e.h.kinds()); got != "[sync terminating terminated]" {
			t.Fatalf("calls %s", got)
		}
	})
}

func TestStaticPodsWithTheSameNameRunOneAtATime(t *testing.T) {
	e := newEnv(t, true)
	old, newer := staticPod("etcd", "uid-old"), staticPod("etcd", "uid-new")
	e.p.UpdatePod(UpdatePodOptions{Pod: old, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	e.step(old.UID)
	e.p.UpdatePod(UpdatePodOptions{Pod: newer, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	if e.step(newer.UID) {
		t.Fatal("the new static pod started while the old one with its name runs")
	}
	e.p.UpdatePod(UpdatePodOptions{Pod: old, UpdateType: kubetypes.SyncPodKill})
	for i := 0; i < 2; i++ { // terminating, terminated
		e.relist()
		e.step(old.UID)
	}
	e.relist()
	if !e.step(newer.UID) {
		t.Fatal("the new static pod did not start after the old one terminated")
	}
	calls := e.h.list()
	if c := calls[len(calls)-1]; c.kind != "sync" || c.uid != newer.UID {
		t.Fatalf("last call %+v, want the new pod's sync", c)
	}
}

func TestTerminalPodAfterRestartIsKnownTerminated(t *testing.T) {
	e := newEnv(t, true)
	pod := testPod("done")
	pod.Status.Phase = v1.PodSucceeded
	e.cache.Set(pod.UID, &container.PodStatus{ID: pod.UID, SandboxStatuses: []*cri.PodSandboxStatus{{ID: "sb", State: cri.SandboxNotReady}}}, nil, e.clk.Now())
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	if !e.p.IsPodKnownTerminated(pod.UID) {
		t.Fatal("a terminal pod with nothing running must count as terminated at once")
	}
	e.relist()
	e.step(pod.UID)
	if got := fmt.Sprint(e.h.kinds()); got != "[terminated]" {
		t.Fatalf("calls %s, want only the terminated cleanup", got)
	}
}

func TestDeletionTimestampStartsTermination(t *testing.T) {
	e := newEnv(t, true)
	pod := testPod("del")
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	e.step(pod.UID)
	deleted := pod.DeepCopy()
	now := metav1.NewTime(e.clk.Now())
	deleted.DeletionTimestamp = &now
	deleted.DeletionGracePeriodSeconds = int64p(12)
	e.p.UpdatePod(UpdatePodOptions{Pod: deleted, UpdateType: kubetypes.SyncPodUpdate})
	e.relist()
	e.step(pod.UID)
	if c := e.h.list()[1]; c.kind != "terminating" || c.grace != 12 {
		t.Fatalf("%+v, want terminating with the deletion grace period 12", c)
	}
}

func TestDaemonWorkersExitWithoutLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	e := newEnv(t, false)
	const n = 20
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		pod := testPod(fmt.Sprint("w", i))
		e.h.setTerminal(pod.UID) // each pod runs to completion on its own
		pods = append(pods, pod)
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	}
	if got := e.p.RunningWorkers(); got != n {
		t.Fatalf("%d workers, want one per pod", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.p.RunningWorkers() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers still running", e.p.RunningWorkers())
		}
		e.relist()
		time.Sleep(time.Millisecond)
	}
	for _, pod := range pods {
		if !e.p.ShouldPodBeFinished(pod.UID) {
			t.Fatalf("pod %s not finished though its worker exited", pod.Name)
		}
	}
	// a worker blocked on the cache (its second sync waits for a relist) stops with Stop
	blocked := testPod("blocked")
	e.p.UpdatePod(UpdatePodOptions{Pod: blocked, UpdateType: kubetypes.SyncPodCreate})
	waitFor(t, "the first sync", func() bool { return e.p.idle(blocked.UID) })
	e.p.UpdatePod(UpdatePodOptions{Pod: blocked, UpdateType: kubetypes.SyncPodSync})
	waitFor(t, "the worker to wait for the cache", func() bool { return e.cache.NumWaiters() == 1 })
	e.p.Stop()
	e.p.Stop() // idempotent
	if e.p.RunningWorkers() != 0 {
		t.Fatal("Stop returned with workers running")
	}
	e.p.UpdatePod(UpdatePodOptions{Pod: testPod("late"), UpdateType: kubetypes.SyncPodCreate})
	if e.p.RunningWorkers() != 0 {
		t.Fatal("an update after Stop started a worker")
	}
	waitFor(t, "goroutines to return to the baseline", func() bool { return runtime.NumGoroutine() <= before })
}

func TestNewValidates(t *testing.T) {
	e := newEnv(t, true)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no handler", Config{Cache: e.cache, Clock: e.clk}, "Handler is required"},
		{"no cache", Config{Handler: e.h, Clock: e.clk}, "Cache is required"},
		{"no clock", Config{Handler: e.h, Cache: e.cache}, "Clock is required"},
		{"negative resync", Config{Handler: e.h, Cache: e.cache, Clock: e.clk, ResyncInterval: -time.Second}, "ResyncInterval must not be negative, got -1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New() error %v, want %q", err, tc.want)
			}
		})
	}
}

func histogramSum(t *testing.T, e *env, name, op string) float64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelValue(m, "operation_type") == op {
				return m.GetHistogram().GetSampleSum()
			}
		}
	}
	t.Fatalf("no %s{operation_type=%q}", name, op)
	return 0
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
