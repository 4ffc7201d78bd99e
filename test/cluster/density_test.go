package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
// measures a steady window: what the process and the control plane cost, the API requests
// the nodes make, and that no node turned NotReady. Last, it kills the process and starts
// it again: every node renews its lease and is Ready again, with no Node or Lease more. N=5,
// P=4 by default (make e2e-cluster); make bench-density runs N=100, P=30
// (MINIKUBELET_DENSITY_NODES, MINIKUBELET_DENSITY_PODS, MINIKUBELET_DENSITY_STEADY).
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
	cp := startControlPlaneWith(t, cpOptions{density: true})
	bin := buildDaemon(t)
	ctx := context.Background()

	// One identity for every node: the admin's. The Node authorizer and NodeRestriction
	// let system:node:<name> act for <name> only (docs/cluster.md, "Many nodes").
	args := []string{"--kubeconfig", cp.kubeconfig(t, "density", adminToken),
		"--node-count", strconv.Itoa(nodes), "--hostname-override", "dn", "--port", "0", "--read-only-port", "0",
		"--pod-manifest-path", t.TempDir(),
		// As kubeadm configures its kubelets: without a cluster DNS every pod starts with two
		// MissingClusterDNS warnings, 20,000 events more for the API server to write.
		"--cluster-dns", "10.0.0.10", "--cluster-domain", "cluster.local"}
	profileDir := os.Getenv("MINIKUBELET_DENSITY_PROFILE")
	if profileDir != "" {
		// The profiling handler on every node's secure port (anonymous, as the flags'
		// defaults allow): the steady window's CPU profile is fetched from node 0's.
		cfgPath := filepath.Join(cp.dir, "density-kubelet.yaml")
		writeFile(t, cfgPath, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nenableProfilingHandler: true\n"+
			"authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n")
		args = append(args, "--config", cfgPath)
	}
	started := time.Now()
	daemon := startProc(t, cp.dir, "minikubelet-density", bin, args...)
	waitNodesBack(t, cp, nodes, started, 3*time.Minute)
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
		pods, err := cp.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=density", ResourceVersion: "0"})
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

	// The steady state: the processes' CPU over a wall-clock window (the window is the
	// measurement, not a wait for a condition), their memory, and the API requests made in it.
	procs := []string{"minikubelet", "kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler"}
	pids := map[string]int{"minikubelet": daemon.cmd.Process.Pid}
	for name, pid := range cp.pids {
		pids[name] = pid
	}
	cpu0 := map[string]float64{}
	for _, name := range procs {
		cpu0[name] = procCPUSeconds(t, pids[name])
	}
	req0 := apiRequests(t, cp)
	windowStart, wall0 := metav1.Now(), time.Now()
	if profileDir != "" {
		fetchProfile(t, filepath.Join(cp.dir, "minikubelet-density.log"), steady, filepath.Join(profileDir, "density-cpu.pprof"))
	}
	time.Sleep(steady - time.Since(wall0))
	window := time.Since(wall0).Seconds()
	req1 := apiRequests(t, cp)
	var costs strings.Builder
	costs.WriteString("\n| process | steady CPU (cores) | RSS (peak) |\n|---|---|---|")
	var cpu float64
	var rss, hwm int64
	for _, name := range procs {
		c := (procCPUSeconds(t, pids[name]) - cpu0[name]) / window
		r, h := procMemoryKiB(t, pids[name])
		if name == "minikubelet" {
			cpu, rss, hwm = c, r, h
		}
		fmt.Fprintf(&costs, "\n| %s | %.3f | %d MiB (%d MiB) |", name, c, r>>10, h>>10)
	}
	// No node turned NotReady in the window: each is Ready, and has been since before it.
	list, err := cp.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	flapped := 0
	for i := range list.Items {
		n := &list.Items[i]
		if !strings.HasPrefix(n.Name, "dn-") {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady && (c.Status != v1.ConditionTrue || !c.LastTransitionTime.Before(&windowStart)) {
				flapped++
				t.Errorf("node %s: Ready %s since %v, inside the steady window (from %v)", n.Name, c.Status, c.LastTransitionTime, windowStart)
			}
		}
	}
	t.Logf("\n| nodes | pods | nodes Ready after | pods Running after | steady CPU (cores) | per node | RSS (peak) | per node | nodes NotReady in %v |\n"+
		"|---|---|---|---|---|---|---|---|---|\n| %d | %d | %v | %v | %.3f | %.4f | %d MiB (%d MiB) | %.1f MiB | %d |%s\n%s",
		steady, nodes, replicas, nodesReady.Round(100*time.Millisecond), podsRunning.Round(100*time.Millisecond),
		cpu, cpu/float64(nodes), rss>>10, hwm>>10, float64(rss)/1024/float64(nodes), flapped, costs.String(),
		requestTable(req0, req1, window, nodes))

	// Killed and started again: every node renews its lease and is Ready, as the same Node
	// and Lease (names are the node's: no duplicates, nothing left of another name).
	if err := daemon.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-daemon.done
	restarted := time.Now()
	startProc(t, cp.dir, "minikubelet-density-restarted", bin, args...)
	waitNodesBack(t, cp, nodes, restarted, 3*time.Minute)
	t.Logf("\n| killed and started again: all %d nodes' leases renewed and Ready after | %v |", nodes, time.Since(restarted).Round(100*time.Millisecond))
}

// fetchProfile writes the CPU profile of the process over d, from node 0's profiling handler
// (the address its "Serving HTTPS" log line gives), to path.
func fetchProfile(t *testing.T, logPath string, d time.Duration, path string) {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"Serving HTTPS" address="([^"]+)".* node="dn-0"`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s: no Serving HTTPS line of dn-0", logPath)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the node's self-signed certificate
	resp, err := client.Get(fmt.Sprintf("https://%s/debug/pprof/profile?seconds=%d", m[1], int(d.Seconds())))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CPU profile: %s %v", resp.Status, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the steady window's CPU profile: %s", path)
}

// waitNodesBack waits until the n nodes dn-0 ... dn-<n-1> are Ready and have renewed their
// lease since since, and checks that there is no other Node or Lease of the process.
func waitNodesBack(t *testing.T, cp *controlPlane, n int, since time.Time, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	eventually.Within(t, within, fmt.Sprintf("%d nodes Ready with their lease renewed", n), func() (bool, string) {
		nodes, err := cp.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		leases, err := cp.admin.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		ready, renewed, nodeCount, leaseCount := 0, 0, 0, 0
		var notReady []string // the first few, with their Ready condition: what a failure shows
		for i := range nodes.Items {
			node := &nodes.Items[i]
			if strings.HasPrefix(node.Name, "dn-") {
				nodeCount++
				if nodeReady(node) == v1.ConditionTrue {
					ready++
				} else if len(notReady) < 5 {
					for _, c := range node.Status.Conditions {
						if c.Type == v1.NodeReady {
							notReady = append(notReady, fmt.Sprintf("%s: %s %s %q since %v, heartbeat %v", node.Name, c.Status, c.Reason, c.Message, c.LastTransitionTime, c.LastHeartbeatTime))
						}
					}
				}
			}
		}
		for i := range leases.Items {
			l := &leases.Items[i]
			if strings.HasPrefix(l.Name, "dn-") {
				leaseCount++
				if l.Spec.RenewTime != nil && !l.Spec.RenewTime.Time.Before(since.Truncate(time.Microsecond)) {
					renewed++
				}
			}
		}
		if nodeCount > n || leaseCount > n {
			t.Fatalf("%d Nodes and %d Leases named dn-*, want %d of each", nodeCount, leaseCount, n)
		}
		return ready == n && renewed == n, fmt.Sprintf("%d of %d Ready, %d leases renewed; not Ready: %v", ready, n, renewed, notReady)
	})
}

// apiRequests is the API server's apiserver_request_total by verb and resource (with its
// subresource), summed over the other labels.
func apiRequests(t *testing.T, cp *controlPlane) map[string]float64 {
	t.Helper()
	raw, err := cp.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("the API server's metrics: %v", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the API server's metrics: %v", err)
	}
	out := map[string]float64{}
	mf := mfs["apiserver_request_total"]
	if mf == nil {
		t.Fatal("the API server serves no apiserver_request_total")
	}
	for _, m := range mf.GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}

// requestTable is the request rate of each verb and resource over the window, beside what
// the kubelet's defaults make n nodes send: a lease renewal every 10 s (nodeLeaseDuration 40
// s), a node status patch when it changed or every 5 minutes (nodeStatusReportFrequency).
func requestTable(before, after map[string]float64, window float64, n int) string {
	expect := map[string]string{
		"PUT leases":                 fmt.Sprintf("%.1f (n / 10 s)", float64(n)/10),
		"PATCH nodes/status":         fmt.Sprintf("%.1f when unchanged (n / 5 min)", float64(n)/300),
		"PATCH pods/status":          "0 when no pod changes",
		"WATCH pods":                 "0 (watches stay open)",
		"LIST pods":                  "0",
		"GET nodes":                  "about PATCH nodes/status",
		"POST events":                "0 when nothing happens",
		"PATCH events":               "0 when nothing happens",
		"POST serviceaccounts/token": "0 (tokens last an hour)",
	}
	keys := make([]string, 0, len(after))
	for k := range after {
		if after[k]-before[k] > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return after[keys[i]]-before[keys[i]] > after[keys[j]]-before[keys[j]] })
	var b strings.Builder
	fmt.Fprintf(&b, "\n| API requests in the steady window (all clients) | per second | the kubelet's defaults for %d nodes |\n|---|---|---|", n)
	for _, k := range keys {
		rate := (after[k] - before[k]) / window
		if rate < 0.05 {
			continue
		}
		fmt.Fprintf(&b, "\n| %s | %.1f | %s |", k, rate, expect[k])
	}
	return b.String()
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
