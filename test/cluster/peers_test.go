package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/internal/eventually"
)

// A peer is a node simulator TestPeers runs: how to start its nodes dn-0 ... dn-<n-1>
// against a control plane, and what it gives its user.
type peer struct {
	name string
	// start runs the peer's n nodes (it may create their Node objects) until the test ends
	// and returns the pids of its processes; it skips the test when the peer is not built.
	start func(t *testing.T, cp *controlPlane, n int) []int
	// gives is what a user gets from the peer, for the table.
	gives string
}

// peers are the simulators TestPeers knows, by name.
var peers = map[string]peer{
	"minikubelet": {name: "minikubelet", start: startMinikubeletPeer,
		gives: "the kubelet's loops, API and metrics on a simulated runtime whose containers run their commands; one process for all nodes"},
	"kwok": {name: "kwok", start: startKWOKPeer,
		gives: "Node and Pod status written by stages (no kubelet API, containers, probes or volumes); one process for all nodes"},
	"kubemark": {name: "kubemark", start: startKubemarkPeer,
		gives: "the real kubelet v1.37.2 on a fake CRI (containers do nothing, probes never run); one process per node"},
}

// peerResult is one row of the peers table.
type peerResult struct {
	peer                          string
	nodes, pods                   int
	ready, running, deleted       time.Duration
	cpu                           float64 // cores, the peer's processes in the steady window
	rss                           int64   // KiB, summed over the peer's processes
	requestsPerSecond             float64 // the API's resource requests in the window
	steadySeconds                 float64
	requestsBefore, requestsAfter map[string]float64
	gives                         string
}

// TestPeers runs minikubelet, KWOK and kubemark's hollow node one after the other, each
// against a control plane of its own, through the same work: N nodes dn-0 ... dn-<N-1>
// Ready, a Deployment of N x P sleep infinity pods Running, a steady window, and the
// Deployment scaled to 0 until no pod is left. It prints one row per peer and a table of
// all of them: the times, the peer's steady CPU and RSS per node and per pod, and the API
// requests per node in the window. make bench-peers runs it; MINIKUBELET_PEERS names the
// peers (minikubelet,kwok,kubemark), MINIKUBELET_PEERS_NODES and _PODS are N and P (5 x 4
// by default), MINIKUBELET_PEERS_KUBEMARK_NODES is kubemark's N (one process of about
// 90 MB per node), MINIKUBELET_PEERS_STEADY the window and MINIKUBELET_PEERS_SETTLE a
// wait before it (0 by default: the window starts when every pod is Running). A peer that is not built (make
// peers) is skipped. The test runs only when MINIKUBELET_PEERS is set: make e2e-cluster
// has TestDensity for minikubelet's part.
func TestPeers(t *testing.T) {
	if os.Getenv("MINIKUBELET_PEERS") == "" {
		t.Skip("MINIKUBELET_PEERS names no peer (make bench-peers)")
	}
	nodes := densityInt(t, "MINIKUBELET_PEERS_NODES", 5)
	perNode := densityInt(t, "MINIKUBELET_PEERS_PODS", 4)
	kubemarkNodes := densityInt(t, "MINIKUBELET_PEERS_KUBEMARK_NODES", min(nodes, 5))
	window := envDuration(t, "MINIKUBELET_PEERS_STEADY", 15*time.Second)
	var settle time.Duration
	if raw := os.Getenv("MINIKUBELET_PEERS_SETTLE"); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < 0 {
			t.Fatalf("MINIKUBELET_PEERS_SETTLE=%q: want a duration, 0 or more", raw)
		}
		settle = d
	}
	names := strings.Split(os.Getenv("MINIKUBELET_PEERS"), ",")
	var results []peerResult
	for _, name := range names {
		p, ok := peers[name]
		if !ok {
			t.Fatalf("MINIKUBELET_PEERS: unknown peer %q, want minikubelet, kwok or kubemark", name)
		}
		n := nodes
		if name == "kubemark" {
			n = kubemarkNodes
		}
		t.Run(name, func(t *testing.T) {
			r := runPeer(t, p, n, perNode, settle, window)
			t.Logf("\n%s%s", peerTable([]peerResult{r}), requestTable(r.requestsBefore, r.requestsAfter, r.steadySeconds, n))
			results = append(results, r)
		})
	}
	if len(results) > 0 {
		t.Logf("\n%s", peerTable(results))
	}
}

// runPeer is one peer's run of TestPeers, against a control plane of its own.
func runPeer(t *testing.T, p peer, n, perNode int, settle, window time.Duration) peerResult {
	cp := startControlPlaneWith(t, cpOptions{density: true})
	ctx := context.Background()
	// The default service account before the nodes: the controller manager makes it within
	// seconds on an idle control plane, but behind a thousand nodes registering (or two
	// hundred hollow kubelets starting on two cores) it took longer than the wait.
	waitServiceAccount(t, cp)
	started := time.Now()
	pids := p.start(t, cp, n)
	waitNodesBack(t, cp, n, started, 5*time.Minute)
	r := peerResult{peer: p.name, nodes: n, pods: n * perNode, ready: time.Since(started), gives: p.gives}

	// A list of 10,000 pods takes the API server and the test a good part of a second: poll
	// every 100 ms per thousand pods, at most every second.
	poll := min(time.Duration(r.pods/1000+1)*100*time.Millisecond, time.Second)
	podsStart := time.Now()
	createSleepers(t, cp, "peers", r.pods)
	waitPodsRunning(t, cp, "peers", n, r.pods, poll)
	r.running = time.Since(podsStart)

	// The start's tail (events the nodes still send, statuses after Running) is in the
	// window unless a settle time passes first.
	time.Sleep(settle)
	w := steadyWindow(t, cp, p.name, pids, window, nil)
	t.Logf("\n%s", w.costTable())
	c := w.costs[p.name]
	r.cpu, r.rss, r.steadySeconds = c.cpu, c.rss, w.seconds
	r.requestsBefore, r.requestsAfter = w.requestsBefore, w.requestsAfter
	r.requestsPerSecond = resourceRequests(w.requestsAfter) - resourceRequests(w.requestsBefore)
	r.requestsPerSecond /= w.seconds

	deleteStart := time.Now()
	scale := []byte(`{"spec":{"replicas":0}}`)
	if _, err := cp.admin.AppsV1().Deployments("default").Patch(ctx, "peers", types.MergePatchType, scale, metav1.PatchOptions{}); err != nil {
		t.Fatalf("scale the deployment to 0: %v", err)
	}
	eventually.WithinEvery(t, poll, 10*time.Minute, "no pod left", func() (bool, string) {
		pods, err := cp.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=peers", ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items))
	})
	r.deleted = time.Since(deleteStart)
	return r
}

// resourceRequests is the sum of apiRequests over the API's resources: requests to no
// resource (the test's own GET /metrics, discovery, /openapi, /readyz: the key's path
// after the verb, if any, begins with a slash) are left out.
func resourceRequests(m map[string]float64) float64 {
	var sum float64
	for k, v := range m {
		if _, res, _ := strings.Cut(k, " "); res != "" && !strings.HasPrefix(res, "/") {
			sum += v
		}
	}
	return sum
}

// peerTable is the table of the peers' results, one row each.
func peerTable(rs []peerResult) string {
	var b strings.Builder
	b.WriteString("| peer | nodes | pods | Ready after | Running after | steady CPU (cores) | per node | per pod | RSS | per node | requests/s per node | deleted after | what it gives |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		fmt.Fprintf(&b, "\n| %s | %d | %d | %v | %v | %.3f | %.5f | %.6f | %d MiB | %.2f MiB | %.3f | %v | %s |",
			r.peer, r.nodes, r.pods, r.ready.Round(100*time.Millisecond), r.running.Round(100*time.Millisecond),
			r.cpu, r.cpu/float64(r.nodes), r.cpu/float64(r.pods), r.rss>>10, float64(r.rss)/1024/float64(r.nodes),
			r.requestsPerSecond/float64(r.nodes), r.deleted.Round(100*time.Millisecond), r.gives)
	}
	return b.String()
}

// peerBinary is the path of a peer's file in KUBE_BIN_DIR (make peers builds them); the test
// is skipped when it is missing.
func peerBinary(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(binDir(t), name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not built (make peers): %v", name, err)
	}
	return path
}

// startMinikubeletPeer runs one minikubelet process with --node-count n, as TestDensity.
func startMinikubeletPeer(t *testing.T, cp *controlPlane, n int) []int {
	t.Helper()
	d := startProc(t, cp.dir, "minikubelet", buildDaemon(t), densityArgs(t, cp, n)...)
	return []int{d.cmd.Process.Pid}
}

// startKWOKPeer creates n Node objects as KWOK's documentation does (the annotation
// kwok.x-k8s.io/node=fake its controller selects, the label type=kwok, and the kubelet's
// well-known labels) and runs one kwok controller with the stages kwokctl gives it by
// default (make kwok writes them as kwok-stages.yaml) and a 40 s node lease renewed every
// 10 s, as kwokctl runs it. The nodes have no taint: the cluster has no other node, so
// every peer runs the same pod spec, with no toleration and no node selector.
func startKWOKPeer(t *testing.T, cp *controlPlane, n int) []int {
	t.Helper()
	bin := peerBinary(t, "kwok")
	stages := peerBinary(t, "kwok-stages.yaml")
	ctx := context.Background()
	for i := range n {
		name := fmt.Sprintf("dn-%d", i)
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
					"kubernetes.io/arch": "amd64", "kubernetes.io/role": "agent", "node-role.kubernetes.io/agent": ""},
			},
			// The capacity minikubelet and kubemark report for a node: 110 pods.
			Status: v1.NodeStatus{Allocatable: nodeResources(), Capacity: nodeResources()},
		}
		if _, err := cp.admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", name, err)
		}
	}
	home := t.TempDir() // no ~/.kwok/kwok.yaml of the machine's is read
	d := startProcEnv(t, cp.dir, "kwok", []string{"HOME=" + home}, bin,
		"--kubeconfig", cp.kubeconfig(t, "kwok", adminToken), "--config", stages,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake",
		"--node-lease-duration-seconds", "40",
		// Pod IPs from minikubelet's simulated range: KWOK's default, 10.0.0.0/24, holds
		// 254 pods, and is the control plane's service range here.
		"--cidr", "10.88.0.0/16")
	return []int{d.cmd.Process.Pid}
}

// nodeResources is what a KWOK node reports: a kubelet's 110 pods, and CPU and memory enough
// for any number of sleepers (the pods request none).
func nodeResources() v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("256Gi"),
		v1.ResourcePods: resource.MustParse("110")}
}

// hollowRootDir finds the root directory a hollow kubelet made for itself in its log.
var hollowRootDir = regexp.MustCompile(`Using (/tmp/hollow-kubelet\.[0-9]+) as root dir for hollow-kubelet`)

// kubemarkPortBase is hollow node i's kubelet port, plus i: below the ephemeral range, so
// that no connection's local port takes it between the choice and the bind (a free port
// picked at start was taken so at 150 nodes, and that node never came up).
const kubemarkPortBase = 20000

// startKubemarkPeer runs n kubemark processes, each a hollow node (--morph=kubelet): the
// kubelet of v1.37.2 with a fake CRI runtime and image service, a fake cAdvisor and a stub
// container manager, with the admin's identity as every peer. Each listens on a kubelet
// port of its own (the hollow kubelet binds 0.0.0.0, so make bench-peers runs it in a
// network namespace with loopback only) and serves no read-only port. A hollow kubelet
// makes its root directory and its fake runtime's socket in /tmp whatever TMPDIR says;
// they are removed when the test ends.
func startKubemarkPeer(t *testing.T, cp *controlPlane, n int) []int {
	if n > kubemarkPortBase-10000 {
		t.Fatalf("%d hollow nodes: at most %d", n, kubemarkPortBase-10000)
	}
	t.Helper()
	bin := peerBinary(t, "kubemark")
	kubeconfig := cp.kubeconfig(t, "kubemark", adminToken)
	sockets0, _ := filepath.Glob("/tmp/kubelet_remote_*.sock")
	t.Cleanup(func() {
		// After every process has stopped: the cleanups run last registered first.
		sockets, _ := filepath.Glob("/tmp/kubelet_remote_*.sock")
		for _, s := range sockets {
			if !containsString(sockets0, s) {
				_ = os.Remove(s)
			}
		}
	})
	var pids []int
	for i := range n {
		name := fmt.Sprintf("dn-%d", i)
		logPath := filepath.Join(cp.dir, "kubemark-"+name+".log")
		t.Cleanup(func() {
			data, _ := os.ReadFile(logPath)
			if m := hollowRootDir.FindSubmatch(data); m != nil {
				_ = os.RemoveAll(string(m[1]))
			}
		})
		d := startProc(t, cp.dir, "kubemark-"+name, bin, "--morph=kubelet", "--name="+name, "--kubeconfig", kubeconfig,
			"--kubelet-port", strconv.Itoa(kubemarkPortBase+i), "--kubelet-read-only-port", "0",
			"--use-host-image-service=false")
		pids = append(pids, d.cmd.Process.Pid)
	}
	return pids
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
