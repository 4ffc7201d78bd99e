package podworkers

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
)

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// call is one recorded SyncHandler call.
type call struct {
	kind       string // sync, terminating, runtime, terminated
	uid        types.UID
	updateType kubetypes.SyncPodType
	pod        *v1.Pod
	grace      int64 // 0 when nil
}

// recorder is a SyncHandler that records calls and returns scripted results.
type recorder struct {
	mu       sync.Mutex
	calls    []call
	terminal map[types.UID]bool
	errs     map[string]error // by kind, returned every time
	// block, when set, makes SyncPod (sync) or SyncTerminatingPod (terminating) wait for a
	// value on it or for ctx to end; entered receives the call first.
	blockKind string
	block     chan struct{}
	entered   chan call
}

func newRecorder() *recorder {
	return &recorder{terminal: map[types.UID]bool{}, errs: map[string]error{}}
}

func (r *recorder) record(ctx context.Context, c call) error {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	blockKind, block, entered := r.blockKind, r.block, r.entered
	err := r.errs[c.kind]
	r.mu.Unlock()
	if entered != nil {
		entered <- c
	}
	if block != nil && blockKind == c.kind {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (r *recorder) SyncPod(ctx context.Context, t kubetypes.SyncPodType, pod *v1.Pod, _ *container.PodStatus) (bool, error) {
	err := r.record(ctx, call{kind: "sync", uid: pod.UID, updateType: t, pod: pod})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.terminal[pod.UID], err
}

func (r *recorder) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, _ *container.PodStatus, grace *int64, _ func(*v1.PodStatus)) error {
	c := call{kind: "terminating", uid: pod.UID, pod: pod}
	if grace != nil {
		c.grace = *grace
	}
	return r.record(ctx, c)
}

func (r *recorder) SyncTerminatingRuntimePod(ctx context.Context, rp *container.Pod) error {
	return r.record(ctx, call{kind: "runtime", uid: rp.ID})
}

func (r *recorder) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, _ *container.PodStatus) error {
	return r.record(ctx, call{kind: "terminated", uid: pod.UID, pod: pod})
}

func (r *recorder) setTerminal(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.terminal[uid] = true
}

func (r *recorder) setErr(kind string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs[kind] = err
}

func (r *recorder) list() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

func (r *recorder) kinds() []string {
	var out []string
	for _, c := range r.list() {
		out = append(out, c.kind)
	}
	return out
}

// env is pod workers over a recorder and a real status cache on a fake clock.
type env struct {
	t     *testing.T
	clk   *testclock.FakeClock
	cache *statuscache.Cache
	h     *recorder
	p     *PodWorkers
	reg   *metrics.Registry
	ctx   context.Context
}

func newEnv(t *testing.T, synchronous bool) *env {
	t.Helper()
	clk := testclock.NewFakeClock(epoch)
	cache := statuscache.New(statuscache.Config{})
	h := newRecorder()
	reg := metrics.NewRegistry("kubelet_")
	p, err := New(Config{Handler: h, Cache: cache, Clock: clk, Registry: reg, Synchronous: synchronous, JitterSeed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &env{t: t, clk: clk, cache: cache, h: h, p: p, reg: reg, ctx: context.Background()}
}

// relist moves time on and marks the whole cache fresh, as a PLEG relist does.
func (e *env) relist() {
	e.clk.Step(time.Second)
	e.cache.UpdateTime(e.clk.Now())
}

func (e *env) step(uid types.UID) bool {
	e.t.Helper()
	return e.p.Step(e.ctx, uid)
}

func testPod(name string) *v1.Pod {
	grace := int64(30)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
}

func staticPod(name string, uid types.UID) *v1.Pod {
	p := testPod(name)
	p.UID = uid
	p.Annotations = map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource}
	return p
}

func int64p(v int64) *int64 { return &v }

// waitFor polls a condition a goroutine will make true (a worker parking or exiting).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// idle reports whether the pod's worker has nothing pending or running.
func (p *PodWorkers) idle(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.statuses[uid]
	return !ok || !s.working
}
