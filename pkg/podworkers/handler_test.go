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

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
	"github.com/minikubelet/minikubelet/pkg/task"
)

var epoch = simtest.Epoch

// call is one recorded SyncHandler call.
type call struct {
	kind       string // sync, terminating, runtime, terminated
	uid        types.UID
	updateType kubetypes.SyncPodType
	pod        *v1.Pod
	grace      int64 // 0 when nil
	at         time.Time
	// returned and err are filled in when the handler returns (a held call returns later).
	returned bool
	err      error
}

// recorder is a SyncHandler that records calls and returns scripted results. It can hold a
// call on a pending operation, as the real sync functions wait for the runtime (a stop with a
// grace period, a slow pull): the call awaits the op (task.Await) and so gives control back
// to the pod workers' Step until the test completes the op.
type recorder struct {
	clk      *testclock.FakeClock
	mu       sync.Mutex
	calls    []call
	terminal map[types.UID]bool
	errs     map[string]error // by kind, returned every time
	// holds: the next calls of a kind each await the first op still queued for that kind.
	holds map[string][]*task.Op
	// during: run inside the pod's next call, as something else happening while the pod
	// workers' Step is under way (the daemon's other loops run concurrently).
	during map[types.UID]func()
}

func newRecorder(clk *testclock.FakeClock) *recorder {
	return &recorder{clk: clk, terminal: map[types.UID]bool{}, errs: map[string]error{}, holds: map[string][]*task.Op{}, during: map[types.UID]func(){}}
}

// hold makes the next call of kind wait for the returned op.
func (r *recorder) hold(kind string) *task.Op {
	op := task.NewOp()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holds[kind] = append(r.holds[kind], op)
	return op
}

func (r *recorder) record(ctx context.Context, c call) error {
	c.at = r.clk.Now()
	r.mu.Lock()
	i := len(r.calls)
	r.calls = append(r.calls, c)
	err := r.errs[c.kind]
	var op *task.Op
	if q := r.holds[c.kind]; len(q) > 0 {
		op, r.holds[c.kind] = q[0], q[1:]
	}
	during := r.during[c.uid]
	delete(r.during, c.uid)
	r.mu.Unlock()
	if during != nil {
		during()
	}
	if op != nil {
		if werr := task.Await(ctx, op); werr != nil {
			err = werr // cancelled or abandoned while waiting for the runtime
		}
	}
	r.mu.Lock()
	r.calls[i].returned, r.calls[i].err = true, err
	r.mu.Unlock()
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

func (r *recorder) kinds() []string { return kindsOf(r.list()) }

func kindsOf(calls []call) []string {
	out := []string{}
	for _, c := range calls {
		out = append(out, c.kind)
	}
	return out
}

// env is pod workers over a recorder and a real status cache on a fake clock. Nothing runs
// on its own: the test moves the clock, plays the PLEG (relist) and runs the workers' loop
// entry (step), as the loop table would.
type env struct {
	t     *testing.T
	clk   *testclock.FakeClock
	cache *statuscache.Cache
	h     *recorder
	p     *PodWorkers
	reg   *metrics.Registry
	ctx   context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clk := simtest.NewClock()
	cache := statuscache.New(statuscache.Config{})
	h := newRecorder(clk)
	reg := metrics.NewRegistry("kubelet_")
	p, err := New(Config{Handler: h, Cache: cache, Clock: clk, Registry: reg, JitterSeed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	// The loop table's steps get a context that forbids blocking: a sync that waited outside
	// its task would fail instead of hanging the test.
	return &env{t: t, clk: clk, cache: cache, h: h, p: p, reg: reg, ctx: task.WithoutBlocking(context.Background())}
}

// relist moves time on and marks the whole cache fresh, as a PLEG relist does.
func (e *env) relist() {
	e.clk.Step(time.Second)
	e.cache.UpdateTime(e.clk.Now())
}

// maxStepsPerInstant bounds step: the workers must go idle at an instant (a step that keeps
// them due without progress would spin the daemon's loop goroutine).
const maxStepsPerInstant = 100

// step runs the pod workers' loop entry for as long as it is due at the current instant,
// as the loop table would, and returns the handler calls made meanwhile.
func (e *env) step() []call {
	e.t.Helper()
	before := len(e.h.list())
	for i := 0; e.due(); i++ {
		if i == maxStepsPerInstant {
			e.t.Fatalf("pod workers still due after %d steps at %v: a step must make progress", i, e.clk.Now())
		}
		e.p.Step(e.ctx)
	}
	return e.h.list()[before:]
}

// due reports whether the pod workers' Due says "now".
func (e *env) due() bool {
	now := e.clk.Now()
	d := e.p.Due(now)
	if !d.IsZero() && !d.Equal(now) {
		e.t.Fatalf("Due = %v at %v: the pod workers are due now or idle, never later", d, now)
	}
	return !d.IsZero()
}

// pleg is a loop entry that relists every second, as the generic PLEG does.
func (e *env) pleg() runner.Loop {
	next := e.clk.Now()
	return runner.Loop{
		Name: "pleg",
		Due:  func(time.Time) time.Time { return next },
		Step: func(context.Context) {
			e.cache.UpdateTime(e.clk.Now())
			next = e.clk.Now().Add(time.Second)
		},
	}
}

// loop is the pod workers' loop table entry.
func (e *env) loop() runner.Loop {
	return runner.Loop{Name: "pod-workers", Due: e.p.Due, Step: e.p.Step, Wake: e.p.Wake()}
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

// idle reports whether the pod's worker has nothing pending or running.
func (p *PodWorkers) idle(uid types.UID) bool {
	s, ok := p.statuses[uid]
	return !ok || !s.working
}
