package kubelet

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
)

// TestCadvisorMetrics: /metrics/cadvisor serves cAdvisor's series for every running container
// and its pod's cgroup, with cAdvisor's labels. A container asking for more CPU than its limit
// uses its limit and is throttled in every CFS period (CPUThrottlingHigh's ratio is 1); one
// under its limit is never throttled; one without a limit has no CFS series. The quota and
// shares are the kubelet's (100ms period, 1024 shares a core).
func TestCadvisorMetrics(t *testing.T) {
	h := newHarness(t)
	h.write("cpu.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: cpu
  annotations: {minikubelet.io/behavior.hog: "cpuUsage=900m", minikubelet.io/behavior.calm: "cpuUsage=100m"}
spec:
  containers:
  - {name: hog, image: nginx, command: [sleep, infinity], resources: {requests: {cpu: 100m}, limits: {cpu: 250m}}}
  - {name: calm, image: nginx, command: [sleep, infinity], resources: {limits: {cpu: 500m}}}
  - {name: free, image: busybox, command: [sleep, infinity]}
`)
	name := "cpu-" + h.k.NodeName()
	h.until(10, "the pod Running", func() bool { return h.phase(name) == v1.PodRunning }, h.describe)
	h.round(time.Minute)

	families, err := h.k.CadvisorRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{} // name{container} -> value
	for _, f := range families {
		for _, m := range f.GetMetric() {
			lbl := labelMap(m)
			if f.GetName() != "machine_cpu_cores" && f.GetName() != "machine_memory_bytes" {
				if lbl["pod"] != name || lbl["namespace"] != "default" || !strings.HasPrefix(lbl["id"], "/kubepods/burstable/pod") {
					t.Errorf("%s %v: want cAdvisor's pod, namespace and a burstable pod's cgroup id", f.GetName(), lbl)
				}
				if lbl["container"] != "" && (lbl["image"] == "" || lbl["name"] == "" || !strings.HasSuffix(lbl["id"], "/"+lbl["name"])) {
					t.Errorf("%s %v: a container series needs image, name and an id ending in it", f.GetName(), lbl)
				}
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			series[fmt.Sprintf("%s{%s}", f.GetName(), lbl["container"])] = v
		}
	}
	within := func(key string, want, tol float64) {
		t.Helper()
		got, ok := series[key]
		if !ok || got < want-tol || got > want+tol {
			t.Errorf("%s = %v (present %v), want %v ± %v", key, got, ok, want, tol)
		}
	}
	// The hog ran a little over a minute at its 250m limit, throttled in every period.
	periods := series["container_cpu_cfs_periods_total{hog}"]
	if periods < 600 {
		t.Errorf("hog's CFS periods = %v, want at least 600 (a minute of 100ms periods)", periods)
	}
	within("container_cpu_cfs_throttled_periods_total{hog}", periods, 0)
	within("container_cpu_usage_seconds_total{hog}", periods*0.1*0.25, 0.01)
	within("container_spec_cpu_quota{hog}", 25000, 0)
	within("container_spec_cpu_period{hog}", 100000, 0)
	within("container_spec_cpu_shares{hog}", 102, 0)
	// The calm one uses its 100m, under its 500m limit: never throttled.
	within("container_cpu_cfs_throttled_periods_total{calm}", 0, 0)
	within("container_spec_cpu_shares{calm}", 512, 0) // the limit stands for the missing request
	if _, ok := series["container_cpu_cfs_periods_total{free}"]; ok {
		t.Error("a container without a CPU limit has CFS series")
	}
	within("container_spec_cpu_shares{free}", 2, 0)
	for _, c := range []string{"hog", "calm", "free"} {
		within("container_oom_events_total{"+c+"}", 0, 0)
	}
	within("machine_cpu_cores{}", float64(h.k.cfg.Simulator.Machine.CPU.MilliValue())/1000, 0)
	// The pod's cgroup: every container's CPU together.
	within("container_cpu_usage_seconds_total{}", series["container_cpu_usage_seconds_total{hog}"]+
		series["container_cpu_usage_seconds_total{calm}"]+series["container_cpu_usage_seconds_total{free}"], 0.01)
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestCadvisorAfterAnOOMKill: a container killed at its memory limit takes its cgroup's
// series with it; the container that replaces it has its own, its OOM count at 0.
func TestCadvisorAfterAnOOMKill(t *testing.T) {
	h := newHarness(t)
	h.write("oom.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: oom
  annotations: {minikubelet.io/behavior.leak: "memoryUsage=10Mi,memoryGrowth=20Mi/10s"}
spec:
  containers:
  - {name: leak, image: busybox, command: [sleep, infinity], resources: {limits: {memory: 64Mi}}}
`)
	name := "oom-" + h.k.NodeName()
	ids := func() map[string]float64 {
		families, err := h.k.CadvisorRegistry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				if l := labelMap(m); f.GetName() == "container_oom_events_total" && l["container"] == "leak" {
					out[l["id"]] = m.GetCounter().GetValue()
				}
			}
		}
		return out
	}
	restarts := func() int32 {
		p := h.pod(name)
		if p == nil || len(p.Status.ContainerStatuses) == 0 {
			return 0
		}
		return p.Status.ContainerStatuses[0].RestartCount
	}
	h.until(10, "the pod Running", func() bool { return h.phase(name) == v1.PodRunning }, h.describe)
	first := ids()
	if len(first) != 1 {
		t.Fatalf("container_oom_events_total of the running container: %v, want one series", first)
	}
	h.until(120, "an OOM kill and a restart", func() bool { return restarts() > 0 && len(ids()) == 1 }, h.describe)
	st := h.pod(name).Status.ContainerStatuses[0]
	if st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.Reason != "OOMKilled" {
		t.Fatalf("last termination %+v, want OOMKilled", st.LastTerminationState)
	}
	for id, v := range ids() {
		if _, old := first[id]; old {
			t.Errorf("the OOM-killed container's cgroup %s still has series", id)
		}
		if v != 0 {
			t.Errorf("the restarted container's container_oom_events_total = %v, want 0", v)
		}
	}
}
