package pleg

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
	"github.com/minikubelet/minikubelet/pkg/runtime/view"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
)

// twinNode runs two generic PLEGs over one fake runtime: "fast" lists through the fake's
// GetPods, which hands out the same immutable *container.Pod for a pod that did not change
// (the pointer-identity fast path), and "view" lists through view.View, which builds every
// pod afresh from ListPodSandbox + ListContainers as with a real CRI runtime (never the
// same object twice, so every pod takes the content comparison).
type twinNode struct {
	t          *testing.T
	rt         *fake.Runtime
	view       *view.View
	clk        *testingclock.FakeClock
	fast, slow *GenericPLEG
	fastCache  *statuscache.Cache
	slowCache  *statuscache.Cache
	names      map[string]string // container/sandbox id -> readable name
	uids       map[types.UID]bool
}

func newTwinNode(t *testing.T) *twinNode {
	t.Helper()
	clk := testingclock.NewFakeClock(start)
	rt, err := fake.New(fake.Config{Clock: clk, Seed: 7, InitContainerDuration: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.PullImage(context.Background(), cri.ImageSpec{Image: benchImage}, nil); err != nil {
		t.Fatal(err)
	}
	v, err := view.New(view.Config{Runtime: rt, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	n := &twinNode{t: t, rt: rt, view: v, clk: clk, names: map[string]string{}, uids: map[types.UID]bool{},
		fastCache: statuscache.New(statuscache.Config{}), slowCache: statuscache.New(statuscache.Config{})}
	n.fast = n.newPLEG(rt, n.fastCache)
	n.slow = n.newPLEG(viewRuntime{v}, n.slowCache)
	return n
}

// viewRuntime is view.View as the PLEG's Runtime.
type viewRuntime struct{ *view.View }

func (n *twinNode) newPLEG(rt Runtime, cache container.Cache) *GenericPLEG {
	g, err := NewGenericPLEG(Config{Runtime: rt, Cache: cache, Clock: n.clk, ChannelCapacity: 10000})
	if err != nil {
		n.t.Fatal(err)
	}
	return g
}

// sandbox runs a sandbox for the pod; behaviours script its containers by name.
func (n *twinNode) sandbox(pod string, attempt uint32, behaviours map[string]string) (string, *cri.PodSandboxConfig) {
	n.t.Helper()
	ann := map[string]string{}
	for c, b := range behaviours {
		ann[behavior.AnnotationKey(c)] = b
	}
	cfg := &cri.PodSandboxConfig{Metadata: cri.PodSandboxMetadata{Name: pod, Namespace: "default", UID: pod, Attempt: attempt}, Annotations: ann}
	id, err := n.rt.RunPodSandbox(context.Background(), cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	n.names[id] = fmt.Sprintf("sandbox#%d", attempt)
	n.uids[types.UID(pod)] = true
	return id, cfg
}

func (n *twinNode) start(sb string, cfg *cri.PodSandboxConfig, name, role string, attempt uint32) string {
	n.t.Helper()
	ctx := context.Background()
	cc := &cri.ContainerConfig{Metadata: cri.ContainerMetadata{Name: name, Attempt: attempt}, Image: cri.ImageSpec{Image: benchImage}}
	if role != "" {
		cc.Labels = map[string]string{fake.ContainerTypeAnnotation: role}
	}
	id, err := n.rt.CreateContainer(ctx, sb, cc, cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := n.rt.StartContainer(ctx, id); err != nil {
		n.t.Fatal(err)
	}
	n.names[id] = fmt.Sprintf("%s#%d", name, attempt)
	return id
}

func (n *twinNode) must(err error) {
	n.t.Helper()
	if err != nil {
		n.t.Fatal(err)
	}
}

// relist steps the clock a second, relists with both PLEGs, checks they agree on the events
// (in order) and on the cache, and returns the events as "pod Type container".
func (n *twinNode) relist(step string) []string {
	n.t.Helper()
	n.clk.Step(time.Second)
	ctx := context.Background()
	n.fast.Relist(ctx)
	n.slow.Relist(ctx)
	fast, slow := n.render(drain(n.fast.Watch())), n.render(drain(n.slow.Watch()))
	if diff := cmp.Diff(fast, slow); diff != "" {
		n.t.Fatalf("%s: events differ (-fast +view):\n%s", step, diff)
	}
	for uid := range n.uids {
		fs, ferr := n.fastCache.Get(uid)
		ss, serr := n.slowCache.Get(uid)
		if diff := cmp.Diff(fs, ss); diff != "" || fmt.Sprint(ferr) != fmt.Sprint(serr) {
			n.t.Fatalf("%s: cached status of %s differs (-fast +view):\n%s\nerrors %v / %v", step, uid, diff, ferr, serr)
		}
	}
	if len(n.fast.records) != len(n.slow.records) {
		n.t.Fatalf("%s: %d records over the fast path, %d over the view", step, len(n.fast.records), len(n.slow.records))
	}
	return fast
}

func (n *twinNode) render(evs []PodLifecycleEvent) []string {
	var out []string
	for _, e := range evs {
		id, _ := e.Data.(string)
		name, ok := n.names[id]
		if !ok {
			name = "unnamed " + id
		}
		out = append(out, fmt.Sprintf("%s %s %s", e.ID, e.Type, name))
	}
	return out
}

// TestRelistViewMatchesFastPath: the PLEG's pointer-identity fast path is only a shortcut.
// Over a scripted history (scripted exits, a delayed start, restarts, a second sandbox,
// sandbox stop and removal, a failed status read) a PLEG reading fresh objects through
// view.View sends exactly the events, in the same order, and caches exactly the statuses
// of one reading the fake runtime's shared snapshots.
func TestRelistViewMatchesFastPath(t *testing.T) {
	n := newTwinNode(t)
	ctx := context.Background()
	// Sanity: the two paths differ as described.
	s0, _ := n.sandbox("p0", 0, nil)
	for _, l := range []container.PodLister{n.rt, n.view} {
		a, _ := l.GetPods(ctx, true)
		b, _ := l.GetPods(ctx, true)
		if shared, fresh := a[0] == b[0], l != container.PodLister(n.rt); shared == fresh {
			t.Fatalf("GetPods of %T: unchanged pod shared = %v", l, shared)
		}
	}
	n.must(n.rt.RemovePodSandbox(ctx, s0))
	delete(n.uids, "p0")

	var s1, s2, s3, a1, i2, j3, j3c string
	var c1, c2, c3 *cri.PodSandboxConfig
	steps := []struct {
		name string
		act  func()
		want []string
	}{
		{"pods start", func() {
			s1, c1 = n.sandbox("p1", 0, nil)
			a1 = n.start(s1, c1, "app", "", 0)
			n.start(s1, c1, "side", fake.ContainerTypeSidecar, 0)
			s2, c2 = n.sandbox("p2", 0, map[string]string{"main": "startDelay=2s"})
			i2 = n.start(s2, c2, "init", fake.ContainerTypeInit, 0)
		}, []string{
			"p1 ContainerStarted app#0", "p1 ContainerStarted side#0", "p1 ContainerStarted sandbox#0",
			"p2 ContainerStarted init#0", "p2 ContainerStarted sandbox#0",
		}},
		{"init exits, main is created (unknown: no event), a job starts", func() {
			n.start(s2, c2, "main", "", 0)
			s3, c3 = n.sandbox("p3", 0, map[string]string{"job": "runFor=1500ms,exitCode=1"})
			j3 = n.start(s3, c3, "job", "", 0)
		}, []string{"p2 ContainerDied init#0", "p3 ContainerStarted job#0", "p3 ContainerStarted sandbox#0"}},
		{"main runs after its start delay, the job exits", func() {}, []string{"p2 ContainerStarted main#0", "p3 ContainerDied job#0"}},
		{"app killed, init removed", func() {
			n.must(n.rt.StopContainer(ctx, a1, 0))
			n.must(n.rt.RemoveContainer(ctx, i2))
		}, []string{"p1 ContainerDied app#0", "p2 ContainerRemoved init#0"}},
		{"app and job restarted", func() {
			n.must(n.rt.RemoveContainer(ctx, a1))
			n.start(s1, c1, "app", "", 1)
			n.must(n.rt.RemoveContainer(ctx, j3))
			n.start(s3, c3, "job", "", 1)
		}, []string{"p1 ContainerRemoved app#0", "p1 ContainerStarted app#1", "p3 ContainerRemoved job#0", "p3 ContainerStarted job#1"}},
		// Pods still listed come first, in listing order, then the ones that vanished.
		{"a running pod is removed at once", func() { n.must(n.rt.RemovePodSandbox(ctx, s2)) }, []string{
			"p3 ContainerDied job#1",
			"p2 ContainerDied main#0", "p2 ContainerRemoved main#0", "p2 ContainerDied sandbox#0", "p2 ContainerRemoved sandbox#0",
		}},
		{"p1 stopped, p3 gets a second sandbox", func() {
			n.must(n.rt.StopPodSandbox(ctx, s1))
			n.must(n.rt.StopPodSandbox(ctx, s3))
			s3b, _ := n.sandbox("p3", 1, nil)
			j3c = n.start(s3b, c3, "job", "", 2)
		}, []string{
			"p1 ContainerDied side#0", "p1 ContainerDied app#1", "p1 ContainerDied sandbox#0",
			"p3 ContainerDied sandbox#0", "p3 ContainerStarted job#2", "p3 ContainerStarted sandbox#1",
		}},
		{"p1 and p3's old sandbox removed", func() {
			n.must(n.rt.RemovePodSandbox(ctx, s1))
			n.must(n.rt.RemovePodSandbox(ctx, s3))
		}, []string{
			"p3 ContainerRemoved job#1", "p3 ContainerDied job#2", "p3 ContainerRemoved sandbox#0",
			"p1 ContainerRemoved side#0", "p1 ContainerRemoved app#1", "p1 ContainerRemoved sandbox#0",
		}},
		{"status reads fail once for each PLEG: held back", func() {
			_, err := n.rt.AddFault(fault.Spec{Method: "PodSandboxStatus", Type: fault.Error, Count: 2})
			n.must(err)
			n.must(n.rt.RemoveContainer(ctx, j3c))
		}, nil},
		{"reinspection delivers", func() {}, []string{"p3 ContainerRemoved job#2"}},
		{"quiet", func() {}, nil},
	}
	for _, s := range steps {
		s.act()
		if diff := cmp.Diff(s.want, n.relist(s.name)); diff != "" {
			t.Fatalf("%s: events (-want +got):\n%s", s.name, diff)
		}
	}
}

func (n *twinNode) mustPod(uid types.UID) *container.Pod {
	n.t.Helper()
	pods, err := n.rt.GetPods(context.Background(), true)
	n.must(err)
	for _, p := range pods {
		if p.ID == uid {
			return p
		}
	}
	n.t.Fatalf("pod %s not listed", uid)
	return nil
}

// TestRelistViewMatchesFastPathRandomly drives a seeded random history (starts, scripted
// exits, kills, removals, sandbox stops and removals, restarts with new attempts) and checks
// after every relist that both listing paths agree.
func TestRelistViewMatchesFastPathRandomly(t *testing.T) {
	n := newTwinNode(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	type podState struct {
		sb      string
		cfg     *cri.PodSandboxConfig
		attempt uint32 // of the sandbox
		next    uint32 // the next container attempt: unique per pod, so names never clash
	}
	pods := map[string]*podState{}
	start := func(p *podState, name string) {
		n.start(p.sb, p.cfg, name, "", p.next)
		p.next++
	}
	total := 0
	for step := 0; step < 60; step++ {
		for k := 0; k < 3; k++ {
			uid := fmt.Sprintf("p%d", rng.IntN(6))
			p := pods[uid]
			switch op := rng.IntN(6); {
			case p == nil:
				p = &podState{}
				p.sb, p.cfg = n.sandbox(uid, 0, map[string]string{"short": "runFor=2s", "slow": "startDelay=1500ms"})
				pods[uid] = p
				for _, c := range []string{"app", "short", "slow"} {
					start(p, c)
				}
			case op == 0: // kill a running container
				for _, c := range n.mustPod(types.UID(uid)).Containers {
					if c.State == container.ContainerStateRunning {
						n.must(n.rt.StopContainer(ctx, c.ID.ID, 0))
						break
					}
				}
			case op == 1: // remove an exited container and start it again
				for _, c := range n.mustPod(types.UID(uid)).Containers {
					if c.State == container.ContainerStateExited {
						n.must(n.rt.RemoveContainer(ctx, c.ID.ID))
						if n.sandboxReady(uid) {
							start(p, c.Name)
						}
						break
					}
				}
			case op == 2:
				n.must(n.rt.StopPodSandbox(ctx, p.sb))
			case op == 3 && !n.sandboxReady(uid): // a new sandbox after a stop
				p.attempt++
				p.sb, p.cfg = n.sandbox(uid, p.attempt, map[string]string{"short": "runFor=2s"})
				start(p, "short")
			case op == 4:
				for _, sb := range n.mustPod(types.UID(uid)).Sandboxes {
					n.must(n.rt.RemovePodSandbox(ctx, sb.ID.ID))
				}
				delete(pods, uid)
			}
		}
		total += len(n.relist(fmt.Sprintf("random step %d", step)))
	}
	if total < 100 {
		t.Fatalf("the random history produced only %d events", total)
	}
}

func (n *twinNode) sandboxReady(uid string) bool {
	for _, sb := range n.mustPod(types.UID(uid)).Sandboxes {
		if sb.State == container.ContainerStateRunning {
			return true
		}
	}
	return false
}
