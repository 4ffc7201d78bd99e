package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runner"
)

// BenchmarkExitToSync measures, on the real clock with the loops running as goroutines (as
// the daemon runs them), how long a container's exit takes to reach its pod worker: from
// the runtime step that stops the container (and sends its event) to the pod worker's next
// "SyncPod enter". 1,000 pods each run one container that exits on its own (runFor,
// staggered: one exit every exitSpacing, restartPolicy Never). The bars: the Evented
// PLEG under 1 ms at p99; the Generic PLEG within its relist period (1 s) + 5 ms, since it
// only sees an exit at its next relist.
//
// It also reports due-p50/due-p99, counted from the instant each exit was due: on the real
// clock the runtime's loop wakes for it late by the Go timer's wake-up (an idle Go process
// sleeps in epoll with millisecond timeouts; about 0.6 ms at p50 on a 2-core VM), which is
// the simulated container's lateness, not the PLEG's.
//
// One iteration is a whole run (about 25 s); run it with -benchtime=1x.
// exitSpacing: 50 exits per relist period. At one exit every 5 ms (200 per relist) the
// Generic PLEG's p99 is about 1016 ms: the syncs of each relist's 200 exits and of the 200
// pods it lets terminate take about 45 ms together on 2 cores (docs/scale.md).
const exitSpacing = 20 * time.Millisecond

func BenchmarkExitToSync(b *testing.B) {
	quietKlog(b) // a klog line inside a result line hides that run from make bench
	const n = 1000
	for _, mode := range plegModes {
		b.Run(fmt.Sprintf("pleg=%s/pods=%d", mode.name, n), func(b *testing.B) {
			var all, fromDue []time.Duration
			for i := 0; i < b.N; i++ {
				exit, due := exitToSync(b, n, mode.evented)
				all, fromDue = append(all, exit...), append(fromDue, due...)
			}
			slices.Sort(all)
			slices.Sort(fromDue)
			b.ReportMetric(ms(quantile(all, 0.50)), "p50-ms")
			b.ReportMetric(ms(quantile(all, 0.90)), "p90-ms")
			b.ReportMetric(ms(quantile(all, 0.99)), "p99-ms")
			b.ReportMetric(ms(all[len(all)-1]), "max-ms")
			b.ReportMetric(ms(quantile(fromDue, 0.50)), "due-p50-ms")
			b.ReportMetric(ms(quantile(fromDue, 0.99)), "due-p99-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// exitToSync runs n pods on the real clock until every container exited and was synced,
// and returns each pod's exit-to-sync latency, from the runtime's exit and from its due instant.
func exitToSync(b *testing.B, n int, evented bool) (exit, due []time.Duration) {
	b.StopTimer()
	defer b.StartTimer()
	dir := b.TempDir()
	var flags []string
	if evented {
		flags = append(flags, "--feature-gates=EventedPLEG=true")
	}
	cfg, gate := scaleConfig(b, dir, n, flags...)
	cfg.Simulator.PLEG.ChannelCapacity = max(cfg.Simulator.PLEG.ChannelCapacity, 4*n)
	clk := clock.RealClock{}
	k, err := New(Config{Config: cfg, Gate: gate, Clock: clk})
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	syncs := &syncRecorder{clk: clk, at: map[types.UID][]time.Time{}}
	ctx := klog.NewContext(context.Background(), logr.New(syncs))
	loops := runner.NewGroup(ctx)
	k.Start(loops.Context())
	table := k.Loops()
	for i := range table {
		if table[i].Name == "runtime" {
			table[i].Step = syncs.recordRuntimeSteps(table[i].Step)
		}
	}
	loops.Go("node", runner.NewOwner(clk, table, nil).Run)
	defer func() {
		loops.Stop()
		loops.Wait()
		k.Stop()
	}()

	for i := 0; i < n; i++ {
		name := fmt.Sprintf("pod-%05d", i)
		runFor := 5*time.Second + time.Duration(i)*exitSpacing
		extra := "  restartPolicy: Never\n"
		manifest := podManifest(name, "busybox", withRequests("10m", "16Mi")+extra)
		manifest = manifest[:len("apiVersion: v1\nkind: Pod\nmetadata:\n")] +
			fmt.Sprintf("  annotations:\n    minikubelet.io/behavior.main: runFor=%s\n", runFor) +
			manifest[len("apiVersion: v1\nkind: Pod\nmetadata:\n"):]
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(manifest), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	k.FileSource().Trigger()
	b.StartTimer()

	// Wait until every container exited, looking rarely and cheaply (a listing holds the
	// runtime's lock, which the syncs being measured need), then pair exits with syncs once
	// the last exit had time to be synced.
	deadline := clk.Now().Add(time.Minute)
	for {
		<-clk.After(500 * time.Millisecond)
		if exited(b, k.Runtime()) == n {
			break
		}
		if clk.Now().After(deadline) {
			b.Fatalf("after a minute, %d of %d containers exited", exited(b, k.Runtime()), n)
		}
	}
	for {
		<-clk.After(1500 * time.Millisecond) // past the generic PLEG's next relist
		exit, due, done := syncs.latencies(b, k.Runtime(), n)
		if done {
			return exit, due
		}
		if clk.Now().After(deadline) {
			b.Fatalf("after a minute, %d of %d exits were synced", len(exit), n)
		}
	}
}

func exited(b *testing.B, rt interface {
	ListContainers(context.Context, *cri.ContainerFilter) ([]cri.Container, error)
}) int {
	state := cri.ContainerExited
	cs, err := rt.ListContainers(context.Background(), &cri.ContainerFilter{State: &state})
	if err != nil {
		b.Fatal(err)
	}
	return len(cs)
}

// syncRecorder is a logr sink that keeps when each pod's "SyncPod enter" (V(4)) was logged
// and drops everything else: the measurement needs no hook in the kubelet.
type syncRecorder struct {
	clk clock.Clock
	mu  sync.Mutex
	at  map[types.UID][]time.Time
	// steps: when each step of the runtime's loop began, in order. A container's
	// FinishedAt is the instant its exit was due; the runtime makes it happen (and sends its
	// event) at the first step at or after it, which on the real clock is late by the Go
	// timer's wake-up (about 0.6 ms at p50 on a 2-core VM, since an idle Go process sleeps in
	// epoll with millisecond timeouts).
	steps []time.Time
}

// recordRuntimeSteps wraps the runtime loop's step to note when each step begins.
func (s *syncRecorder) recordRuntimeSteps(step func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		now := s.clk.Now()
		s.mu.Lock()
		s.steps = append(s.steps, now)
		s.mu.Unlock()
		step(ctx)
	}
}

func (s *syncRecorder) Init(logr.RuntimeInfo)          {}
func (s *syncRecorder) Enabled(level int) bool         { return level <= 4 }
func (s *syncRecorder) Error(error, string, ...any)    {}
func (s *syncRecorder) WithValues(...any) logr.LogSink { return s }
func (s *syncRecorder) WithName(string) logr.LogSink   { return s }
func (s *syncRecorder) Info(_ int, msg string, kv ...any) {
	if msg != "SyncPod enter" {
		return
	}
	now := s.clk.Now()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "podUID" {
			uid, _ := kv[i+1].(types.UID)
			s.mu.Lock()
			s.at[uid] = append(s.at[uid], now)
			s.mu.Unlock()
		}
	}
}

// latencies pairs every exited container's exit with its pod's first sync at or after it,
// measured from the runtime step that made the exit happen (exit) and from the instant it was
// due (due). done: all n exited and were synced.
func (s *syncRecorder) latencies(b *testing.B, rt interface {
	ListContainers(context.Context, *cri.ContainerFilter) ([]cri.Container, error)
	ContainerStatus(context.Context, string) (*cri.ContainerStatus, error)
}, n int) (exit, due []time.Duration, done bool) {
	ctx := context.Background()
	cs, err := rt.ListContainers(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		if c.State != cri.ContainerExited {
			continue
		}
		st, err := rt.ContainerStatus(ctx, c.ID)
		if err != nil {
			b.Fatal(err)
		}
		dueAt := time.Unix(0, st.FinishedAt)
		uid := types.UID(c.Labels["io.kubernetes.pod.uid"])
		for _, at := range s.at[uid] {
			if at.Before(dueAt) {
				continue
			}
			// The runtime applies due transitions at its loop's step and at any call (which
			// first brings its state up to now); when a call got there before the step, the
			// exit is counted from its due instant instead (which can only count more).
			exitAt := dueAt
			if i, _ := slices.BinarySearchFunc(s.steps, dueAt, time.Time.Compare); i < len(s.steps) && !s.steps[i].After(at) {
				exitAt = s.steps[i]
			}
			exit = append(exit, at.Sub(exitAt))
			due = append(due, at.Sub(dueAt))
			break
		}
	}
	return exit, due, len(exit) == n
}
