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

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
)

// scriptedRuntime is a runtime whose listing a test sets directly.
type scriptedRuntime struct {
	mu        sync.Mutex
	pods      []*container.Pod
	listErr   error
	listCalls int
	// hang makes GetPods block until its context ends (a hung runtime); listing reports
	// each call as it starts.
	hang        bool
	listing     chan struct{}
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
	defer f.mu.Unlock()
	f.listCalls++
	if f.listing != nil {
		f.listing <- struct{}{}
	}
	if f.hang {
		f.mu.Unlock()
		<-ctx.Done()
		f.mu.Lock()
		return nil, ctx.Err()
	}
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

var start = time.Unix(1700000000, 0)

type fixture struct {
	rt    *scriptedRuntime
	clk   *testingclock.FakeClock
	cache *statuscache.Cache
	reg   *metrics.Registry
	g     *GenericPLEG
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{rt: newScripted(), clk: testingclock.NewFakeClock(start), reg: metrics.NewRegistry("")}
	cfg := Config{Runtime: f.rt, Clock: f.clk, Registry: f.reg}
	if mod != nil {
		mod(&cfg)
	}
	f.cache = statuscache.New(statuscache.Config{EventedPLEG: cfg.EventedPLEG})
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
	}, funcr.Options{Verbosity: 0}))
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
