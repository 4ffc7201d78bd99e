package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/eventually"
)

// densityInt reads a positive integer from the environment (make bench-density sets them).
func densityInt(t *testing.T, name string, def int) int {
	t.Helper()
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, raw)
	}
	return n
}

// TestDensity runs one minikubelet process with --node-count N against the real control
// plane and a Deployment of N x P replicas: every node registers and is Ready, the
// scheduler spreads the pods over them, and every pod is Running in the API. Then it
// measures what the process costs at steady state, per node. N=5, P=4 by default (make
// e2e-cluster); make bench-density runs N=100, P=30 (MINIKUBELET_DENSITY_NODES,
// MINIKUBELET_DENSITY_PODS, MINIKUBELET_DENSITY_STEADY).
func TestDensity(t *testing.T) {
	nodes := densityInt(t, "MINIKUBELET_DENSITY_NODES", 5)
	perNode := densityInt(t, "MINIKUBELET_DENSITY_PODS", 4)
	steady := 15 * time.Second
	if raw := os.Getenv("MINIKUBELET_DENSITY_STEADY"); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 {
			t.Fatalf("MINIKUBELET_DENSITY_STEADY=%q: want a duration", raw)
		}
		steady = d
	}
	cp := startControlPlane(t)
	bin := buildDaemon(t)
	ctx := context.Background()

	// One identity for every node: the admin's. The Node authorizer and NodeRestriction
	// let system:node:<name> act for <name> only (docs/cluster.md, "Many nodes").
	started := time.Now()
	cmd := start(t, cp.dir, "minikubelet-density", bin, "--kubeconfig", cp.kubeconfig(t, "density", adminToken),
		"--node-count", strconv.Itoa(nodes), "--hostname-override", "dn", "--port", "0", "--read-only-port", "0",
		"--pod-manifest-path", t.TempDir())
	eventually.Within(t, 3*time.Minute, fmt.Sprintf("%d nodes Ready", nodes), func() (bool, string) {
		list, err := cp.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for i := range list.Items {
			if strings.HasPrefix(list.Items[i].Name, "dn-") && nodeReady(&list.Items[i]) == v1.ConditionTrue {
				ready++
			}
		}
		return ready == nodes, fmt.Sprintf("%d of %d Ready", ready, nodes)
	})
	nodesReady := time.Since(started)
	waitServiceAccount(t, cp)

	replicas := nodes * perNode
	labels := map[string]string{"app": "density"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "density", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "infinity"}}}},
			},
		},
	}
	podsStart := time.Now()
	if _, err := cp.admin.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	var spread map[string]int
	eventually.Within(t, 10*time.Minute, fmt.Sprintf("%d pods Running", replicas), func() (bool, string) {
		pods, err := cp.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=density"})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		spread = map[string]int{}
		for _, p := range pods.Items {
			if p.Status.Phase == v1.PodRunning && strings.HasPrefix(p.Spec.NodeName, "dn-") {
				running++
				spread[p.Spec.NodeName]++
			}
		}
		return running == replicas, fmt.Sprintf("%d of %d Running", running, replicas)
	})
	podsRunning := time.Since(podsStart)
	if len(spread) != nodes {
		t.Errorf("the pods run on %d nodes, want all %d: %v", len(spread), nodes, spread)
	}

	// The steady state: the process's CPU over a wall-clock window (the window is the
	// measurement, not a wait for a condition) and its memory.
	pid := cmd.Process.Pid
	cpu0, wall0 := procCPUSeconds(t, pid), time.Now()
	time.Sleep(steady)
	cpu := (procCPUSeconds(t, pid) - cpu0) / time.Since(wall0).Seconds()
	rss, hwm := procMemoryKiB(t, pid)
	t.Logf("\n| nodes | pods | nodes Ready after | pods Running after | steady CPU (cores) | per node | RSS (peak) | per node |\n"+
		"|---|---|---|---|---|---|---|---|\n| %d | %d | %v | %v | %.3f | %.4f | %d MiB (%d MiB) | %.1f MiB |",
		nodes, replicas, nodesReady.Round(100*time.Millisecond), podsRunning.Round(100*time.Millisecond),
		cpu, cpu/float64(nodes), rss>>10, hwm>>10, float64(rss)/1024/float64(nodes))
}

// procCPUSeconds is a process's user+system CPU time so far (/proc/PID/stat).
func procCPUSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	const clockTicks = 100 // USER_HZ on Linux
	return (utime + stime) / clockTicks
}

// procMemoryKiB is a process's resident set and its peak (/proc/PID/status).
func procMemoryKiB(t *testing.T, pid int) (rss, hwm int64) {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		}
	}
	return rss, hwm
}
