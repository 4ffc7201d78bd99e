package kubelet

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
	"github.com/minikubelet/minikubelet/pkg/syncloop"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// gauge reads an unlabelled gauge, or the series with the given label value; name is
// without the metrics prefix.
func gauge(t *testing.T, h *harness, name, labelValue string) float64 {
	t.Helper()
	name = h.k.Registry().Name(name)
	mfs, err := h.k.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := labelValue == ""
			for _, l := range m.GetLabel() {
				match = match || l.GetValue() == labelValue
			}
			if match {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("metric %s{%s} not found", name, labelValue)
	return 0
}

// TestHTTPProviders: the HTTP API serves the kubelet's pods with their status, the node,
// the effective configuration with every gate, and the health checks.
func TestHTTPProviders(t *testing.T) {
	h := newHarness(t, "--feature-gates=EventedPLEG=true")
	h.write("web.yaml", podManifest("web", "nginx", ""))
	h.until(10, "web Running", func() bool { return h.phase("web-"+testNode) == v1.PodRunning }, h.describe)
	handler := h.k.Server().Handler()

	code, body := get(t, handler, "/pods")
	var pods v1.PodList
	if err := json.Unmarshal([]byte(body), &pods); code != http.StatusOK || err != nil {
		t.Fatalf("/pods = %d %v", code, err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Name != "web-"+testNode || pods.Items[0].Status.Phase != v1.PodRunning || pods.Items[0].Kind != "Pod" {
		t.Errorf("/pods items = %+v", pods.Items)
	}

	code, body = get(t, handler, "/node")
	var node v1.Node
	if err := json.Unmarshal([]byte(body), &node); code != http.StatusOK || err != nil || node.Name != testNode {
		t.Errorf("/node = %d %v name=%q", code, err, node.Name)
	}

	code, body = get(t, handler, "/configz")
	var cz struct {
		KubeletConfig struct {
			StaticPodPath string `json:"staticPodPath"`
		} `json:"kubeletconfig"`
		SimulatorConfig struct {
			NodeName string `json:"nodeName"`
		} `json:"simulatorconfig"`
		FeatureGates map[string]bool `json:"featureGates"`
	}
	if err := json.Unmarshal([]byte(body), &cz); code != http.StatusOK || err != nil {
		t.Fatalf("/configz = %d %v", code, err)
	}
	if cz.KubeletConfig.StaticPodPath != h.dir || cz.SimulatorConfig.NodeName != testNode {
		t.Errorf("/configz = %s", body)
	}
	for gate, want := range map[string]bool{"EventedPLEG": true, "PodReadyToStartContainersCondition": true, "GracefulNodeShutdown": true, "KubeletFineGrainedAuthz": true, "ReduceDefaultCrashLoopBackOffDecay": false} {
		if got, ok := cz.FeatureGates[gate]; !ok || got != want {
			t.Errorf("/configz featureGates[%s] = %v (present %v), want %v", gate, got, ok, want)
		}
	}

	for _, path := range []string{"/healthz", "/healthz/syncloop", "/healthz/pleg"} {
		if code, body := get(t, handler, path); code != http.StatusOK {
			t.Errorf("GET %s = %d %s", path, code, body)
		}
	}
	if code, _ := get(t, handler, "/debug/faults"); code != http.StatusNotFound {
		t.Errorf("/debug/faults without enableDebuggingHandlers = %d, want 404", code)
	}
}

// TestRunningMetrics: housekeeping's runtime listing keeps running_pods and
// running_containers current.
func TestRunningMetrics(t *testing.T) {
	h := newHarness(t)
	h.write("a.yaml", podManifest("a", "nginx", ""))
	h.write("b.yaml", podManifest("b", "nginx", ""))
	h.until(10, "both Running", func() bool {
		return h.phase("a-"+testNode) == v1.PodRunning && h.phase("b-"+testNode) == v1.PodRunning
	}, h.describe)
	h.round(2 * syncloop.DefaultHousekeepingPeriod)
	if got := gauge(t, h, "running_pods", ""); got != 2 {
		t.Errorf("running_pods = %v, want 2", got)
	}
	if got := gauge(t, h, "running_containers", "running"); got != 2 {
		t.Errorf("running_containers{container_state=running} = %v, want 2", got)
	}
	h.remove("a.yaml")
	h.until(10, "a stopped", func() bool { return h.runningContainers() == 1 }, h.describe)
	h.round(2 * syncloop.DefaultHousekeepingPeriod)
	if got := gauge(t, h, "running_pods", ""); got != 1 {
		t.Errorf("running_pods after removal = %v, want 1", got)
	}
	if !strings.Contains(h.describe(), "b-node=Running") {
		t.Errorf("b is not running: %s", h.describe())
	}
}

// TestProbeMetricsEndpoint: the prober's metrics are served on /metrics/probes, unprefixed,
// with upstream's labels, and not on /metrics.
func TestProbeMetricsEndpoint(t *testing.T) {
	h := newHarness(t)
	h.write("web.yaml", podManifest("web", "nginx", "    readinessProbe:\n      tcpSocket: {port: 80}\n      periodSeconds: 5\n"))
	h.until(10, "web ready", func() bool {
		p := h.pod("web-" + testNode)
		return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
	}, h.describe)
	code, body := get(t, h.k.Server().Handler(), "/metrics/probes")
	want := `prober_probe_total{container="main",namespace="default",pod="web-node",pod_uid="`
	if code != 200 || !strings.Contains(body, want) || !strings.Contains(body, `probe_type="Readiness",result="successful"} `) {
		t.Fatalf("GET /metrics/probes = %d:\n%s\nwant a series like %s...", code, body, want)
	}
	if _, body := get(t, h.k.Server().Handler(), "/metrics"); strings.Contains(body, "prober_probe_total") {
		t.Error("/metrics serves the prober's metrics too")
	}
}

// TestEventedPLEGRunningGauges: v1.30's evented PLEG moves running_containers with the
// container events (upstream's updateRunningContainerMetric) although the generic relist runs
// only every 300s, and leaves running_pods to that relist. v1.37's only asks for relists:
// both gauges come from the generic relist, every second, as without the gate.
func TestEventedPLEGRunningGauges(t *testing.T) {
	tests := []struct {
		name   string
		legacy bool
		// wantPods is running_pods once web runs; settle is how long after the container
		// stopped running_containers{running} reads 0.
		wantPods float64
		settle   time.Duration
	}{
		{"v1.30 (legacy)", true, 0, 0},
		{"v1.37", false, 1, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, gate := loadConfig(t, dir, "--feature-gates=EventedPLEG=true")
			h := newHarnessWithConfig(t, dir, cfg, gate, func(c *Config) { c.LegacyEventedPLEG = tt.legacy })
			h.round(time.Second) // the first relist: an empty node
			h.write("web.yaml", podManifest("web", "nginx", ""))
			h.until(10, "web Running", func() bool { return h.phase("web-"+testNode) == v1.PodRunning }, h.describe)
			h.round(tt.settle)
			if got := gauge(t, h, "running_containers", "running"); got != 1 {
				t.Errorf("running_containers{running} = %v after the container started, want 1", got)
			}
			if got := gauge(t, h, "running_pods", ""); got != tt.wantPods {
				t.Errorf("running_pods = %v, want %v", got, tt.wantPods)
			}
			h.remove("web.yaml")
			h.until(10, "web's container stopped", func() bool { return h.runningContainers() == 0 }, h.describe)
			h.round(tt.settle)
			if got := gauge(t, h, "running_containers", "running"); got != 0 {
				t.Errorf("running_containers{running} = %v %v after the container stopped, want 0", got, tt.settle)
			}
		})
	}
}

// TestStateMetricsEndpoint: standalone, /metrics/state serves the node's conditions and the
// containers' restarts and waiting reasons under kube-state-metrics' names, as a crash loop
// goes on; /metrics does not.
func TestStateMetricsEndpoint(t *testing.T) {
	h := newHarness(t)
	h.write("crash.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: crash
  annotations: {minikubelet.io/behavior.main: "runFor=1s,exitCode=1"}
spec:
  containers: [{name: main, image: busybox}]
`)
	h.until(60, "crash restarted and back-off", func() bool {
		p := h.pod("crash-" + testNode)
		if p == nil || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	}, h.describe)
	h.round(10 * time.Second) // a node status update
	code, body := get(t, h.k.Server().Handler(), "/metrics/state")
	for _, want := range []string{
		`kube_node_status_condition{condition="Ready",node="node",status="true"} 1`,
		`kube_node_status_condition{condition="Ready",node="node",status="false"} 0`,
		`kube_node_status_condition{condition="MemoryPressure",node="node",status="false"} 1`,
		`kube_pod_container_status_restarts_total{container="main",namespace="default",pod="crash-node",uid="`,
		`kube_pod_container_status_waiting_reason{container="main",namespace="default",pod="crash-node",reason="CrashLoopBackOff",uid="`,
	} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /metrics/state = %d, want a line starting %s in:\n%s", code, want, body)
		}
	}
	if _, body := get(t, h.k.Server().Handler(), "/metrics"); strings.Contains(body, "kube_node_status_condition") {
		t.Error("/metrics serves kube-state-metrics' series too")
	}
}

// TestStatsEndpoints: /stats/summary and /metrics/resource read the runtime's usage model on
// the kubelet's clock: a container scripted at 250m for 60s has used 15 core-seconds.
func TestStatsEndpoints(t *testing.T) {
	h := newHarness(t)
	h.write("web.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations: {minikubelet.io/behavior.app: "cpuUsage=250m,memoryUsage=100Mi"}
spec:
  containers:
  - name: app
    image: nginx
    resources: {limits: {memory: 256Mi}}
`)
	h.until(10, "web Running", func() bool { return h.phase("web-"+testNode) == v1.PodRunning }, h.describe)
	started := h.clk.Now()
	h.round(time.Minute)
	elapsed := h.clk.Now().Sub(started)

	code, body := get(t, h.k.Server().Handler(), "/stats/summary")
	var sum statsapi.Summary
	if err := json.Unmarshal([]byte(body), &sum); code != http.StatusOK || err != nil {
		t.Fatalf("GET /stats/summary = %d %v\n%s", code, err, body)
	}
	if len(sum.Pods) != 1 || len(sum.Pods[0].Containers) != 1 {
		t.Fatalf("summary pods = %+v", sum.Pods)
	}
	app := sum.Pods[0].Containers[0]
	// It started within the first round; at least the minute since at 250m.
	if cpu := *app.CPU.UsageCoreNanoSeconds; cpu < uint64(elapsed.Nanoseconds()/4) || *app.CPU.UsageNanoCores != 250e6 {
		t.Errorf("app cpu = %d core-ns at %d nanocores, want at least %d at 250e6", cpu, *app.CPU.UsageNanoCores, elapsed.Nanoseconds()/4)
	}
	if *app.Memory.WorkingSetBytes != 100<<20 || *app.Memory.AvailableBytes != 156<<20 {
		t.Errorf("app memory = %d, available %d; want 100Mi and 156Mi", *app.Memory.WorkingSetBytes, *app.Memory.AvailableBytes)
	}
	if *sum.Node.Memory.WorkingSetBytes < 100<<20 || sum.Node.NodeName != testNode {
		t.Errorf("node = %+v", sum.Node)
	}

	_, body = get(t, h.k.Server().Handler(), "/metrics/resource")
	for _, want := range []string{
		`container_cpu_usage_seconds_total{container="app",namespace="default",pod="web-node"} `,
		`container_memory_working_set_bytes{container="app",namespace="default",pod="web-node"} 1.048576e+08 `,
		`pod_memory_working_set_bytes{namespace="default",pod="web-node"} 1.048576e+08 `,
		"node_cpu_usage_seconds_total ",
		"resource_scrape_error 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics/resource lacks %q:\n%s", want, body)
		}
	}
	if _, body := get(t, h.k.Server().Handler(), "/stats/summary?only_cpu_and_memory=maybe"); !strings.Contains(body, "only_cpu_and_memory") {
		t.Errorf("a bad only_cpu_and_memory: %s", body)
	}

	// A runtime that fails the stats call: the summary is a 500 and the scrape says so.
	if _, err := h.k.Runtime().AddFault(fault.Spec{Method: "ListContainerStats", Type: fault.Error, Message: "stats unavailable"}); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, h.k.Server().Handler(), "/stats/summary"); code != http.StatusInternalServerError || !strings.Contains(body, "stats unavailable") {
		t.Errorf("/stats/summary with a failing runtime = %d %s", code, body)
	}
	if _, body := get(t, h.k.Server().Handler(), "/metrics/resource"); !strings.Contains(body, "resource_scrape_error 1") || strings.Contains(body, "container_cpu_usage_seconds_total{") {
		t.Errorf("/metrics/resource with a failing runtime:\n%s", body)
	}
}

// TestContainerLogsEndpoint: /containerLogs serves the current and the previous instance's
// log, with tailLines, timestamps and limitBytes, and upstream's errors for unknown pods,
// containers and bad parameters.
func TestContainerLogsEndpoint(t *testing.T) {
	const job = `apiVersion: v1
kind: Pod
metadata:
  name: job
  annotations: {minikubelet.io/behavior.main: "logEvery=1s,logLine=working {n},runFor=3500ms,exitCode=2"}
spec:
  containers: [{name: main, image: busybox}]
`
	h := newHarness(t, "--enable-debugging-handlers")
	h.write("job.yaml", job)
	h.until(60, "job restarted once", func() bool {
		p := h.pod("job-" + testNode)
		return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1 &&
			p.Status.ContainerStatuses[0].State.Running != nil
	}, h.describe)
	handler := h.k.Server().Handler()
	base := "/containerLogs/default/job-" + testNode + "/main"

	code, prev := get(t, handler, base+"?previous=true")
	want := "minikubelet: container main started (attempt 0)\nworking 1\nworking 2\nworking 3\nminikubelet: exited with code 2 (Error)\n"
	if code != http.StatusOK || prev != want {
		t.Errorf("previous log = %d:\n%s\nwant:\n%s", code, prev, want)
	}
	code, cur := get(t, handler, base)
	if code != http.StatusOK || !strings.HasPrefix(cur, "minikubelet: container main started (attempt 1)\n") {
		t.Errorf("current log = %d:\n%s", code, cur)
	}
	if _, tail := get(t, handler, base+"?previous=true&tailLines=2"); tail != "working 3\nminikubelet: exited with code 2 (Error)\n" {
		t.Errorf("tailLines=2: %q", tail)
	}
	if _, ts := get(t, handler, base+"?previous=true&tailLines=1&timestamps=true"); !strings.HasSuffix(ts, " minikubelet: exited with code 2 (Error)\n") {
		t.Errorf("timestamps: %q", ts)
	} else if at, err := time.Parse(time.RFC3339Nano, strings.Fields(ts)[0]); err != nil || at.After(h.clk.Now()) || at.Before(epoch) {
		t.Errorf("timestamps: %q does not start with the line's time (%v)", ts, err)
	}
	if _, lim := get(t, handler, base+"?previous=true&limitBytes=10"); lim != "minikubele" {
		t.Errorf("limitBytes=10: %q", lim)
	}
	for _, tt := range []struct {
		path string
		code int
		msg  string
	}{
		{"/containerLogs/default/nope/main", http.StatusNotFound, `pod \"nope\" does not exist`},
		{"/containerLogs/default/job-" + testNode + "/other", http.StatusNotFound, `container \"other\" not found in pod \"job-node\"`},
		{base + "?tailLines=-1", http.StatusBadRequest, `tailLines: Invalid value: \"-1\": must be greater than or equal to 0`},
		{base + "?sinceSeconds=0", http.StatusBadRequest, `sinceSeconds: Invalid value: \"0\": must be greater than 0`},
		{base + "?follow=maybe", http.StatusBadRequest, `follow: Invalid value: \"maybe\": not a boolean`},
		{base + "?sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z", http.StatusBadRequest, "at most one of `sinceTime` or `sinceSeconds`"},
	} {
		if code, body := get(t, handler, tt.path); code != tt.code || !strings.Contains(body, tt.msg) {
			t.Errorf("GET %s = %d %s, want %d with %s", tt.path, code, body, tt.code, tt.msg)
		}
	}
	// containerLogMaxSize bounds what is readable: the last 60 bytes.
	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, "--enable-debugging-handlers")
	cfg.Kubelet.ContainerLogMaxSize = "60"
	small := newHarnessWithConfig(t, dir, cfg, gate)
	small.write("job.yaml", job)
	small.until(60, "job restarted once", func() bool {
		p := small.pod("job-" + testNode)
		return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	}, small.describe)
	if _, got := get(t, small.k.Server().Handler(), base+"?previous=true"); got != "working 2\nworking 3\nminikubelet: exited with code 2 (Error)\n" {
		t.Errorf("with containerLogMaxSize 60, the previous log = %q", got)
	}

	// Without the debugging handlers there is no log endpoint, as upstream.
	off := newHarness(t)
	if code, _ := get(t, off.k.Server().Handler(), base); code != http.StatusNotFound {
		t.Errorf("/containerLogs without debugging handlers = %d, want 404", code)
	}
}
