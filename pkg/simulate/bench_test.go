package simulate

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// densityScenario is a node of pods pods for one virtual hour: 8 in 10 long-running, 1 that
// crash-loop, 10 jobs that run 30s and succeed; with expectations checked at the end.
func densityScenario(pods int) string {
	var b strings.Builder
	b.WriteString("name: density\nduration: 1h\n")
	if pods > 100 {
		// Room for every pod: maxPods (110 by default) and the machine.
		fmt.Fprintf(&b, "args: [\"--max-pods=%d\"]\n", pods+10)
	}
	b.WriteString("manifests:\n")
	for i := 0; i < pods; i++ {
		switch {
		case i%10 == 1:
			fmt.Fprintf(&b, "  crash%03d.yaml: |\n    apiVersion: v1\n    kind: Pod\n    metadata: {name: crash%03d, annotations: {minikubelet.io/behavior.main: \"runFor=5s,exitCode=1\"}}\n    spec: {containers: [{name: main, image: busybox}]}\n", i, i)
		case i%10 == 2:
			fmt.Fprintf(&b, "  job%03d.yaml: |\n    apiVersion: v1\n    kind: Pod\n    metadata: {name: job%03d, annotations: {minikubelet.io/behavior.main: \"runFor=30s\"}}\n    spec: {restartPolicy: OnFailure, containers: [{name: main, image: busybox}]}\n", i, i)
		default:
			fmt.Fprintf(&b, "  web%03d.yaml: |\n    apiVersion: v1\n    kind: Pod\n    metadata: {name: web%03d}\n    spec: {containers: [{name: app, image: nginx}, {name: side, image: envoyproxy/envoy:v1.30.1}]}\n", i, i)
		}
	}
	b.WriteString(`steps:
- at: 59m
  expect:
    node: {condition: Ready, status: "True"}
    pod: {name: web000-node, phase: Running, ready: true}
- at: 59m
  expect:
    pod: {name: job002-node, phase: Succeeded}
- at: 59m
  expect:
    pod: {name: crash001-node, restarts: ">=10", containerState: {name: main, state: waiting, reason: CrashLoopBackOff}}
`)
	return b.String()
}

// BenchmarkSimulate runs one virtual hour of a 100-pod and of a 1,000-pod node (a tenth
// crash-looping, a tenth jobs, the rest two-container pods that run) and checks the
// scenario's expectations. The bars on 2 cores: 100 pods under 5 s of wall time (aim 1 s),
// 1,000 pods under 30 s.
func BenchmarkSimulate(b *testing.B) {
	for _, pods := range []int{100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			sc, err := Parse([]byte(densityScenario(pods)))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				res, err := Run(context.Background(), sc, Options{Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				if !res.OK() {
					var sb strings.Builder
					_ = res.WriteText(&sb)
					lines := strings.Split(sb.String(), "\n")
					b.Fatalf("expectations failed:\n%s", strings.Join(lines[max(0, len(lines)-6):], "\n"))
				}
				b.ReportMetric(float64(len(res.Timeline)), "timeline-lines")
			}
		})
	}
}

// BenchmarkSimulateMetricsOut is BenchmarkSimulate with --metrics-out at the default 15s:
// 241 scrapes of every series of the 100-pod node (the issue: an hour-long incident loads
// into Prometheus in seconds, so writing it must not take long either).
func BenchmarkSimulateMetricsOut(b *testing.B) {
	sc, err := Parse([]byte(densityScenario(100)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var out countingWriter
		res, err := Run(context.Background(), sc, Options{Dir: b.TempDir(), Metrics: &MetricsOptions{Out: &out}})
		if err != nil {
			b.Fatal(err)
		}
		if !res.OK() {
			b.Fatal("expectations failed")
		}
		b.ReportMetric(float64(out)/(1<<20), "MB-written")
	}
}

type countingWriter int64

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

// BenchmarkShippedScenariosRules runs the 15 shipped scenarios without rules and with the
// shipped rules evaluated (--rules shipped): issue 28's bar is under 2x the time.
func BenchmarkShippedScenariosRules(b *testing.B) {
	scenarios := shippedScenarios(b)
	rules := shippedRuleFiles(b)
	for _, withRules := range []bool{false, true} {
		b.Run(fmt.Sprintf("rules=%v", withRules), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				for _, sc := range scenarios {
					opts := Options{Dir: b.TempDir()}
					if withRules {
						opts.Rules = &RulesOptions{Files: rules}
					}
					if _, err := Run(context.Background(), sc, opts); err != nil {
						b.Fatalf("%s: %v", sc.Name, err)
					}
				}
			}
		})
	}
}
