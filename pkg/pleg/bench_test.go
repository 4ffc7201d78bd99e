package pleg

import (
	"context"
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runtime/fake"
	"github.com/minikubelet/minikubelet/pkg/runtime/view"
	"github.com/minikubelet/minikubelet/pkg/statuscache"
)

// benchNode is a fake runtime with n pods of one sandbox and two running containers.
type benchNode struct {
	rt    *fake.Runtime
	clk   *testingclock.FakeClock
	pods  []benchPod
	churn int // next pod to flip
}

type benchPod struct {
	sandboxID string
	config    *cri.PodSandboxConfig
	flipID    string // the container that flips between running and exited
	attempt   uint32
}

// benchImage is an image the runtime's catalogue does not know: its containers are not
// simulated programs, so they do what these tests script (an init container completes
// after the runtime's init duration, the rest run until stopped).
const benchImage = "ghcr.io/minikubelet/pleg-test:1.0"

func newBenchNode(b *testing.B, n int) *benchNode {
	b.Helper()
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Unix(1700000000, 0))
	rt, err := fake.New(fake.Config{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := rt.PullImage(ctx, cri.ImageSpec{Image: benchImage}, nil); err != nil {
		b.Fatal(err)
	}
	node := &benchNode{rt: rt, clk: clk, pods: make([]benchPod, n)}
	for i := range node.pods {
		uid := fmt.Sprintf("pod-%05d", i)
		cfg := &cri.PodSandboxConfig{Metadata: cri.PodSandboxMetadata{Name: uid, Namespace: "bench", UID: uid}}
		sb, err := rt.RunPodSandbox(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		p := &node.pods[i]
		p.sandboxID, p.config = sb, cfg
		for _, name := range []string{"app", "sidecar"} {
			id := node.start(b, p, name, 0)
			if name == "sidecar" {
				p.flipID = id
			}
		}
	}
	return node
}

func (n *benchNode) start(b *testing.B, p *benchPod, name string, attempt uint32) string {
	ctx := context.Background()
	id, err := n.rt.CreateContainer(ctx, p.sandboxID, &cri.ContainerConfig{
		Metadata: cri.ContainerMetadata{Name: name, Attempt: attempt}, Image: cri.ImageSpec{Image: benchImage},
	}, p.config)
	if err != nil {
		b.Fatal(err)
	}
	if err := n.rt.StartContainer(ctx, id); err != nil {
		b.Fatal(err)
	}
	return id
}

// flip changes 1% of the pods (at least one): a running flip container exits; an exited
// one is removed and replaced by a running one (the CRI cannot restart a container).
func (n *benchNode) flip(b *testing.B) {
	ctx := context.Background()
	k := max(len(n.pods)/100, 1)
	for j := 0; j < k; j++ {
		p := &n.pods[n.churn]
		n.churn = (n.churn + 1) % len(n.pods)
		st, err := n.rt.ContainerStatus(ctx, p.flipID)
		if err != nil {
			b.Fatal(err)
		}
		if st.State == cri.ContainerRunning {
			if err := n.rt.StopContainer(ctx, p.flipID, 0); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if err := n.rt.RemoveContainer(ctx, p.flipID); err != nil {
			b.Fatal(err)
		}
		p.attempt++
		p.flipID = n.start(b, p, "sidecar", p.attempt)
	}
}

func newBenchPLEG(b *testing.B, rt Runtime, clk *testingclock.FakeClock, pods int) *GenericPLEG {
	b.Helper()
	g, err := NewGenericPLEG(Config{
		Runtime:         rt,
		Cache:           statuscache.New(statuscache.Config{}),
		Clock:           clk,
		ChannelCapacity: 4 * pods, // the first relist reports every container
		Registry:        metrics.NewRegistry(""),
	})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func discard(ch chan *PodLifecycleEvent) int {
	n := 0
	for {
		select {
		case <-ch:
			n++
		default:
			return n
		}
	}
}

// BenchmarkRelist measures one relist including the fake runtime's listing, and for churn
// the status reads of the changed pods. Target at 10,000 pods: <= 2.2ms steady, <= 3.1ms
// churn (half of the upstream GenericPLEG on the same machine).
func BenchmarkRelist(b *testing.B) {
	for _, mode := range []string{"steady", "churn"} {
		sizes := []int{100, 1000, 10000}
		if mode == "churn" {
			sizes = sizes[1:]
		}
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/pods=%d", mode, n), func(b *testing.B) { benchRelist(b, mode, n, false) })
		}
	}
}

// BenchmarkRelistView is BenchmarkRelist with the pods listed through view.View, which
// builds every pod afresh from ListPodSandbox + ListContainers as with a real CRI runtime:
// no pod is the same object twice, so the PLEG compares every pod's containers.
func BenchmarkRelistView(b *testing.B) {
	for _, mode := range []string{"steady", "churn"} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/pods=%d", mode, n), func(b *testing.B) { benchRelist(b, mode, n, true) })
		}
	}
}

func benchRelist(b *testing.B, mode string, n int, viaView bool) {
	ctx := context.Background()
	node := newBenchNode(b, n)
	var rt Runtime = node.rt
	if viaView {
		v, err := view.New(view.Config{Runtime: node.rt, Clock: node.clk})
		if err != nil {
			b.Fatal(err)
		}
		rt = viewRuntime{v}
	}
	g := newBenchPLEG(b, rt, node.clk, n)
	g.Relist(ctx) // every pod is new: report them all once
	if got := discard(g.Watch()); got != 3*n {
		b.Fatalf("first relist sent %d events, want %d", got, 3*n)
	}
	g.Relist(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	events := 0
	for i := 0; i < b.N; i++ {
		if mode == "churn" {
			b.StopTimer()
			node.flip(b)
			b.StartTimer()
		}
		g.Relist(ctx)
		events += discard(g.Watch())
	}
	b.StopTimer()
	if mode == "steady" && events != 0 {
		b.Fatalf("steady relists sent %d events", events)
	}
	if mode == "churn" && events < b.N*max(n/100, 1) {
		b.Fatalf("churn relists sent %d events in %d relists, want >= %d per relist", events, b.N, max(n/100, 1))
	}
}

// BenchmarkFakeListing is the fake runtime's GetPods(all=true) alone, the floor under
// BenchmarkRelist.
func BenchmarkFakeListing(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			node := newBenchNode(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := node.rt.GetPods(ctx, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// replayLister serves one listing over and over, so BenchmarkRelistPLEGOnly measures the
// PLEG's own work: the comparison, with no listing cost.
type replayLister struct {
	*fake.Runtime
	pods []*container.Pod
}

func (r *replayLister) GetPods(context.Context, bool) ([]*container.Pod, error) { return r.pods, nil }

// BenchmarkRelistPLEGOnly is BenchmarkRelist/steady without the listing: the part of a
// relist this package owns.
func BenchmarkRelistPLEGOnly(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("steady/pods=%d", n), func(b *testing.B) {
			node := newBenchNode(b, n)
			pods, err := node.rt.GetPods(ctx, true)
			if err != nil {
				b.Fatal(err)
			}
			g := newBenchPLEG(b, &replayLister{Runtime: node.rt, pods: pods}, node.clk, n)
			g.Relist(ctx)
			discard(g.Watch())
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g.Relist(ctx)
			}
		})
	}
}

// BenchmarkRelistLoopStep is BenchmarkRelist/steady driven as the loop table does, through
// Step: the difference is the cost of running each relist as a task.
func BenchmarkRelistLoopStep(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("steady/pods=%d", n), func(b *testing.B) {
			node := newBenchNode(b, n)
			g := newBenchPLEG(b, node.rt, node.clk, n)
			g.Step(ctx)
			if got := discard(g.Watch()); got != 3*n {
				b.Fatalf("first relist sent %d events, want %d", got, 3*n)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				node.clk.Step(time.Second) // the next relist is due a period after the last
				g.Step(ctx)
			}
			b.StopTimer()
			if g.loop.Running() {
				b.Fatal("a steady relist waited for the runtime")
			}
			if got := discard(g.Watch()); got != 0 {
				b.Fatalf("steady relists sent %d events", got)
			}
		})
	}
}
