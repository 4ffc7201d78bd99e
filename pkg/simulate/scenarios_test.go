package simulate

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/promrules"
)

func TestMain(m *testing.M) {
	// The timeline is the output under test; the kubelet's logs would only be noise.
	klog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// update rewrites the golden timelines: a change of behaviour that still meets every
// expectation shows in their diff, where a reviewer reads it.
var update = flag.Bool("update", false, "rewrite the shipped scenarios' golden timelines (testdata/timelines) from this run")

// scenarioFiles are the shipped scenarios, which are also the project's acceptance tests.
func scenarioFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "configs", "scenarios", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in configs/scenarios: %v", err)
	}
	return files
}

// parseFile reads and parses a scenario file.
func parseFile(t testing.TB, path string) *Scenario {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Parse(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sc
}

// shippedScenarios parses every shipped scenario.
func shippedScenarios(t testing.TB) []*Scenario {
	var out []*Scenario
	for _, f := range scenarioFiles(t) {
		out = append(out, parseFile(t, f))
	}
	return out
}

// shippedRuleFiles are the rules of configs/prometheus/rules, as `--rules shipped` gives them.
func shippedRuleFiles(testing.TB) []promrules.File { return simtest.ShippedRules() }

// runFile runs a scenario as `minikubelet simulate -f` does: with the shipped rules when it
// expects alerts.
func runFile(t testing.TB, path string) (*Result, []byte) {
	t.Helper()
	sc := parseFile(t, path)
	opts := Options{Dir: t.TempDir()}
	if sc.ExpectsAlerts() {
		opts.Rules = &RulesOptions{Files: shippedRuleFiles(t)}
	}
	res, err := Run(context.Background(), sc, opts)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var b bytes.Buffer
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return res, b.Bytes()
}

// TestShippedScenarios runs every scenario of configs/scenarios twice: each must pass, both
// runs must print the same bytes (the determinism contract), and those bytes must be the
// scenario's golden timeline, testdata/timelines/<name>.txt (-update rewrites them).
func TestShippedScenarios(t *testing.T) {
	want := []string{"static-pod-lifecycle", "pleg-unhealthy", "relist-slow", "event-channel-full",
		"evented-fallback", "crashloop-backoff", "feature-gate-precedence", "memory-pressure", "graceful-shutdown", "pleg-relist-hang",
		"eviction-memory-leak", "eviction-soft-threshold", "eviction-disk-pressure", "cpu-throttling", "in-place-resize", "image-volume",
		"supplemental-groups", "env-files", "proc-mount", "user-namespaces", "kubelet-restart-readiness", "kubelet-restart-readiness-v130", "kubelet-restart-readiness-v134"}
	seen := map[string]bool{}
	for _, path := range scenarioFiles(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			res, first := runFile(t, path)
			if !res.OK() || res.Passed == 0 {
				t.Errorf("%d passed, %d failed:\n%s", res.Passed, res.Failed, first)
			}
			_, second := runFile(t, path)
			if !bytes.Equal(first, second) {
				t.Errorf("two runs differ:\n--- first\n%s\n--- second\n%s", first, second)
			}
			golden := filepath.Join("testdata", "timelines", name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, first, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("no golden timeline (go test ./pkg/simulate -run TestShippedScenarios -update writes it): %v", err)
			}
			if line, w, g := firstDifference(want, first); line > 0 {
				t.Errorf("the timeline differs from %s from line %d:\n want %q\n got  %q\nIf the change is meant, rewrite it with go test ./pkg/simulate -run TestShippedScenarios -update and review its diff.",
					golden, line, w, g)
			}
		})
	}
	for _, name := range want {
		if !seen[name] {
			t.Errorf("configs/scenarios/%s.yaml is missing", name)
		}
	}
}

// firstDifference returns the first line (from 1) where want and got differ, and the two
// lines there; 0 when they are the same.
func firstDifference(want, got []byte) (int, string, string) {
	if bytes.Equal(want, got) {
		return 0, "", ""
	}
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; ; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || i >= len(w) || i >= len(g) {
			return i + 1, wl, gl
		}
	}
}

// TestFailingExpectationReportsObserved checks that a failed expectation says what was seen
// instead, and that the totals count it.
func TestFailingExpectationReportsObserved(t *testing.T) {
	sc, err := Parse([]byte(`
name: wrong
duration: 20s
manifests:
  web.yaml: |
    apiVersion: v1
    kind: Pod
    metadata: {name: web}
    spec: {containers: [{name: c, image: nginx}]}
steps:
- at: 10s
  expect:
    pod: {name: web-node, phase: Succeeded}
    node: {condition: Ready, status: "False"}
- at: 10s
  within: 5s
  expect:
    absent: {pod: web-node}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = res.WriteText(&b)
	out := b.String()
	for _, want := range []string{
		"FAIL step 0 at T+00:00:10.000: node Ready=False; observed: Ready=True reason=KubeletReady",
		"FAIL step 0 at T+00:00:10.000: pod web-node phase=Succeeded; observed: phase=Running ready=true restarts=0",
		"FAIL step 1 at T+00:00:10.000 within 5s: absent pod web-node; observed: pod web-node present, phase=Running",
		"0 passed, 3 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if res.OK() {
		t.Error("OK() with failed expectations")
	}
}

// TestRestartKubelet checks that a restarted kubelet finds the pods the runtime still runs
// and does not restart their containers, also those whose programs go on running (a shell
// loop, probed by exec): the restart must not end their processes.
func TestRestartKubelet(t *testing.T) {
	sc, err := Parse([]byte(`
name: restart
duration: 2m
manifests:
  web.yaml: |
    apiVersion: v1
    kind: Pod
    metadata: {name: web}
    spec: {containers: [{name: c, image: nginx}]}
steps:
- at: 30s
  restartKubelet: true
- at: 30s
  within: 30s
  expect:
    pod: {name: web-node, phase: Running, ready: true, restarts: 0}
- at: 1m30s
  expect:
    metric: {name: started_containers_total, value: 0}
    metric_: {}
`))
	if err == nil || !strings.Contains(err.Error(), `step 2: unknown key "metric_"`) {
		t.Fatalf("Parse error = %v, want the unknown nested key named", err)
	}
	sc, err = Parse([]byte(`
name: restart
duration: 2m
manifests:
  web.yaml: |
    apiVersion: v1
    kind: Pod
    metadata: {name: web}
    spec: {containers: [{name: c, image: nginx}]}
  ticker.yaml: |
    apiVersion: v1
    kind: Pod
    metadata: {name: ticker}
    spec:
      containers:
      - name: c
        image: busybox:1.36
        command: [sh, -c, "while true; do echo tick; sleep 5; done"]
        livenessProbe: {exec: {command: ["true"]}, periodSeconds: 10}
steps:
- at: 30s
  restartKubelet: true
- at: 30s
  within: 30s
  expect:
    pod: {name: web-node, phase: Running, ready: true, restarts: 0}
- at: 1m30s
  expect:
    pod: {name: ticker-node, phase: Running, ready: true, restarts: 0}
- at: 1m30s
  expect:
    metric: {name: running_containers, labels: {container_state: running}, value: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_ = res.WriteText(&b)
	if !res.OK() || !strings.Contains(b.String(), "T+00:00:30.000 kubelet restarted") {
		t.Errorf("restart scenario:\n%s", b.String())
	}
}
