package kubelet

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/runner"
)

// The scale benchmarks (make scale) compare the Generic and the Evented PLEG with
// 100-5000 static pods. Each steps the kubelet's loop table single-threaded on a fake clock,
// as simulate mode does (see scaleSim): the same loops at the same periods as the daemon, so
// ns/op is the CPU the daemon would spend, without the scheduling noise of goroutines:
//
//   - BenchmarkStartAll: manifests written, until every pod is Running (virtual-s: how long
//     that takes on the kubelet's clock).
//   - BenchmarkSteadyState: one virtual minute with every pod Running.
//   - BenchmarkRemoveAll: every manifest removed, until no pod, container or worker is left.
//
// pleg.channelCapacity is raised to 4 x pods: a mass start sends about 2 events per pod at
// once, which overflows the default 1000 (as in the kubelet: see docs/pleg.md).

var scalePodCounts = []int{100, 1000, 5000}

var plegModes = []struct {
	name    string
	evented bool
}{{"generic", false}, {"evented", true}}

func BenchmarkStartAll(b *testing.B) {
	forEachScale(b, func(b *testing.B, n int, evented bool) {
		var virtual time.Duration
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s := newScaleSim(b, n, evented)
			s.writeManifests()
			b.StartTimer()
			virtual += s.runUntil("every pod Running", 10*time.Minute, s.allRunning)
			b.StopTimer()
			s.stop()
			b.StartTimer()
		}
		b.ReportMetric(virtual.Seconds()/float64(b.N), "virtual-s")
	})
}

// BenchmarkBurst writes 1,000 manifests at once into a running kubelet and runs it until
// every pod is Running, with the PLEG's event channel at its default (1000, upstream's
// plegChannelCapacity) and raised to 4 x pods. virtual-s is how long that takes on the
// kubelet's clock, which is wall time in the daemon as long as ns/op (the CPU it costs) is
// below it; dropped-events is kubelet_pleg_discard_events. With the default channel a
// mass start overflows it and the pods whose events were dropped wait for their periodic
// resync (syncFrequency, 1m), as in the kubelet: see docs/scale.md.
func BenchmarkBurst(b *testing.B) {
	quietKlog(b)
	const n = 1000
	for _, c := range []struct {
		name     string
		capacity int
	}{{"channelCapacity=default", 0}, {"channelCapacity=4000", 4 * n}} {
		b.Run(fmt.Sprintf("pods=%d/%s", n, c.name), func(b *testing.B) {
			var virtual time.Duration
			var dropped float64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := newScaleSimCapacity(b, n, false, c.capacity)
				s.run(time.Second) // the kubelet is up and idle
				s.step = 100 * time.Millisecond
				s.writeManifests()
				b.StartTimer()
				virtual += s.runUntil("every pod Running", 10*time.Minute, s.allRunning)
				b.StopTimer()
				dropped += s.counter("pleg_discard_events")
				s.stop()
				b.StartTimer()
			}
			b.ReportMetric(virtual.Seconds()/float64(b.N), "virtual-s")
			b.ReportMetric(dropped/float64(b.N), "dropped-events")
		})
	}
}

func BenchmarkSteadyState(b *testing.B) {
	forEachScale(b, func(b *testing.B, n int, evented bool) {
		s := newScaleSim(b, n, evented)
		defer s.stop()
		s.writeManifests()
		s.runUntil("every pod Running", 10*time.Minute, s.allRunning)
		// Past the first resync of every pod, so the minutes measured are alike.
		s.run(2 * time.Minute)
		relists, syncs := s.relists(), s.syncs()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			s.run(time.Minute)
		}
		b.StopTimer()
		if got := s.countRunning(); got != n {
			b.Fatalf("%d of %d pods Running after the steady state", got, n)
		}
		b.ReportMetric((s.relists()-relists)/float64(b.N), "relists/op")
		b.ReportMetric((s.syncs()-syncs)/float64(b.N), "syncs/op")
	})
}

func BenchmarkRemoveAll(b *testing.B) {
	forEachScale(b, func(b *testing.B, n int, evented bool) {
		var virtual time.Duration
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			s := newScaleSim(b, n, evented)
			s.writeManifests()
			s.runUntil("every pod Running", 10*time.Minute, s.allRunning)
			s.removeManifests()
			b.StartTimer()
			virtual += s.runUntil("every pod gone", 10*time.Minute, s.allGone)
			b.StopTimer()
			s.stop()
			b.StartTimer()
		}
		b.ReportMetric(virtual.Seconds()/float64(b.N), "virtual-s")
	})
}

func forEachScale(b *testing.B, fn func(b *testing.B, n int, evented bool)) {
	quietKlog(b)
	for _, mode := range plegModes {
		for _, n := range scalePodCounts {
			b.Run(fmt.Sprintf("pleg=%s/pods=%d", mode.name, n), func(b *testing.B) { fn(b, n, mode.evented) })
		}
	}
}

// quietKlog discards the global klog output until b ends: the daemon's messages (and their
// formatting cost) stay, the benchmark output stays readable.
func quietKlog(b *testing.B) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	saved := map[string]string{}
	for name, val := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		saved[name] = fs.Lookup(name).Value.String()
		if err := fs.Set(name, val); err != nil {
			b.Fatalf("set klog flag %s: %v", name, err)
		}
	}
	klog.SetOutput(io.Discard)
	b.Cleanup(func() {
		klog.Flush()
		for name, val := range saved {
			_ = fs.Set(name, val)
		}
		klog.SetOutput(os.Stderr)
	})
}

// scaleSim steps a kubelet's loop table on a fake clock (runner.Sim), as simulate mode does.
type scaleSim struct {
	tb  testing.TB
	ctx context.Context
	clk *clocktesting.FakeClock
	k   *Kubelet
	sim *runner.Sim
	dir string
	n   int
	// containers per pod (writeManifests): 1 unless set
	containers int
	// step is runUntil's resolution: 1s unless set
	step time.Duration
	// extra is added to every container of writeManifests (a command, say)
	extra string
	// image of every container: busybox unless set
	image string
}

func newScaleSim(tb testing.TB, n int, evented bool) *scaleSim {
	return newScaleSimCapacity(tb, n, evented, 4*n)
}

// newScaleSimCapacity is newScaleSim with pleg.channelCapacity set to capacity (0: the
// default, 1000, as upstream).
func newScaleSimCapacity(tb testing.TB, n int, evented bool, capacity int) *scaleSim {
	tb.Helper()
	dir := tb.TempDir()
	var flags []string
	if evented {
		flags = append(flags, "--feature-gates=EventedPLEG=true")
	}
	cfg, gate := scaleConfig(tb, dir, n, flags...)
	if capacity > 0 {
		cfg.Simulator.PLEG.ChannelCapacity = capacity
	}
	clk := clocktesting.NewFakeClock(epoch)
	k, err := New(Config{Config: cfg, Gate: gate, Clock: clk})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	ctx := klog.NewContext(context.Background(), klog.Background())
	k.Start(ctx)
	return &scaleSim{tb: tb, ctx: ctx, clk: clk, k: k, sim: runner.NewSim(clk, k.Loops()), dir: dir, n: n}
}

func (s *scaleSim) stop() { s.k.Stop() }

func (s *scaleSim) manifest(i int) string {
	return filepath.Join(s.dir, fmt.Sprintf("pod-%05d.yaml", i))
}

// writeManifests writes the n pod manifests: each a container with requests, as a
// scale test of a node would.
func (s *scaleSim) writeManifests() {
	for i := 0; i < s.n; i++ {
		name := fmt.Sprintf("pod-%05d", i)
		images := strings.Split(s.image, ",") // container c runs images[c%len]
		if s.image == "" {
			images = []string{"busybox"}
		}
		extra := s.extra + withRequests("10m", "16Mi")
		for c := 1; c < s.containers; c++ {
			extra += fmt.Sprintf("  - name: side-%d\n    image: %s\n", c, images[c%len(images)]) + s.extra + withRequests("10m", "16Mi")
		}
		if err := os.WriteFile(s.manifest(i), []byte(podManifest(name, images[0], extra)), 0o644); err != nil {
			s.tb.Fatal(err)
		}
	}
	// As the daemon's fsnotify watch does.
	s.k.FileSource().Trigger()
}

func (s *scaleSim) removeManifests() {
	for i := 0; i < s.n; i++ {
		if err := os.Remove(s.manifest(i)); err != nil {
			s.tb.Fatal(err)
		}
	}
	s.k.FileSource().Trigger()
}

// run steps the loop table for d of virtual time.
func (s *scaleSim) run(d time.Duration) {
	if err := s.sim.RunUntil(s.ctx, s.clk.Now().Add(d), nil); err != nil {
		s.tb.Fatal(err)
	}
}

// runUntil runs a virtual second (or s.step) at a time until cond holds and returns the
// virtual time it took; it fails after limit.
func (s *scaleSim) runUntil(what string, limit time.Duration, cond func() bool) time.Duration {
	start := s.clk.Now()
	for !cond() {
		if s.clk.Since(start) > limit {
			s.tb.Fatalf("%s did not happen within %v of virtual time: %d pods Running", what, limit, s.countRunning())
		}
		step := s.step
		if step == 0 {
			step = time.Second
		}
		s.run(step)
	}
	return s.clk.Since(start)
}

func (s *scaleSim) countRunning() int {
	n := 0
	for _, e := range s.k.pods.entries() {
		if phase, ok := s.k.StatusManager().GetPodPhase(e.pod.UID); ok && phase == v1.PodRunning {
			n++
		}
	}
	return n
}

func (s *scaleSim) allRunning() bool { return s.countRunning() == s.n }

// allGone: no desired pod, no running container or sandbox, no termination unfinished.
func (s *scaleSim) allGone() bool {
	if len(s.k.pods.entries()) > 0 || s.k.PodWorkers().UnfinishedTerminations() > 0 {
		return false
	}
	pods, err := s.k.Runtime().GetPods(s.ctx, false)
	if err != nil {
		s.tb.Fatal(err)
	}
	for _, p := range pods {
		if isRunningRuntimePod(p) {
			return false
		}
	}
	return true
}

// relists is pleg_relist_duration_seconds' count; syncs is pod_worker_duration_seconds'.
func (s *scaleSim) relists() float64 { return s.histogramCount("pleg_relist_duration_seconds") }
func (s *scaleSim) syncs() float64   { return s.histogramCount("pod_worker_duration_seconds") }

// counter sums a counter's series; histogramCount sums a histogram's sample counts.
func (s *scaleSim) counter(name string) float64 {
	return s.sum(name, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

func (s *scaleSim) histogramCount(name string) float64 {
	return s.sum(name, func(m *dto.Metric) float64 { return float64(m.GetHistogram().GetSampleCount()) })
}

func (s *scaleSim) sum(name string, value func(*dto.Metric) float64) float64 {
	families, err := s.k.Registry().Gather()
	if err != nil {
		s.tb.Fatal(err)
	}
	var total float64
	for _, f := range families {
		if f.GetName() == s.k.Registry().Name(name) {
			for _, m := range f.GetMetric() {
				total += value(m)
			}
		}
	}
	return total
}

// BenchmarkReadEndpoints serves GET /pods, /metrics and /node over loopback HTTP with
// 1,000 and 10,000 pods of two containers Running (the bar: under 50ms each at
// 10,000, aim 20ms). heap-growth-B/op is what the live heap grew by per request, measured
// after a GC: /pods keeps one encoding per pod, made by the first request (untimed), so
// the requests that follow must not grow it.
func BenchmarkReadEndpoints(b *testing.B) {
	quietKlog(b)
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			s := newScaleSim(b, n, false)
			defer s.stop()
			s.containers = 2
			s.writeManifests()
			s.runUntil("every pod Running", 10*time.Minute, s.allRunning)
			srv := httptest.NewServer(s.k.Server().Handler()) // 127.0.0.1
			defer srv.Close()
			get := func(b *testing.B, path string) int64 {
				resp, err := srv.Client().Get(srv.URL + path)
				if err != nil {
					b.Fatal(err)
				}
				defer resp.Body.Close()
				size, err := io.Copy(io.Discard, resp.Body)
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s = %d, %v", path, resp.StatusCode, err)
				}
				return size
			}
			for _, path := range []string{"/pods", "/metrics", "/node"} {
				b.Run(strings.TrimPrefix(path, "/"), func(b *testing.B) {
					get(b, path) // the first /pods encodes every pod
					var before, after goruntime.MemStats
					goruntime.GC()
					goruntime.ReadMemStats(&before)
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						b.SetBytes(get(b, path))
					}
					b.StopTimer()
					goruntime.GC()
					goruntime.ReadMemStats(&after)
					b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heap-growth-B/op")
				})
			}
		})
	}
}

// BenchmarkStatsEndpoints serves GET /stats/summary and GET /metrics/resource with 1,000 pods
// Running (the bar: under 50ms each).
func BenchmarkStatsEndpoints(b *testing.B) {
	quietKlog(b)
	const n = 1000
	s := newScaleSim(b, n, false)
	defer s.stop()
	s.writeManifests()
	s.runUntil("every pod Running", 10*time.Minute, s.allRunning)
	s.run(time.Minute)
	handler := s.k.Server().Handler()
	for _, path := range []string{"/stats/summary", "/metrics/resource"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w := httptest.NewRecorder()
				handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
				if w.Code != http.StatusOK || w.Body.Len() < 1000*n/10 {
					b.Fatalf("GET %s = %d, %d bytes", path, w.Code, w.Body.Len())
				}
				b.SetBytes(int64(w.Body.Len()))
			}
		})
	}
}

// BenchmarkLiveHeap is what a node keeps in memory per pod: 10,000 pods of two containers
// stepped on a fake clock until all are Running and two virtual minutes more (past the
// first resync), then the live heap after a GC. It is the part of bench rows 1 and 7's RSS
// that the code decides (the garbage collector's headroom, GOGC, and the Go runtime's own
// make the rest). Two kinds of container: busybox running `sleep infinity` (a simulated
// program, parked), and an image the simulator has no program for (bench row 1's), which
// runs until stopped.
//
// -live-heap-profile FILE writes the heap profile at that instant (before the node stops);
// pprof's inuse_space says where the memory is.
func BenchmarkLiveHeap(b *testing.B) {
	quietKlog(b)
	const n = 10000
	for _, c := range []struct{ name, image, extra string }{
		{"sleep", "busybox", sleeper},
		{"uncatalogued", "ghcr.io/minikubelet/scale-app:1.0", ""},
		{"nginx+redis", "nginx:1.27,redis:7.2", ""}, // bench row 8's pods
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s := newScaleSim(b, n, false)
				s.containers, s.image, s.extra = 2, c.image, c.extra
				s.writeManifests()
				s.runUntil("every pod Running", 10*time.Minute, s.allRunning)
				s.run(2 * time.Minute)
				goruntime.GC()
				var m goruntime.MemStats
				goruntime.ReadMemStats(&m)
				b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "live-MiB")
				b.ReportMetric(float64(m.HeapAlloc)/n, "live-B/pod")
				if *liveHeapProfile != "" {
					writeHeapProfile(b, strings.Replace(*liveHeapProfile, ".pprof", "-"+c.name+".pprof", 1))
				}
				goruntime.KeepAlive(s)
				s.stop()
			}
		})
	}
}

var liveHeapProfile = flag.String("live-heap-profile", "", "BenchmarkLiveHeap writes the heap profile of the running node here")

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}
