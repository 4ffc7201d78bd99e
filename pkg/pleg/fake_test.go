package pleg

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// scriptedRuntime is a runtime whose listing a test sets directly.
type scriptedRuntime struct {
	mu        sync.Mutex
	pods      []*container.Pod
	listErr   error
	listCalls int
	// getPodCalls counts GetPod: the per-pod relists that reached the runtime.
	getPodCalls int
	// hold, when set, makes GetPods wait for it (a slow or hung runtime): in a task the
	// listing is then a pending operation, and it answers once the test completes hold
	// (with an error: the listing fails with it).
	hold        *task.Op
	statusErr   map[types.UID]error
	statusCalls map[types.UID]int
	ips         map[types.UID][]string
	// share returns the same pod objects on every listing (as the fake runtime does for
	// unchanged pods) instead of copies.
	share bool
}

func newScripted() *scriptedRuntime {
	return &scriptedRuntime{statusErr: map[types.UID]error{}, statusCalls: map[types.UID]int{}, ips: map[types.UID][]string{}}
}

func (f *scriptedRuntime) set(pods ...*container.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = pods
}

// GetPods returns copies, as a runtime does: the PLEG must not depend on pointer identity.
func (f *scriptedRuntime) GetPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	f.mu.Lock()
	f.listCalls++
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		// Never wait holding the lock: the test reads the runtime meanwhile.
		if err := task.Await(ctx, hold); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	if f.share {
		return append([]*container.Pod(nil), f.pods...), nil
	}
	out := make([]*container.Pod, 0, len(f.pods))
	for _, p := range f.pods {
		cp := *p
		cp.Containers = copyContainers(p.Containers)
		cp.Sandboxes = copyContainers(p.Sandboxes)
		out = append(out, &cp)
	}
	return out, nil
}

// GetPod returns a copy of the one pod, with GetPods' hold and listing error, and counts the
// call; container.ErrPodNotFound when the script has no such pod.
func (f *scriptedRuntime) GetPod(ctx context.Context, uid types.UID) (*container.Pod, error) {
	f.mu.Lock()
	f.getPodCalls++
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		if err := task.Await(ctx, hold); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	for _, p := range f.pods {
		if p.ID == uid {
			cp := *p
			cp.Containers = copyContainers(p.Containers)
			cp.Sandboxes = copyContainers(p.Sandboxes)
			return &cp, nil
		}
	}
	return nil, container.ErrPodNotFound
}

func copyContainers(cs []*container.Container) []*container.Container {
	out := make([]*container.Container, len(cs))
	for i, c := range cs {
		cc := *c
		out[i] = &cc
	}
	return out
}

func (f *scriptedRuntime) GetPodStatus(_ context.Context, uid types.UID, name, ns string) (*container.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusCalls[uid]++
	if err := f.statusErr[uid]; err != nil {
		return nil, err
	}
	st := &container.PodStatus{ID: uid, Name: name, Namespace: ns, IPs: f.ips[uid]}
	for _, p := range f.pods {
		if p.ID != uid {
			continue
		}
		for _, c := range p.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, &container.ContainerStatus{ID: c.ID, Name: c.Name, State: c.State})
		}
		for _, s := range p.Sandboxes {
			state := cri.SandboxNotReady
			if s.State == container.ContainerStateRunning {
				state = cri.SandboxReady
			}
			st.SandboxStatuses = append(st.SandboxStatuses, &cri.PodSandboxStatus{ID: s.ID.ID, State: state})
		}
	}
	return st, nil
}

func (f *scriptedRuntime) calls(uid types.UID) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statusCalls[uid]
}

func ctr(id string, state container.State) *container.Container {
	return &container.Container{ID: container.ContainerID{Type: container.RuntimeType, ID: id}, Name: "c-" + id, State: state}
}

func pod(uid string, containers []*container.Container, sandboxes ...*container.Container) *container.Pod {
	return &container.Pod{ID: types.UID(uid), Name: "pod-" + uid, Namespace: "default", Containers: containers, Sandboxes: sandboxes}
}

const (
	running = container.ContainerStateRunning
	exited  = container.ContainerStateExited
	created = container.ContainerStateCreated
	unknown = container.ContainerStateUnknown
)

// start is the fake clock's initial time.
var start = simtest.Epoch

type fixture struct {
	rt    *scriptedRuntime
	clk   *testingclock.FakeClock
	cache *statuscache.Cache
	reg   *metrics.Registry
	g     *GenericPLEG
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{rt: newScripted(), clk: simtest.NewClock(), reg: metrics.NewRegistry("")}
	cfg := Config{Runtime: f.rt, Clock: f.clk, Registry: f.reg, PodRelistMetric: true}
	if mod != nil {
		mod(&cfg)
	}
	f.cache = statuscache.New(statuscache.Config{EventedPLEG: cfg.LegacyEvented, UnknownPodFresh: cfg.LegacyEvented})
	cfg.Cache = f.cache
	g, err := NewGenericPLEG(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.g = g
	return f
}

// drain returns every event waiting in the channel.
func drain(ch chan *PodLifecycleEvent) []PodLifecycleEvent {
	var out []PodLifecycleEvent
	for {
		select {
		case e := <-ch:
			out = append(out, *e)
		default:
			return out
		}
	}
}

// byPod groups events per pod, keeping their order (the order across pods is not a contract).
func byPod(evs []PodLifecycleEvent) map[types.UID][]string {
	out := map[types.UID][]string{}
	for _, e := range evs {
		out[e.ID] = append(out[e.ID], fmt.Sprintf("%s %v", e.Type, e.Data))
	}
	return out
}

// logRecorder captures log lines at the default verbosity (what an operator sees without -v).
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

// ctx returns a context whose klog logger writes to the recorder.
func (l *logRecorder) ctx() context.Context {
	return klog.NewContext(context.Background(), funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{Verbosity: 4}))
}

// count returns how many lines contain every part.
func (l *logRecorder) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

func (f *scriptedRuntime) lists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listCalls
}

func (f *scriptedRuntime) setHold(op *task.Op) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = op
}

// genericLoop is the generic PLEG's entry in a loop table.
func genericLoop(g *GenericPLEG) runner.Loop {
	return runner.Loop{Name: "generic-pleg", Due: g.Due, Step: g.Step, Wake: g.Wake()}
}

// eventedLoop is the evented PLEG's entry in a loop table.
func eventedLoop(e *LegacyEventedPLEG) runner.Loop {
	return runner.Loop{Name: "evented-pleg", Due: e.Due, Step: e.Step, Wake: e.Wake()}
}

// runFor runs the loops on the fake clock for d of virtual time, stepping every loop that
// falls due, and leaves the clock at the end.
func runFor(t testing.TB, clk *testingclock.FakeClock, d time.Duration, loops ...runner.Loop) {
	t.Helper()
	if err := runner.NewSim(clk, loops).RunUntil(context.Background(), clk.Now().Add(d), nil); err != nil {
		t.Fatal(err)
	}
}

// nopCache is a cache that stores nothing, for tests that do not look at it.
type nopCache struct{}

func (nopCache) Get(uid types.UID) (*container.PodStatus, error) {
	return &container.PodStatus{ID: uid}, nil
}
func (nopCache) Set(types.UID, *container.PodStatus, error, time.Time) bool { return true }
func (nopCache) NotifyWhenNewer(types.UID, time.Time, func()) bool          { return true }
func (nopCache) Delete(types.UID)                                           {}
func (nopCache) SetObservedTime(types.UID, time.Time)                       {}
func (nopCache) ClearObservedTime(types.UID)                                {}
func (nopCache) UpdateTime(time.Time)                                       {}

func ptr(t time.Time) *time.Time { return &t }
