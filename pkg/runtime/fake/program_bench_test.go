package fake

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
)

// BenchmarkTickLoop runs 10,000 containers each running the tick loop of a manifest
// (`while true; do echo tick; sleep 5; done`) for a minute of virtual time, and reports
// the memory each container's simulated process costs and the CPU a virtual second of
// them all costs: what keeps a sleeping program cheap.
func BenchmarkTickLoop(b *testing.B) {
	const n = 10000
	for i := 0; i < b.N; i++ {
		r, clk := newRuntime(b, Config{})
		ctx := context.Background()
		if _, err := r.PullImage(ctx, cri.ImageSpec{Image: "busybox:1.36"}, nil); err != nil {
			b.Fatal(err)
		}
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		for j := 0; j < n; j++ {
			sb, cfg := runPod(b, r, uidN(j), nil)
			cc := containerConfig("app", "", "busybox:1.36")
			cc.Command = []string{"sh", "-c", "while true; do echo tick; sleep 5; done"}
			id, err := r.CreateContainer(ctx, sb, cc, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if err := r.StartContainer(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		run(b, r, clk, time.Minute)
		perVirtualSecond := time.Since(start) / 60
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(r) // the containers are what is measured: nothing else holds them now that they sleep without goroutines
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n, "heap-B/container")
		b.ReportMetric(float64(after.StackInuse-before.StackInuse)/n, "stack-B/container")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines")
		b.ReportMetric(float64(perVirtualSecond.Microseconds())/1000, "ms/virtual-s")
	}
}

// BenchmarkNginxRedis runs 2,000 pods of an nginx and a redis container, each running its
// image's own entrypoint (docker-entrypoint.sh, then the server it execs), for a minute of
// virtual time, and reports what a pod of the two costs once they serve: the pods of
// make bench's row 8.
func BenchmarkNginxRedis(b *testing.B) {
	const n = 2000
	images := []string{"nginx:1.27", "redis:7.2"}
	for i := 0; i < b.N; i++ {
		r, clk := newRuntime(b, Config{})
		ctx := context.Background()
		for _, image := range images {
			if _, err := r.PullImage(ctx, cri.ImageSpec{Image: image}, nil); err != nil {
				b.Fatal(err)
			}
		}
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		start := time.Now()
		for j := 0; j < n; j++ {
			sb, cfg := runPod(b, r, uidN(j), nil)
			for k, image := range images {
				id, err := r.CreateContainer(ctx, sb, containerConfig(fmt.Sprintf("c%d", k), "", image), cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.StartContainer(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		}
		run(b, r, clk, time.Minute)
		elapsed := time.Since(start)
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(r)
		procs := 0
		for _, c := range r.containers {
			if c.m != nil {
				procs += c.m.Running()
			}
		}
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n, "heap-B/pod")
		b.ReportMetric(float64(after.StackInuse-before.StackInuse)/n, "stack-B/pod")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines")
		b.ReportMetric(float64(procs)/n, "procs/pod")
		b.ReportMetric(float64(elapsed.Milliseconds())/n, "ms/pod")
	}
}
