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

// envDuration reads a positive duration from the environment (make bench-density and
// make bench-peers set them).
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, raw)
	}
	return d
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
	steady := envDuration(t, "MINIKUBELET_DENSITY_STEADY", 15*time.Second)
	cp := startControlPlaneWith(t, cpOptions{density: true})
	bin := buildDaemon(t)
	ctx := context.Background()

	args := densityArgs(t, cp, nodes)
	profileDir := os.Getenv("MINIKUBELET_DENSITY_PROFILE")
	if profileDir != "" {
		// The profiling handler on every node's secure port (anonymous, as the flags'
		// defaults allow): the steady window's CPU profile is fetched from node 0's.
		cfgPath := filepath.Join(cp.dir, "density-kubelet.yaml")
		writeFile(t, cfgPath, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nenableProfilingHandler: true\n"+
			"authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n")
		args = append(args, "--config", cfgPath)
	}
	waitServiceAccount(t, cp) // before the nodes load the control plane (see runPeer)
	started := time.Now()
	daemon := startProc(t, cp.dir, "minikubelet-density", bin, args...)
	waitNodesBack(t, cp, nodes, started, 3*time.Minute)
	nodesReady := time.Since(started)

	replicas := nodes * perNode
	podsStart := time.Now()
	createSleepers(t, cp, "density", replicas)
	waitPodsRunning(t, cp, "density", nodes, replicas, 10*time.Millisecond)
	podsRunning := time.Since(podsStart)

	// The steady state: the processes' CPU over a wall-clock window (the window is the
	// measurement, not a wait for a condition), their memory, and the API requests made in it.
	windowStart := metav1.Now()
	var during func()
	if profileDir != "" {
		during = func() {
			logPath := filepath.Join(cp.dir, "minikubelet-density.log")
			// The heap at both ends of the window: pprof -base of the two gives what the
			// steady state allocates (alloc_space), and the second what it keeps (inuse_space).
			fetchProfile(t, logPath, "heap", filepath.Join(profileDir, "density-heap-start.pprof"))
			fetchProfile(t, logPath, fmt.Sprintf("profile?seconds=%d", int(steady.Seconds())), filepath.Join(profileDir, "density-cpu.pprof"))
			fetchProfile(t, logPath, "heap", filepath.Join(profileDir, "density-heap.pprof"))
			fetchProfile(t, logPath, "goroutine", filepath.Join(profileDir, "density-goroutine.pprof"))
			logMemory(t, logPath)
		}
	}
	w := steadyWindow(t, cp, "minikubelet", []int{daemon.cmd.Process.Pid}, steady, during)
	cpu, rss, hwm := w.costs["minikubelet"].cpu, w.costs["minikubelet"].rss, w.costs["minikubelet"].hwm
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
		cpu, cpu/float64(nodes), rss>>10, hwm>>10, float64(rss)/1024/float64(nodes), flapped, w.costTable(),
		requestTable(w.requestsBefore, w.requestsAfter, w.seconds, nodes))

	// Killed and started again: every node renews its lease and is Ready, as the same Node
	// and Lease (names are the node's: no duplicates, nothing left of another name). The
	// restart is a reboot of every node at once, every pod's containers started again, which
	// at 1,000 nodes keeps a control plane on two cores past its request timeouts for
	// minutes (docs/scale.md): the wait is 10 minutes, and the time it took is the figure.
	if err := daemon.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-daemon.done
	restarted := time.Now()
	startProc(t, cp.dir, "minikubelet-density-restarted", bin, args...)
	waitNodesBack(t, cp, nodes, restarted, 10*time.Minute)
	t.Logf("\n| killed and started again: all %d nodes' leases renewed and Ready after | %v |", nodes, time.Since(restarted).Round(100*time.Millisecond))
}

// densityArgs are the flags of one minikubelet process running n nodes dn-0 ... dn-<n-1>
// against cp, as TestDensity and TestPeers run it.
func densityArgs(t *testing.T, cp *controlPlane, n int) []string {
	t.Helper()
	// One identity for every node: the admin's. The Node authorizer and NodeRestriction
	// let system:node:<name> act for <name> only (docs/cluster.md, "Many nodes").
	return []string{"--kubeconfig", cp.kubeconfig(t, "density", adminToken),
		"--node-count", strconv.Itoa(n), "--hostname-override", "dn", "--port", "0", "--read-only-port", "0",
		"--pod-manifest-path", t.TempDir(),
		// As kubeadm configures its kubelets: without a cluster DNS every pod starts with two
		// MissingClusterDNS warnings, 20,000 events more for the API server to write.
		"--cluster-dns", "10.0.0.10", "--cluster-domain", "cluster.local"}
}

// createSleepers creates the Deployment name in default: replicas pods labelled app=<name>
// of one busybox container running sleep infinity, with no toleration and no node selector.
func createSleepers(t *testing.T, cp *controlPlane, name string, replicas int) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "infinity"}}}},
			},
		},
	}
	if _, err := cp.admin.AppsV1().Deployments("default").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
}

// waitPodsRunning waits, listing every poll, until the replicas pods labelled app=<name>
// are Running on nodes named dn-*, and checks that they run on all n nodes.
func waitPodsRunning(t *testing.T, cp *controlPlane, name string, n, replicas int, poll time.Duration) {
	t.Helper()
	var spread map[string]int
	eventually.WithinEvery(t, poll, 10*time.Minute, fmt.Sprintf("%d pods Running", replicas), func() (bool, string) {
		pods, err := cp.admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name, ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		running, scheduled := 0, 0
		spread = map[string]int{}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				scheduled++
			}
			if p.Status.Phase == v1.PodRunning && strings.HasPrefix(p.Spec.NodeName, "dn-") {
				running++
				spread[p.Spec.NodeName]++
			}
		}
		// Where the pods stopped on their way, for a run that times out: not created (the
		// controller manager), not scheduled (the scheduler) or not started (the nodes).
		return running == replicas, fmt.Sprintf("%d of %d Running (%d created, %d scheduled)", running, replicas, len(pods.Items), scheduled)
	})
	if len(spread) != n {
		t.Errorf("the pods run on %d nodes, want all %d: %v", len(spread), n, spread)
	}
}

// costs is what a group of processes cost in a steady window: CPU in cores, and the
// resident set and its peak at the end of the window, summed over the group.
type costs struct {
	cpu      float64
	rss, hwm int64 // KiB
}

// steady is what steadyWindow measured.
type steady struct {
	seconds float64
	// groups names the groups in costs in the order the tables print them: the nodes'
	// first, then the control plane's processes.
	groups []string
	costs  map[string]costs
	// requestsBefore and requestsAfter are apiRequests at the window's ends.
	requestsBefore, requestsAfter map[string]float64
}

// steadyWindow measures, over a wall-clock window of d (the window is the measurement, not
// a wait for a condition), the CPU and memory of the nodes' processes pids (one group, name)
// and of each control plane process, and the API requests made in it. during, unless nil,
// runs at the start of the window (and must return within it).
func steadyWindow(t *testing.T, cp *controlPlane, name string, pids []int, d time.Duration, during func()) steady {
	t.Helper()
	groups := map[string][]int{name: pids}
	order := []string{name}
	for _, p := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler"} {
		groups[p] = []int{cp.pids[p]}
		order = append(order, p)
	}
	cpu0 := map[string]float64{}
	for g, ps := range groups {
		for _, pid := range ps {
			cpu0[g] += procCPUSeconds(t, pid)
		}
	}
	before := apiRequests(t, cp)
	wall0 := time.Now()
	if during != nil {
		during()
	}
	time.Sleep(d - time.Since(wall0))
	seconds := time.Since(wall0).Seconds()
	after := apiRequests(t, cp)
	w := steady{seconds: seconds, groups: order, costs: map[string]costs{}, requestsBefore: before, requestsAfter: after}
	for g, ps := range groups {
		c := costs{cpu: -cpu0[g]}
		for _, pid := range ps {
			c.cpu += procCPUSeconds(t, pid)
			r, h := procMemoryKiB(t, pid)
			c.rss += r
			c.hwm += h
		}
		c.cpu /= seconds
		w.costs[g] = c
	}
	return w
}

// costTable is the window's cost of every group, one row each (RSS and peak summed over a
// group's processes).
func (w steady) costTable() string {
	var b strings.Builder
	b.WriteString("\n| process | steady CPU (cores) | RSS (peak) |\n|---|---|---|")
	for _, g := range w.groups {
		c := w.costs[g]
		fmt.Fprintf(&b, "\n| %s | %.3f | %d MiB (%d MiB) |", g, c.cpu, c.rss>>10, c.hwm>>10)
	}
	return b.String()
}

// fetchProfile writes a profile of the process (profile, the CPU over seconds=; heap), from
// node 0's profiling handler, to path.
func fetchProfile(t *testing.T, logPath, profile, path string) {
	t.Helper()
	body := fetchNode0(t, logPath, "/debug/pprof/"+profile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s", profile, path)
}

// fetchNode0 GETs path from node 0's secure port (the address its "Serving HTTPS" log line
// gives), which the profiling run lets anyone read.
func fetchNode0(t *testing.T, logPath, path string) []byte {
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
	resp, err := client.Get(fmt.Sprintf("https://%s%s", m[1], path))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s %v", path, resp.Status, err)
	}
	return body
}

// logMemory says where the process' memory is, as Go's runtime counts it (node 0's
// /metrics: every node's registry has the process' collectors).
func logMemory(t *testing.T, logPath string) {
	t.Helper()
	body := string(fetchNode0(t, logPath, "/metrics"))
	mib := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			return "?"
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return "?"
		}
		return fmt.Sprintf("%.0f MiB", v/(1<<20))
	}
	goroutines := regexp.MustCompile(`(?m)^go_goroutines (\S+)$`).FindStringSubmatch(body)
	if goroutines == nil {
		goroutines = []string{"", "?"}
	}
	t.Logf("memory of the process: heap in use %s, stacks %s (%s goroutines), next GC at %s, from the OS %s, resident %s",
		mib("go_memstats_heap_inuse_bytes"), mib("go_memstats_stack_inuse_bytes"), goroutines[1],
		mib("go_memstats_next_gc_bytes"), mib("go_memstats_sys_bytes"), mib("process_resident_memory_bytes"))
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
		"GET nodes":                  "0 (the status update reads its node watch; a retry reads the API server)",
		"GET configmaps":             "0 (configMapAndSecretChangeDetectionStrategy Watch)",
		"WATCH nodes":                "0 (watches stay open)",
		"WATCH configmaps":           "0 (watches stay open 30 to 60 min)",
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
