package fake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/container"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
	"github.com/minikubelet/minikubelet/pkg/runtime/view"
)

// populate runs n pods with a running sandbox and two running containers each.
func populate(t testing.TB, r *Runtime, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: testImage}, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		cfg := sandboxConfig(uidN(i), nil)
		sb, err := r.RunPodSandbox(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"app", "sidecar"} {
			id, err := r.CreateContainer(ctx, sb, containerConfig(name, "", testImage), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// history runs one scripted session and renders every event and id it produced.
func history(t *testing.T, seed int64) []string {
	r, clk := newRuntime(t, Config{Seed: seed})
	ctx := context.Background()
	s := subscribe(t, r)
	var out []string
	r.AddFault(fault.Spec{Method: "StartContainer", Type: fault.Error, Rate: 0.5})
	for i := 0; i < 5; i++ {
		sb, cfg := runPod(t, r, uidN(i), map[string]string{
			"minikubelet.io/behavior.main": fmt.Sprintf("runFor=%ds,exitCode=%d,stopDelay=2s", 3+i, i%2),
			"minikubelet.io/behavior.init": "oomAfter=500ms",
		})
		out = append(out, "sandbox "+sb)
		for _, c := range []struct{ name, role string }{{"init", ContainerTypeInit}, {"main", ""}} {
			id := createContainer(t, r, sb, cfg, c.name, c.role)
			err := r.StartContainer(ctx, id)
			out = append(out, fmt.Sprintf("container %s start err=%v", id, err != nil))
		}
		clk.Step(700 * time.Millisecond)
	}
	clk.Step(4 * time.Second)
	pods, err := r.GetPods(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		for _, c := range p.Containers {
			if c.State == container.ContainerStateRunning {
				if err := r.StopContainer(ctx, c.ID.ID, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, ev := range s.drain() {
		var states []string
		for _, cs := range ev.ContainersStatuses {
			states = append(states, fmt.Sprintf("%s:%s:%d:%s:%d:%d", cs.ID, cs.State, cs.ExitCode, cs.Reason, cs.StartedAt, cs.FinishedAt))
		}
		out = append(out, fmt.Sprintf("%s %s %d %s [%s]", ev.ContainerEventType, ev.ContainerID, ev.CreatedAt, ev.PodSandboxStatus.IP, strings.Join(states, " ")))
	}
	return out
}

func TestDeterminism(t *testing.T) {
	a, b, c := history(t, 42), history(t, 42), history(t, 43)
	if !reflect.DeepEqual(a, b) {
		for i := range a {
			if i >= len(b) || a[i] != b[i] {
				t.Fatalf("same seed, different history at line %d:\n%s\n%s", i, a[i], b[min(i, len(b)-1)])
			}
		}
		t.Fatalf("same seed, histories of different lengths %d and %d", len(a), len(b))
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds gave the same history (ids and random faults should differ)")
	}
	if len(a) < 30 {
		t.Errorf("history has only %d lines; the script did not run", len(a))
	}
}

// TestConcurrentUse hammers the runtime from many goroutines, as the daemon does: its loop
// runs on the real clock in a goroutine, an event subscriber drains the stream whenever it
// is notified, and the callers' stops wait for the runtime; -race checks the locking, the end
// state checks nothing was lost.
func TestConcurrentUse(t *testing.T) {
	r, err := New(Config{Clock: clock.RealClock{}}) // the real clock, as the daemon
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: testImage}, nil); err != nil {
		t.Fatal(err)
	}
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); runner.NewOwner(clock.RealClock{}, []runner.Loop{loop(r)}, nil).Run(ctx) }()
	go func() {
		defer bg.Done()
		ready := runner.NewSignal()
		stream, err := r.GetContainerEvents(ctx, ready.Notify)
		if err != nil {
			t.Error(err)
			return
		}
		defer stream.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ready.C():
			}
			for {
				if _, ok, _ := stream.Recv(); !ok {
					break
				}
			}
		}
	}()

	const workers, perWorker = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			fail := func(err error) { errs <- err }
			for i := 0; i < perWorker; i++ {
				uid := fmt.Sprintf("w%d-%d", w, i)
				cfg := sandboxConfig(uid, map[string]string{"minikubelet.io/behavior.b": "runFor=1s,stopDelay=5ms"})
				sb, err := r.RunPodSandbox(ctx, cfg)
				if err != nil {
					fail(err)
					return
				}
				var ids []string
				for _, name := range []string{"a", "b"} {
					id, err := r.CreateContainer(ctx, sb, containerConfig(name, "", testImage), cfg)
					if err != nil {
						fail(err)
						return
					}
					if err := r.StartContainer(ctx, id); err != nil {
						fail(err)
						return
					}
					ids = append(ids, id)
				}
				if _, err := r.GetPods(ctx, i%2 == 0); err != nil {
					fail(err)
					return
				}
				if _, err := r.GetPodStatus(ctx, "w0-0", "", ""); err != nil {
					fail(err)
					return
				}
				if err := r.StopContainer(ctx, ids[1], 1); err != nil {
					fail(err)
					return
				}
				if i%2 == 1 {
					if err := r.RemovePodSandbox(ctx, sb); err != nil {
						fail(err)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	pods, err := r.GetPods(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if want := workers * perWorker / 2; len(pods) != want {
		t.Errorf("%d pods left, want %d", len(pods), want)
	}
	cancel()
	bg.Wait()
}

func sortPods(pods []*container.Pod) {
	sort.Slice(pods, func(i, j int) bool { return pods[i].ID < pods[j].ID })
}

// TestGetPodsMatchesView checks the fast GetPods against the view built from the two CRI
// listings, over a randomised mix of pod and container states.
func TestGetPodsMatchesView(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	ctx := context.Background()
	v, err := view.New(view.Config{Runtime: r, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 60; i++ {
		uid := uidN(i % 40) // some pods get a second sandbox
		cfg := sandboxConfig(uid, map[string]string{"minikubelet.io/behavior.b": "runFor=2s"})
		cfg.Metadata.Attempt = uint32(i / 40)
		sb, err := r.RunPodSandbox(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		// Zero to three containers: snapshots of one to four entries (the sized blocks) and,
		// with a second sandbox, more.
		for _, name := range []string{"a", "b", "c"}[:rng.IntN(4)] {
			id := createContainer(t, r, sb, cfg, name, "")
			if rng.IntN(4) > 0 {
				if err := r.StartContainer(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
		}
		switch rng.IntN(5) {
		case 0:
			r.StopPodSandbox(ctx, sb)
		case 1:
			r.RemovePodSandbox(ctx, sb)
		}
		clk.Step(500 * time.Millisecond)
	}
	for _, all := range []bool{true, false} {
		t.Run(fmt.Sprintf("all=%v", all), func(t *testing.T) {
			fast, err := r.GetPods(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			slow, err := v.GetPods(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			sortPods(fast)
			sortPods(slow)
			if len(fast) == 0 {
				t.Fatal("no pods listed")
			}
			if !reflect.DeepEqual(fast, slow) {
				for i := range fast {
					if i < len(slow) && !reflect.DeepEqual(fast[i], slow[i]) {
						t.Fatalf("pod %d differs:\nfast %+v\nview %+v", i, *fast[i], *slow[i])
					}
				}
				t.Fatalf("GetPods: %d pods, view: %d pods", len(fast), len(slow))
			}
		})
	}
	// GetPodStatus reads each pod, and a pod the runtime never had, as the view does.
	for i := 0; i <= 40; i++ {
		uid := types.UID(uidN(i))
		fast, err := r.GetPodStatus(ctx, uid, "name", "ns")
		if err != nil {
			t.Fatal(err)
		}
		slow, err := v.GetPodStatus(ctx, uid, "name", "ns")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("GetPodStatus(%s):\nfast %+v\nview %+v", uid, *fast, *slow)
		}
	}
}

// TestGetPodsRunningOnly: GetPods(all=false) lists only ready sandboxes and running
// containers, and no pod at all when nothing runs.
func TestGetPodsRunningOnly(t *testing.T) {
	r, _ := newRuntime(t, Config{})
	ctx := context.Background()
	sb1, cfg1 := runPod(t, r, "u1", nil)
	a := startContainer(t, r, sb1, cfg1, "a", "")
	createContainer(t, r, sb1, cfg1, "b", "")
	sb2, cfg2 := runPod(t, r, "u2", nil)
	c := startContainer(t, r, sb2, cfg2, "c", "")
	listed := func() string {
		pods, err := r.GetPods(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods {
			var ids []string
			for _, x := range append(append([]*container.Container{}, p.Sandboxes...), p.Containers...) {
				ids = append(ids, x.ID.ID)
			}
			out = append(out, string(p.ID)+"="+strings.Join(ids, "+"))
		}
		return strings.Join(out, " ")
	}
	steps := []struct {
		name string
		act  func()
		want string
	}{
		{"both running", func() {}, "u1=" + sb1 + "+" + a + " u2=" + sb2 + "+" + c},
		{"u1's sandbox stopped", func() { r.StopPodSandbox(ctx, sb1) }, "u2=" + sb2 + "+" + c},
		{"nothing runs", func() { r.StopPodSandbox(ctx, sb2) }, ""},
	}
	for _, s := range steps {
		s.act()
		if got := listed(); got != s.want {
			t.Errorf("%s: GetPods(all=false) = %q, want %q", s.name, got, s.want)
		}
	}
}

// invalidate marks every k-th pod changed, as if its containers had changed state.
func (r *Runtime) invalidate(k int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < len(r.pods); i += k {
		r.pods[i].snap = nil
	}
}

// TestListingAllocations: each listing is one allocation; a relist of unchanged pods is one
// allocation however many pods there are, and rebuilding changed pods costs a constant
// number of allocations per pod.
func TestListingAllocations(t *testing.T) {
	ctx := context.Background()
	allocs := func(n int, fn func(r *Runtime)) float64 {
		r, _ := newRuntime(t, Config{})
		populate(t, r, n)
		fn(r) // warm the snapshots
		return testing.AllocsPerRun(5, func() { fn(r) })
	}
	if a := allocs(1000, func(r *Runtime) { r.ListPodSandbox(ctx, nil) }); a != 1 {
		t.Errorf("ListPodSandbox of 1000 pods: %v allocations, want 1", a)
	}
	if a := allocs(1000, func(r *Runtime) { r.ListContainers(ctx, nil) }); a != 1 {
		t.Errorf("ListContainers of 2000 containers: %v allocations, want 1", a)
	}
	warm := func(r *Runtime) { r.GetPods(ctx, true) }
	if small, large := allocs(1000, warm), allocs(10000, warm); small != 1 || large != 1 {
		t.Errorf("GetPods of unchanged pods: %v allocations at 1000 pods, %v at 10000; want 1", small, large)
	}
	cold := func(r *Runtime) { r.invalidate(1); r.GetPods(ctx, true) }
	small, large := allocs(1000, cold), allocs(10000, cold)
	if perPod := (large - 1) / 10000; perPod != (small-1)/1000 || perPod != 1 {
		t.Errorf("GetPods rebuilding every pod: %v allocations at 1000 pods, %v at 10000; want 1 per pod", small, large)
	}
	running := func(r *Runtime) { r.GetPods(ctx, false) }
	if small, large := allocs(1000, running), allocs(10000, running); small != 4 || large != 4 {
		t.Errorf("GetPods(all=false): %v allocations at 1000 pods, %v at 10000; want 4", small, large)
	}
	// The generic view over any CRI runtime is linear at worst.
	viewAllocs := func(n int) float64 {
		r, clk := newRuntime(t, Config{})
		populate(t, r, n)
		v, _ := view.New(view.Config{Runtime: r, Clock: clk})
		return testing.AllocsPerRun(3, func() { v.GetPods(ctx, true) })
	}
	vs, vl := viewAllocs(1000), viewAllocs(10000)
	if vl > 10*vs || vl/10000 > 1 {
		t.Errorf("view GetPods allocations: %v at 1000 pods, %v at 10000; want at most linear, under 1 per pod", vs, vl)
	}
}

// TestGetPodsSnapshots: an unchanged pod is shared between calls; a changed pod is a new
// value, and the one returned before keeps its old state (the PLEG compares the two).
func TestGetPodsSnapshots(t *testing.T) {
	r, clk := newRuntime(t, Config{})
	ctx := context.Background()
	sb1, cfg1 := runPod(t, r, "u1", annotate("c", "runFor=10s"))
	c1 := startContainer(t, r, sb1, cfg1, "c", "")
	sb2, cfg2 := runPod(t, r, "u2", nil)
	startContainer(t, r, sb2, cfg2, "c", "")
	before, err := r.GetPods(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Second)
	after, err := r.GetPods(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if after[1] != before[1] {
		t.Error("unchanged pod u2 was rebuilt")
	}
	if after[0] == before[0] {
		t.Fatal("pod u1 changed but the same snapshot was returned")
	}
	if got := before[0].Containers[0].State; got != container.ContainerStateRunning {
		t.Errorf("the earlier snapshot of u1 was modified: container %s", got)
	}
	if c := after[0].FindContainerByID(container.ContainerID{Type: container.RuntimeType, ID: c1}); c == nil || c.State != container.ContainerStateExited {
		t.Errorf("new snapshot of u1: container %+v, want exited", c)
	}
}

func BenchmarkListPods(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			r, _ := newRuntime(b, Config{})
			populate(b, r, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pods, err := r.GetPods(ctx, true)
				if err != nil || len(pods) != n {
					b.Fatalf("GetPods = %d pods, %v", len(pods), err)
				}
			}
		})
	}
}

// BenchmarkListPodsChurn relists while a share of the pods changed since the last relist.
func BenchmarkListPodsChurn(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, every := range []int{100, 1} {
			b.Run(fmt.Sprintf("pods=%d/changed=%d%%", n, 100/every), func(b *testing.B) {
				r, _ := newRuntime(b, Config{})
				populate(b, r, n)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					r.invalidate(every)
					if _, err := r.GetPods(ctx, true); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkListRunningPods is GetPods(all=false), which lists afresh every time.
func BenchmarkListRunningPods(b *testing.B) {
	r, _ := newRuntime(b, Config{})
	populate(b, r, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.GetPods(ctx, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListPodsView is the same listing through view.View (ListPodSandbox +
// ListContainers + grouping), for comparison with the direct path.
func BenchmarkListPodsView(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			r, clk := newRuntime(b, Config{})
			populate(b, r, n)
			v, _ := view.New(view.Config{Runtime: r, Clock: clk})
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := v.GetPods(ctx, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkListContainers(b *testing.B) {
	r, _ := newRuntime(b, Config{})
	populate(b, r, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.ListContainers(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetPodStatus(b *testing.B) {
	r, _ := newRuntime(b, Config{})
	populate(b, r, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.GetPodStatus(ctx, "uid-05000", "", ""); err != nil {
			b.Fatal(err)
		}
	}
}
