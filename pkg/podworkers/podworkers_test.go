package podworkers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/task"
)

func TestStateMachineSyncTerminatingTerminated(t *testing.T) {
	e := newEnv(t)
	pod := testPod("life")
	if e.due() {
		t.Fatal("pod workers with no pod are due")
	}
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	if !e.due() {
		t.Fatal("an update does not make the pod workers due")
	}
	if calls := e.step(); len(calls) != 0 {
		t.Fatalf("synced before the cache was ever filled (%v): a worker waits for the first relist", kindsOf(calls))
	}
	if e.due() || e.cache.NumWaiters() != 1 {
		t.Fatalf("due=%t waiters=%d: a worker waiting for the cache must be idle with a cache notification registered", e.due(), e.cache.NumWaiters())
	}
	e.relist()
	if calls := e.step(); len(calls) != 1 || calls[0].kind != "sync" || calls[0].updateType != kubetypes.SyncPodCreate {
		t.Fatalf("calls after the relist %+v, want one create sync", calls)
	}
	if e.p.IsPodTerminationRequested(pod.UID) || !e.p.CouldHaveRunningContainers(pod.UID) {
		t.Fatal("a syncing pod reads as terminating or stopped")
	}
	if e.due() {
		t.Fatal("the workers are still due after the only update was synced")
	}

	// SyncPod reports the pod done: terminating and terminated follow without new updates,
	// each after a fresher cache.
	e.h.setTerminal(pod.UID)
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodSync})
	e.relist()
	e.step()
	if !e.p.IsPodTerminationRequested(pod.UID) || !e.p.ShouldPodContainersBeTerminating(pod.UID) {
		t.Fatal("pod not terminating after SyncPod reported it terminal")
	}
	if state, _ := e.p.State(pod.UID); state != TerminatingPodState {
		t.Fatalf("State = %v, want terminating", state)
	}
	if calls := e.step(); len(calls) != 0 {
		t.Fatal("terminating ran on a cache no newer than the last sync")
	}
	e.relist()
	e.step()
	if !e.p.IsPodKnownTerminated(pod.UID) || e.p.CouldHaveRunningContainers(pod.UID) {
		t.Fatal("pod not terminated after SyncTerminatingPod succeeded")
	}
	if e.p.ShouldPodContentBeRemoved(pod.UID) {
		t.Fatal("content of a pod still in config must stay")
	}
	e.relist()
	e.step()
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
	if calls := e.step(); len(calls) != 0 {
		t.Fatal("a finished pod synced again")
	}
	if got := e.p.SyncKnownPods(map[types.UID]bool{pod.UID: true}); got[pod.UID].State != TerminatedPodState {
		t.Fatalf("SyncKnownPods = %+v, want the terminated pod kept while desired", got)
	}
	if got := e.p.SyncKnownPods(nil); len(got) != 0 {
		t.Fatalf("SyncKnownPods(nil) = %+v, want the finished pod forgotten", got)
	}
	if !e.p.ShouldPodContentBeRemoved(pod.UID) || e.p.CouldHaveRunningContainers(pod.UID) {
		t.Fatal("a forgotten pod must read as removable and not running")
	}
}

// TestUnknownPodBeforeAndAfterSyncKnownPods: until housekeeping first reconciles the
// workers, a pod they do not know may still have containers from before a restart; after it,
// an unknown pod is gone.
func TestUnknownPodBeforeAndAfterSyncKnownPods(t *testing.T) {
	e := newEnv(t)
	const uid = types.UID("uid-unknown")
	if !e.p.CouldHaveRunningContainers(uid) || e.p.ShouldPodBeFinished(uid) || e.p.ShouldPodContentBeRemoved(uid) {
		t.Fatal("before SyncKnownPods an unknown pod must read as possibly running")
	}
	e.p.SyncKnownPods(nil)
	if e.p.CouldHaveRunningContainers(uid) || !e.p.ShouldPodBeFinished(uid) || !e.p.ShouldPodContentBeRemoved(uid) {
		t.Fatal("after SyncKnownPods an unknown pod must read as finished and removable")
	}
	if e.p.IsPodKnownTerminated(uid) || e.p.IsPodTerminationRequested(uid) {
		t.Fatal("an unknown pod is neither known terminated nor terminating")
	}
	if _, known := e.p.State(uid); known {
		t.Fatal("State knows a pod that never had an update")
	}
}

func TestUpdatesCoalesce(t *testing.T) {
	e := newEnv(t)
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
	calls := e.step()
	if len(calls) != 1 || calls[0].pod != pods[2] {
		t.Fatalf("calls %+v, want one sync of the latest pod", calls)
	}
	// the duration counts from the oldest coalesced update: 3 updates 1s apart + relist
	if sum := histogramSum(t, e, "kubelet_pod_worker_duration_seconds", "update"); sum != 4 {
		t.Errorf("pod_worker_duration_seconds sum = %v, want 4 (from the first update)", sum)
	}
}

// TestSyncWaitingForTheRuntimeKeepsTheWorkerBusy: a sync that awaits a pending runtime
// operation gives control back to Step (nothing blocks) but the pod's worker stays busy:
// updates arriving meanwhile do not start a second sync, they coalesce into one that runs
// after the first has returned (and after a relist newer than it).
func TestSyncWaitingForTheRuntimeKeepsTheWorkerBusy(t *testing.T) {
	e := newEnv(t)
	op := e.h.hold("sync")
	e.cache.UpdateTime(e.clk.Now())
	var pods []*v1.Pod
	for i := 1; i <= 3; i++ {
		pod := testPod("busy")
		pod.Labels = map[string]string{"version": fmt.Sprint(i)}
		pods = append(pods, pod)
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodUpdate})
		if calls := e.step(); i == 1 && (len(calls) != 1 || calls[0].pod != pods[0]) {
			t.Fatalf("first step: %+v, want the first version's sync", calls)
		} else if i > 1 && len(calls) != 0 {
			t.Fatalf("update %d started a sync while the first waits for the runtime: %+v", i, calls)
		}
		if n := e.p.SyncsInFlight(); n != 1 {
			t.Fatalf("SyncsInFlight = %d after update %d, want the waiting sync", n, i)
		}
		if e.due() || e.p.idle(pods[0].UID) {
			t.Fatalf("update %d: due=%t idle=%t; want not due (waiting for the op) and busy", i, e.due(), e.p.idle(pods[0].UID))
		}
		e.clk.Step(time.Second)
	}
	if c := e.h.list()[0]; c.returned {
		t.Fatal("the held sync returned before its operation completed")
	}

	op.Complete(nil)
	if !e.due() {
		t.Fatal("a completed operation does not make the pod workers due")
	}
	e.step()
	if c := e.h.list()[0]; !c.returned || c.err != nil {
		t.Fatalf("first sync after the op completed: %+v, want returned without error", c)
	}
	if n := e.p.SyncsInFlight(); n != 0 {
		t.Fatalf("SyncsInFlight = %d, want 0", n)
	}
	// the coalesced update waits for a relist newer than the first sync
	if len(e.h.list()) != 1 || e.cache.NumWaiters() != 1 {
		t.Fatalf("%d calls, %d cache waiters; want the second sync waiting for the cache", len(e.h.list()), e.cache.NumWaiters())
	}
	e.relist()
	calls := e.step()
	if len(calls) != 1 || calls[0].pod != pods[2] {
		t.Fatalf("second sync %+v, want one with the latest version", calls)
	}
	if !e.p.idle(pods[0].UID) {
		t.Fatal("the worker is still busy after the coalesced sync")
	}
	// the coalesced sync's duration counts from the oldest update it realized (version 2, at
	// +1s; it ended at +4s), the first from its own update (at +0s, ended at +3s)
	if sum := histogramSum(t, e, "kubelet_pod_worker_duration_seconds", "update"); sum != 3+3 {
		t.Errorf("pod_worker_duration_seconds sum = %v, want 6", sum)
	}
}

// TestStepOrder: pods are synced in the order they became ready, and a pod that becomes
// ready while a Step is under way goes before the rest of that Step's batch, as the goroutine
// upstream wakes for a fresh event runs next: a batch of hundreds of pods released at once
// must not hold up another pod's fresh event.
func TestStepOrder(t *testing.T) {
	e := newEnv(t)
	a, b, c, fresh := testPod("zz-a"), testPod("mm-b"), testPod("aa-c"), testPod("fresh")
	e.cache.UpdateTime(e.clk.Now())
	e.h.mu.Lock()
	e.h.during[a.UID] = func() {
		e.p.UpdatePod(UpdatePodOptions{Pod: fresh, UpdateType: kubetypes.SyncPodCreate})
	}
	e.h.mu.Unlock()
	for _, pod := range []*v1.Pod{a, b, c} {
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	}
	var got []types.UID
	for _, call := range e.step() {
		got = append(got, call.uid)
	}
	want := []types.UID{a.UID, fresh.UID, b.UID, c.UID}
	if !slices.Equal(got, want) {
		t.Fatalf("synced %v, want %v", got, want)
	}
}

// TestStepYieldsAfterItsSlice: a Step whose syncs use StepSlice of the clock returns with the
// rest of its batch left for the next, which takes a pod that became ready meanwhile first;
// with no time passing, one Step syncs the whole batch (simulate's virtual clock).
func TestStepYieldsAfterItsSlice(t *testing.T) {
	for _, tc := range []struct {
		name     string
		perSync  time.Duration
		wantRuns [][]string // pod names synced by each Step
	}{
		{"no time passes", 0, [][]string{{"p0", "p1", "p2", "p3", "p4"}}},
		// Each sync takes 40% of the slice: a Step's third sync is started past half of it
		// and ends past the slice.
		{"syncs take time", 2 * StepSlice / 5, [][]string{{"p0", "p1", "p2"}, {"late", "p3", "p4"}}},
		// A sync longer than the slice still makes progress: one pod per Step.
		{"one sync outlasts the slice", 2 * StepSlice, [][]string{{"p0"}, {"late", "p1"}, {"p2"}, {"p3"}, {"p4"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.cache.UpdateTime(e.clk.Now())
			names := map[types.UID]string{}
			var pods []*v1.Pod
			for i := range 5 {
				pod := testPod(fmt.Sprintf("p%d", i))
				pods, names[pod.UID] = append(pods, pod), pod.Name
			}
			late := testPod("late")
			names[late.UID] = late.Name
			e.h.mu.Lock()
			for _, pod := range pods {
				e.h.during[pod.UID] = func() { e.clk.Step(tc.perSync) }
			}
			e.h.mu.Unlock()
			for _, pod := range pods {
				e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
			}
			var runs [][]string
			for i := 0; e.due(); i++ {
				if i == maxStepsPerInstant {
					t.Fatal("pod workers still due: a Step must make progress")
				}
				before := len(e.h.list())
				e.p.Step(e.ctx)
				var run []string
				for _, c := range e.h.list()[before:] {
					run = append(run, names[c.uid])
				}
				runs = append(runs, run)
				if len(runs) == 1 && len(e.h.list()) < len(pods) {
					// Between Steps, as the runtime's and PLEG's steps would, a pod arrives.
					e.p.UpdatePod(UpdatePodOptions{Pod: late, UpdateType: kubetypes.SyncPodCreate})
				}
			}
			if tc.perSync == 0 {
				e.p.UpdatePod(UpdatePodOptions{Pod: late, UpdateType: kubetypes.SyncPodCreate})
				e.step()
			}
			if !reflect.DeepEqual(runs, tc.wantRuns) {
				t.Errorf("Steps synced %v, want %v", runs, tc.wantRuns)
			}
		})
	}
}

// TestPodsStepSideBySide: one pod's sync waiting for the runtime does not hold up another
// pod's.
func TestPodsStepSideBySide(t *testing.T) {
	e := newEnv(t)
	slow, fast := testPod("slow"), testPod("fast")
	op := e.h.hold("sync") // the first sync to start (arrival order: fast, then slow)
	e.cache.UpdateTime(e.clk.Now())
	e.p.UpdatePod(UpdatePodOptions{Pod: fast, UpdateType: kubetypes.SyncPodCreate})
	e.p.UpdatePod(UpdatePodOptions{Pod: slow, UpdateType: kubetypes.SyncPodCreate})
	calls := e.step()
	if len(calls) != 2 || calls[0].uid != fast.UID || calls[1].uid != slow.UID {
		t.Fatalf("calls %+v, want both pods synced in arrival order", calls)
	}
	if list := e.h.list(); !list[1].returned || list[0].returned {
		t.Fatalf("calls %+v, want fast waiting and slow done", list)
	}
	if e.p.idle(fast.UID) || !e.p.idle(slow.UID) {
		t.Fatal("the waiting pod must be busy and the other idle")
	}
	op.Complete(nil)
	e.step()
	if !e.p.idle(fast.UID) || e.p.SyncsInFlight() != 0 {
		t.Fatal("the waiting sync did not finish once its operation completed")
	}
}

func TestPendingKillIsNotOverwritten(t *testing.T) {
	e := newEnv(t)
	pod := testPod("kill")
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	e.step()

	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: int64p(5)}})
	newer := testPod("kill")
	newer.Labels = map[string]string{"v": "2"}
	e.p.UpdatePod(UpdatePodOptions{Pod: newer, UpdateType: kubetypes.SyncPodUpdate})
	e.relist()
	e.step()
	last := e.h.list()[1]
	if last.kind != "terminating" || last.grace != 5 || last.pod != newer {
		t.Fatalf("after kill + update: %+v, want terminating with grace 5 and the newest spec", last)
	}
}

func TestGracePeriodOnlyShrinks(t *testing.T) {
	e := newEnv(t)
	pod := testPod("grace")
	e.h.setErr("terminating", errors.New("containers still stopping")) // stay terminating
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	e.step()

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
		calls := e.step()
		if len(calls) != 1 {
			t.Fatalf("step %d: calls %+v, want one", i, calls)
		}
		if c := calls[0]; c.kind != "terminating" || c.grace != s.want {
			t.Fatalf("step %d: %s with grace %d, want terminating with %d", i, c.kind, c.grace, s.want)
		}
	}
}

// TestShorterGracePeriodCancelsTheRunningKill: a kill waiting for its containers to stop is
// cancelled by a kill with a shorter grace period; the cancelled sync is resumed at once to
// see the cancellation (it does not wait for its operation), and the kill is retried with the
// shorter grace period after the next relist.
func TestShorterGracePeriodCancelsTheRunningKill(t *testing.T) {
	e := newEnv(t)
	pod := testPod("cancel")
	e.cache.UpdateTime(e.clk.Now())
	stop := e.h.hold("terminating") // the 30s stop never completes on its own
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill})
	if calls := e.step(); len(calls) != 1 || calls[0].grace != 30 {
		t.Fatalf("first kill %+v, want grace 30", calls)
	}
	if e.p.SyncsInFlight() != 1 {
		t.Fatal("the first kill is not waiting for its stop")
	}
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: int64p(3)}})
	if !e.due() {
		t.Fatal("cancelling the running kill does not make the workers due")
	}
	if calls := e.step(); len(calls) != 0 {
		t.Fatalf("the retry ran on a cache no newer than the cancelled sync: %+v", calls)
	}
	if c := e.h.list()[0]; !c.returned || !errors.Is(c.err, context.Canceled) {
		t.Fatalf("cancelled kill %+v, want returned with context.Canceled", c)
	}
	if stop.Done() || e.p.SyncsInFlight() != 0 {
		t.Fatal("the cancelled kill must end without its operation completing")
	}
	e.relist()
	if calls := e.step(); len(calls) != 1 || calls[0].grace != 3 {
		t.Fatalf("retried kill %+v, want grace 3", calls)
	}
	// The operation of the cancelled kill completing later must not disturb anything.
	stop.Complete(nil)
	if calls := e.step(); len(calls) != 0 {
		t.Fatalf("a late completion of the abandoned operation ran %+v", calls)
	}
}

// TestTerminationCancelsTheRunningSync: a pod deleted while its SyncPod waits for the runtime
// (a slow pull) does not wait for the pull: the sync is cancelled and terminating follows.
func TestTerminationCancelsTheRunningSync(t *testing.T) {
	e := newEnv(t)
	pod := testPod("pulling")
	e.cache.UpdateTime(e.clk.Now())
	pull := e.h.hold("sync")
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	e.step()
	deleted := pod.DeepCopy()
	now := metav1.NewTime(e.clk.Now())
	deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds = &now, int64p(5)
	e.p.UpdatePod(UpdatePodOptions{Pod: deleted, UpdateType: kubetypes.SyncPodUpdate})
	e.step()
	if c := e.h.list()[0]; !c.returned || !errors.Is(c.err, context.Canceled) {
		t.Fatalf("sync %+v, want cancelled by the deletion", c)
	}
	e.relist()
	if calls := e.step(); len(calls) != 1 || calls[0].kind != "terminating" || calls[0].grace != 5 {
		t.Fatalf("after the deletion: %+v, want terminating with grace 5", calls)
	}
	if pull.Done() {
		t.Fatal("nothing should have completed the pull")
	}
}

// TestNonTerminatingUpdateDoesNotCancel: an ordinary update arriving while a sync waits does
// not cancel it (only termination or a shorter grace period does).
func TestNonTerminatingUpdateDoesNotCancel(t *testing.T) {
	e := newEnv(t)
	pod := testPod("keep")
	e.cache.UpdateTime(e.clk.Now())
	op := e.h.hold("sync")
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	e.step()
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodUpdate})
	e.step()
	if c := e.h.list()[0]; c.returned {
		t.Fatalf("sync %+v returned before its operation completed", c)
	}
	op.Complete(nil)
	e.step()
	if c := e.h.list()[0]; !c.returned || c.err != nil {
		t.Fatalf("sync %+v, want a normal end", c)
	}
}

func TestRequeueDelays(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		min, max time.Duration
	}{
		{"success resyncs after syncFrequency with jitter", nil, time.Minute, 90 * time.Second},
		{"error retries after the back-off with jitter", errors.New("boom"), 10 * time.Second, 15 * time.Second},
		// A back-off's message alone is a sync error like any other.
		{"a back-off message retries after the error back-off", errors.New(`failed to "StartContainer" for "app" with CrashLoopBackOff: "back-off 5m0s restarting failed container=app"`), 10 * time.Second, 15 * time.Second},
		// As v1.33 on (kubernetes#123602): a BackOffError retries when its back-off ends, with
		// jitter, waiting at most the resync interval at once.
		{"a crash-loop back-off retries when it ends", &BackOffError{Until: epochPlus(4 * time.Second), Err: errors.New("CrashLoopBackOff")}, 4 * time.Second, 6 * time.Second},
		{"a long back-off waits a resync interval at most", &BackOffError{Until: epochPlus(5 * time.Minute), Err: errors.New("CrashLoopBackOff")}, time.Minute, 90 * time.Second},
		{"an ended back-off retries at once", &BackOffError{Until: epochPlus(-time.Second), Err: errors.New("CrashLoopBackOff")}, 0, time.Nanosecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if !e.clk.Now().Equal(epochPlus(0)) {
				t.Fatalf("the test clock starts at %v, the back-offs are relative to %v", e.clk.Now(), epochPlus(0))
			}
			e.h.setErr("sync", tc.err)
			pod := testPod("rq")
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
			if _, ok := e.p.NextRequeue(); ok {
				t.Fatal("a requeue before the first sync")
			}
			e.relist()
			e.step()
			synced := e.clk.Now()
			next, ok := e.p.NextRequeue()
			if !ok || next.Before(synced.Add(tc.min)) || !next.Before(synced.Add(tc.max)) {
				t.Fatalf("requeue at +%v, want in [%v, %v)", next.Sub(synced), tc.min, tc.max)
			}
			// the requeue is the sync loop's business (its sync tick): the workers are idle
			if e.due() {
				t.Fatal("the pod workers are due while the pod only waits for its requeue")
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
			if _, ok := e.p.NextRequeue(); ok {
				t.Fatal("NextRequeue still reports the pod handed out")
			}
		})
	}
}

// TestRequeueDrivesTheNextSync runs the workers beside a PLEG and a stand-in for the sync
// loop's sync tick (PodsToSync fed back as sync updates, every second) on a virtual clock: a
// failing sync is retried after the error back-off (10s plus up to 50% jitter).
func TestRequeueDrivesTheNextSync(t *testing.T) {
	tests := []struct {
		name string
		err  error
		// [min, max] bounds when the second sync runs, as an offset from the first: the
		// requeue (with jitter for an error) rounded up to the next whole second, when the
		// PLEG and the sync tick run.
		min, max time.Duration
	}{
		{"error", errors.New("boom"), 10 * time.Second, 16 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.h.setErr("sync", tc.err)
			pod := testPod("again")
			syncTick := e.clk.Now()
			table := []runner.Loop{
				e.pleg(),
				{Name: "sync-tick", Due: func(time.Time) time.Time { return syncTick }, Step: func(context.Context) {
					for range e.p.PodsToSync(e.clk.Now()) {
						e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodSync})
					}
					syncTick = e.clk.Now().Add(time.Second)
				}},
				e.loop(),
			}
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
			simtest.Run(t, e.clk, table, time.Minute, func() bool { return len(e.h.list()) == 2 })
			calls := e.h.list()
			if calls[1].updateType != kubetypes.SyncPodSync {
				t.Fatalf("second call %+v, want a sync from the requeue", calls[1])
			}
			if d := calls[1].at.Sub(calls[0].at); d < tc.min || d > tc.max {
				t.Fatalf("second sync %v after the first, want in [%v, %v]", d, tc.min, tc.max)
			}
		})
	}
}

func TestJitterIsReproducible(t *testing.T) {
	times := func() []time.Duration {
		e := newEnv(t)
		var out []time.Duration
		for i := 0; i < 5; i++ {
			pod := testPod(fmt.Sprint("j", i))
			e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
			e.relist()
			e.step()
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
		e := newEnv(t)
		rp := &container.Pod{ID: "uid-orphan", Name: "orphan", Namespace: "default", Containers: []*container.Container{{Name: "app", State: container.ContainerStateRunning}}}
		e.p.UpdatePod(UpdatePodOptions{RunningPod: rp, UpdateType: kubetypes.SyncPodSync})
		if _, known := e.p.State(rp.ID); known || e.due() {
			t.Fatal("a runtime pod accepted a non-kill update")
		}
		e.p.UpdatePod(UpdatePodOptions{RunningPod: rp, UpdateType: kubetypes.SyncPodKill})
		if !e.p.IsPodTerminationRequested(rp.ID) || e.p.UnfinishedTerminations() != 1 {
			t.Fatal("a killed runtime pod is not terminating")
		}
		// an orphan's kill needs no status: it runs without a relist
		if calls := e.step(); len(calls) != 1 {
			t.Fatal("runtime pod kill did not run")
		}
		if got := fmt.Sprint(e.h.kinds()); got != "[runtime]" {
			t.Fatalf("calls %s, want [runtime]", got)
		}
		if _, known := e.p.State(rp.ID); known {
			t.Fatal("a stopped runtime pod is still tracked")
		}
		if e.p.UnfinishedTerminations() != 0 || e.due() {
			t.Fatal("a stopped runtime pod still counts or keeps the workers due")
		}
	})
	t.Run("runtime pod stopping slowly", func(t *testing.T) {
		e := newEnv(t)
		rp := &container.Pod{ID: "uid-orphan", Name: "orphan", Namespace: "default"}
		stop := e.h.hold("runtime")
		e.p.UpdatePod(UpdatePodOptions{RunningPod: rp, UpdateType: kubetypes.SyncPodKill})
		e.step()
		if _, known := e.p.State(rp.ID); !known || e.p.SyncsInFlight() != 1 {
			t.Fatal("an orphan whose stop is pending must stay tracked")
		}
		stop.Complete(nil)
		e.step()
		if _, known := e.p.State(rp.ID); known {
			t.Fatal("the orphan is still tracked after its stop completed")
		}
	})
	t.Run("pod gone from config", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("gone")
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
		e.relist()
		e.step()
		got := e.p.SyncKnownPods(nil)
		if w := got[pod.UID]; !w.Orphan || w.State != TerminatingPodState || !w.HasConfig {
			t.Fatalf("SyncKnownPods = %+v, want an orphan that is terminating", w)
		}
		e.relist()
		e.step()
		e.relist()
		e.step()
		if !e.p.ShouldPodContentBeRemoved(pod.UID) {
			t.Fatal("a deleted, stopped pod must be removable")
		}
		if got := fmt.Sprint(e.h.kinds()); got != "[sync terminating terminated]" {
			t.Fatalf("calls %s", got)
		}
	})
	t.Run("pod gone before it started", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("never")
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
		e.step() // waits for the first relist
		e.p.SyncKnownPods(nil)
		e.relist()
		e.step()
		if len(e.h.list()) != 0 {
			t.Fatalf("calls %v, want none for a pod that never started", e.h.kinds())
		}
		if !e.p.ShouldPodBeFinished(pod.UID) || e.p.CouldHaveRunningContainers(pod.UID) {
			t.Fatal("a pod removed before it started must be finished")
		}
		if got := e.p.SyncKnownPods(nil); len(got) != 0 {
			t.Fatalf("SyncKnownPods = %+v, want the pod forgotten", got)
		}
	})
}

// TestStaticPodsWithTheSameNameRunOneAtATime: a static pod re-created with a new UID waits
// for the old one to terminate. While it waits it does not keep the workers busy: its start
// is retried at its requeue (the sync loop's sync tick feeds it back).
func TestStaticPodsWithTheSameNameRunOneAtATime(t *testing.T) {
	e := newEnv(t)
	old, newer := staticPod("etcd", "uid-old"), staticPod("etcd", "uid-new")
	e.p.UpdatePod(UpdatePodOptions{Pod: old, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	e.step()
	e.p.UpdatePod(UpdatePodOptions{Pod: newer, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	if calls := e.step(); len(calls) != 0 {
		t.Fatalf("the new static pod started while the old one with its name runs: %+v", calls)
	}
	if e.due() || !e.p.idle(newer.UID) {
		t.Fatal("a deferred start must leave the workers idle (no retry at every step)")
	}
	if sync := e.p.SyncKnownPods(map[types.UID]bool{old.UID: true, newer.UID: true}); !sync[newer.UID].HasConfig || !sync[newer.UID].Static {
		t.Fatalf("SyncKnownPods = %+v, want the waiting static pod known with its config", sync[newer.UID])
	}
	e.p.UpdatePod(UpdatePodOptions{Pod: old, UpdateType: kubetypes.SyncPodKill})
	for i := 0; i < 2; i++ { // terminating, terminated
		e.relist()
		e.step()
	}
	if !e.p.ShouldPodBeFinished(old.UID) {
		t.Fatal("the old static pod did not finish")
	}
	// the requeue set when the start was deferred hands the new pod back
	next, ok := e.p.NextRequeue()
	if !ok {
		t.Fatal("the deferred pod has no requeue")
	}
	e.clk.SetTime(next)
	for _, uid := range e.p.PodsToSync(next) {
		if uid == newer.UID {
			e.p.UpdatePod(UpdatePodOptions{Pod: newer, UpdateType: kubetypes.SyncPodSync})
		}
	}
	calls := e.step()
	if len(calls) != 1 || calls[0].kind != "sync" || calls[0].uid != newer.UID {
		t.Fatalf("calls %+v, want the new pod's sync", calls)
	}
}

func TestTerminalPodAfterRestartIsKnownTerminated(t *testing.T) {
	e := newEnv(t)
	pod := testPod("done")
	pod.Status.Phase = v1.PodSucceeded
	e.cache.Set(pod.UID, &container.PodStatus{ID: pod.UID, SandboxStatuses: []*cri.PodSandboxStatus{{ID: "sb", State: cri.SandboxNotReady}}}, nil, e.clk.Now())
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	if !e.p.IsPodKnownTerminated(pod.UID) {
		t.Fatal("a terminal pod with nothing running must count as terminated at once")
	}
	e.relist()
	e.step()
	if got := fmt.Sprint(e.h.kinds()); got != "[terminated]" {
		t.Fatalf("calls %s, want only the terminated cleanup", got)
	}
}

func TestDeletionTimestampStartsTermination(t *testing.T) {
	e := newEnv(t)
	pod := testPod("del")
	e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	e.relist()
	e.step()
	deleted := pod.DeepCopy()
	now := metav1.NewTime(e.clk.Now())
	deleted.DeletionTimestamp = &now
	deleted.DeletionGracePeriodSeconds = int64p(12)
	e.p.UpdatePod(UpdatePodOptions{Pod: deleted, UpdateType: kubetypes.SyncPodUpdate})
	e.relist()
	e.step()
	if c := e.h.list()[1]; c.kind != "terminating" || c.grace != 12 {
		t.Fatalf("%+v, want terminating with the deletion grace period 12", c)
	}
}

// TestKillCompleted: a kill's Completed operation completes once the pod's containers are
// stopped, at once when they already are or the options do not apply; a task awaiting it (the
// eviction manager, the node shutdown) resumes then.
func TestKillCompleted(t *testing.T) {
	t.Run("completes when terminating succeeded", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("evict")
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
		e.relist()
		e.step()
		stop := e.h.hold("terminating")
		done := task.NewOp()
		// The node shutdown manager and the eviction manager react to the completion by
		// asking the pod workers again: the callback must not find them locked.
		var stateInCallback bool
		done.OnDone(func() { _, stateInCallback = e.p.State(pod.UID) })
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{Evict: true, Completed: done}})
		waiter := simtest.Go(context.Background(), func(ctx context.Context) error { return task.Await(ctx, done) })
		e.relist()
		e.step()
		if done.Done() || waiter.Poll() {
			t.Fatal("Completed before the containers stopped")
		}
		stop.Complete(nil)
		e.step()
		if !done.Done() || !waiter.Poll() || waiter.Err() != nil {
			t.Fatalf("Completed done=%t, waiter returned=%t: want both once terminating succeeded", done.Done(), waiter.Done())
		}
		if !stateInCallback {
			t.Error("the completion callback could not read the pod's state")
		}
		if !e.p.ShouldPodContentBeRemoved(pod.UID) {
			t.Fatal("an evicted pod's content must be removable")
		}
	})
	t.Run("failed terminating does not complete", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("stuck")
		e.h.setErr("terminating", errors.New("still stopping"))
		done := task.NewOp()
		e.cache.UpdateTime(e.clk.Now())
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{Completed: done}})
		e.step()
		if len(e.h.list()) != 1 || done.Done() {
			t.Fatal("Completed after a failed terminating sync")
		}
	})
	t.Run("pod already terminated", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("already")
		pod.Status.Phase = v1.PodFailed
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate}) // terminated at once: nothing runs
		done := task.NewOp()
		var stateInCallback bool
		done.OnDone(func() { _, stateInCallback = e.p.State(pod.UID) })
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: &KillPodOptions{Completed: done}})
		if !done.Done() || !stateInCallback {
			t.Fatal("a kill of a terminated pod must complete at once, after UpdatePod released its lock")
		}
	})
	t.Run("kill options on a non-kill update", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("notkill")
		done := task.NewOp()
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodUpdate, KillPodOptions: &KillPodOptions{Completed: done}})
		if !done.Done() || e.p.IsPodTerminationRequested(pod.UID) {
			t.Fatal("kill options that do not apply must complete at once and not terminate the pod")
		}
	})
	t.Run("caller's options are not written", func(t *testing.T) {
		e := newEnv(t)
		pod := testPod("copy")
		opts := &KillPodOptions{Completed: task.NewOp()}
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodKill, KillPodOptions: opts})
		if opts.PodTerminationGracePeriodSecondsOverride != nil || opts.Completed == nil {
			t.Fatalf("UpdatePod wrote into the caller's KillPodOptions: %+v", opts)
		}
	})
}

// TestManyPodsRunToCompletionOnTheLoopTable runs the workers as the loop table does, beside
// a PLEG relisting every second, on a virtual clock: every pod goes sync -> terminating ->
// terminated on its own, one relist apart, and the workers end idle with nothing in flight.
func TestManyPodsRunToCompletionOnTheLoopTable(t *testing.T) {
	e := newEnv(t)
	const n = 20
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		pod := testPod(fmt.Sprint("w", i))
		e.h.setTerminal(pod.UID) // each pod runs to completion on its own
		pods = append(pods, pod)
		e.p.UpdatePod(UpdatePodOptions{Pod: pod, UpdateType: kubetypes.SyncPodCreate})
	}
	finished := func() bool {
		for _, pod := range pods {
			if !e.p.ShouldPodBeFinished(pod.UID) {
				return false
			}
		}
		return true
	}
	simtest.Run(t, e.clk, []runner.Loop{e.pleg(), e.loop()}, time.Minute, finished)
	// relists at 0s, 1s and 2s: each pod's three syncs are a relist apart
	if got := e.clk.Now().Sub(epoch); got != 2*time.Second {
		t.Errorf("all pods finished after %v, want 2s", got)
	}
	byPod := map[types.UID][]string{}
	for _, c := range e.h.list() {
		byPod[c.uid] = append(byPod[c.uid], c.kind)
	}
	for _, pod := range pods {
		if got := fmt.Sprint(byPod[pod.UID]); got != "[sync terminating terminated]" {
			t.Errorf("pod %s: calls %s", pod.Name, got)
		}
	}
	if e.due() || e.p.SyncsInFlight() != 0 || e.p.UnfinishedTerminations() != 0 {
		t.Fatalf("due=%t inFlight=%d unfinished=%d; want idle", e.due(), e.p.SyncsInFlight(), e.p.UnfinishedTerminations())
	}
}

func TestWakeIsNotifiedByWork(t *testing.T) {
	tests := []struct {
		name string
		// arrange leaves the workers idle and returns what makes them due again.
		arrange func(e *env) func()
	}{
		{"an update", func(e *env) func() {
			return func() { e.p.UpdatePod(UpdatePodOptions{Pod: testPod("a"), UpdateType: kubetypes.SyncPodCreate}) }
		}},
		{"a relist a pending update waits for", func(e *env) func() {
			e.p.UpdatePod(UpdatePodOptions{Pod: testPod("a"), UpdateType: kubetypes.SyncPodCreate})
			e.step()
			return e.relist
		}},
		{"a completed runtime operation", func(e *env) func() {
			op := e.h.hold("sync")
			e.cache.UpdateTime(e.clk.Now())
			e.p.UpdatePod(UpdatePodOptions{Pod: testPod("a"), UpdateType: kubetypes.SyncPodCreate})
			e.step()
			return func() { op.Complete(nil) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			trigger := tt.arrange(e)
			drain(e.p.Wake())
			if e.due() {
				t.Fatal("the workers are due before the trigger")
			}
			trigger()
			select {
			case <-e.p.Wake().C():
			default:
				t.Fatal("Wake not notified: the daemon's loop goroutine would sleep through the work")
			}
			if !e.due() {
				t.Fatal("not due after the trigger")
			}
		})
	}
}

func drain(s *runner.Signal) {
	for {
		select {
		case <-s.C():
		default:
			return
		}
	}
}

func TestNewValidates(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no handler", Config{Cache: e.cache, Clock: e.clk}, "Handler is required"},
		{"no cache", Config{Handler: e.h, Clock: e.clk}, "Cache is required"},
		{"no clock", Config{Handler: e.h, Cache: e.cache}, "Clock is required"},
		{"negative resync", Config{Handler: e.h, Cache: e.cache, Clock: e.clk, ResyncInterval: -time.Second}, "ResyncInterval must not be negative, got -1s"},
		{"negative back-off", Config{Handler: e.h, Cache: e.cache, Clock: e.clk, BackOffPeriod: -time.Second}, "BackOffPeriod must not be negative, got -1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New() error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPodWorkerStateString(t *testing.T) {
	for state, want := range map[PodWorkerState]string{SyncPodState: "sync", TerminatingPodState: "terminating", TerminatedPodState: "terminated", PodWorkerState(7): "PodWorkerState(7)"} {
		if got := state.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(state), got, want)
		}
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

// epochPlus is d after the test clock's start.
func epochPlus(d time.Duration) time.Time { return simtest.Epoch.Add(d) }
