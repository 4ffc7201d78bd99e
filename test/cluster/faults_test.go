package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/eventually"
)

// flakyProxy stands between a daemon and the API server on loopback and breaks what a test
// asks: it fails status writes (PATCH or PUT of .../status) with a 500, and cuts the watches
// in flight mid-stream (the client sees the connection drop, not a clean end).
type flakyProxy struct {
	srv        *httptest.Server
	failStatus atomic.Bool

	mu             sync.Mutex
	watches        map[*http.Request]context.CancelFunc
	statusFailures atomic.Int64
}

func newFlakyProxy(t *testing.T, target string) *flakyProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // the test's own API server
	rp.FlushInterval = -1                                                                  // watch events as they come
	p := &flakyProxy{watches: map[*http.Request]context.CancelFunc{}}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.failStatus.Load() && r.Method != http.MethodGet && strings.HasSuffix(r.URL.Path, "/status") {
			p.statusFailures.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"status write failed (injected by the test)","reason":"InternalError","code":500}`)
			return
		}
		if watch := r.URL.Query().Get("watch"); watch != "true" && watch != "1" {
			rp.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		p.mu.Lock()
		p.watches[r] = cancel
		p.mu.Unlock()
		rp.ServeHTTP(w, r.WithContext(ctx))
		p.mu.Lock()
		delete(p.watches, r)
		p.mu.Unlock()
		if ctx.Err() != nil && r.Context().Err() == nil {
			panic(http.ErrAbortHandler) // cut the connection: no clean end of the stream
		}
	}))
	p.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the connections cut on purpose
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	return p
}

// breakWatches cuts every watch in flight and reports how many there were.
func (p *flakyProxy) breakWatches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cancel := range p.watches {
		cancel()
	}
	return len(p.watches)
}

// TestAPIServerGoesAway: a node whose API server misbehaves keeps its pods running and,
// once the API server is back, everything in the API is correct again: the watch is cut
// (a pod created afterwards still starts), status writes fail for a while (a pod that
// finishes meanwhile reaches Succeeded once they pass), the API server is killed and
// restarted (a pod finishing and a static pod appearing during the outage show up after
// it, the running pod never restarts), and the Node is deleted (the node registers again).
func TestAPIServerGoesAway(t *testing.T) {
	const node = "mk-faulty"
	// The processes' logs print after a failure; say last which step failed, and log each
	// step's start, so a CI log's tail tells where to look.
	began, current := time.Now(), "setting up"
	step := func(what string) {
		current = what
		t.Logf("+%v %s", time.Since(began).Round(time.Millisecond), what)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failed at step %q, +%v (its message is above the process logs)", current, time.Since(began).Round(time.Millisecond))
		}
	})
	cp := startControlPlane(t, node)
	bin := buildDaemon(t)
	proxy := newFlakyProxy(t, cp.url)
	ctx := context.Background()

	kubeconfig := filepath.Join(cp.dir, node+".kubeconfig")
	writeFile(t, kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: node, user: {token: %q}}]
contexts: [{name: local, context: {cluster: local, user: node}}]
current-context: local
`, proxy.srv.URL, nodeToken+"-0"))
	manifests := t.TempDir()
	readOnly := freePort(t)
	daemon := startProc(t, cp.dir, node, bin, "--kubeconfig", kubeconfig, "--hostname-override", node,
		"--read-only-port", strconv.Itoa(readOnly), "--port", strconv.Itoa(freePort(t)), "--pod-manifest-path", manifests)
	waitNodeReady(t, cp, node, 0)
	waitServiceAccount(t, cp)

	pods := cp.admin.CoreV1().Pods("default")
	create := func(name, annotation string) {
		t.Helper()
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PodSpec{NodeName: node, RestartPolicy: v1.RestartPolicyAlways,
				Containers: []v1.Container{{Name: "main", Image: "busybox", Command: []string{"sleep", "infinity"}}}},
		}
		if annotation != "" {
			pod.Annotations = map[string]string{"minikubelet.io/behavior.main": annotation}
			pod.Spec.RestartPolicy = v1.RestartPolicyNever
		}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	phase := func(name string, want v1.PodPhase) {
		t.Helper()
		eventually.Within(t, 60*time.Second, name+" "+string(want)+" in the API", func() (bool, string) {
			p, err := cp.admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return p.Status.Phase == want, string(p.Status.Phase)
		})
	}
	// steadyRunning: the long-running pod runs in the daemon, never restarted (its read-only
	// port answers whatever the API server does).
	steadyRunning := func(when string) {
		t.Helper()
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(readOnly) + "/pods")
		if err != nil {
			t.Fatalf("%s: GET /pods from the daemon: %v", when, err)
		}
		defer resp.Body.Close()
		var list v1.PodList
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			if p.Name == "steady" {
				if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount != 0 {
					t.Fatalf("%s: steady is %s %+v, want Running, never restarted", when, p.Status.Phase, p.Status.ContainerStatuses)
				}
				return
			}
		}
		t.Fatalf("%s: the daemon does not run steady", when)
	}
	step("a long-running pod")
	create("steady", "")
	phase("steady", v1.PodRunning)

	step("watches cut")
	// 1. The watch is cut mid-stream: a pod created afterwards still reaches the node.
	if n := proxy.breakWatches(); n == 0 {
		t.Fatal("no watch in flight to break")
	}
	create("after-break", "")
	phase("after-break", v1.PodRunning)

	step("status writes fail")
	// 2. Status writes fail for 20s, while a pod finishes: its Succeeded gets through after.
	proxy.failStatus.Store(true)
	create("job", "runFor=3s")
	eventually.Within(t, 30*time.Second, "status writes refused", func() (bool, string) {
		return proxy.statusFailures.Load() > 0, "none yet"
	})
	<-time.After(20 * time.Second) // the outage (real processes, real time): the daemon's writes meet 500s
	proxy.failStatus.Store(false)
	phase("job", v1.PodSucceeded)
	steadyRunning("after the status writes failed")

	step("the API server killed")
	// 3. The API server crashes for 20s: a pod finishes and a static pod appears meanwhile.
	create("job2", "runFor=10s")
	phase("job2", v1.PodRunning)
	cp.killAPIServer(t)
	if err := os.WriteFile(filepath.Join(manifests, "static.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: static\nspec:\n  containers: [{name: main, image: busybox, command: [sleep, infinity]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	<-time.After(20 * time.Second) // the outage, in real time
	steadyRunning("with the API server down")
	step("the API server restarted")
	cp.restartAPIServer(t)
	phase("job2", v1.PodSucceeded)
	phase("static-"+node, v1.PodRunning) // the mirror pod
	waitNodeReady(t, cp, node, 0)
	restarted := time.Now()
	eventually.Within(t, 60*time.Second, "the lease renewed after the restart", func() (bool, string) {
		l, err := cp.admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.After(restarted), l.Spec.RenewTime.String()
	})
	steadyRunning("after the API server came back")

	step("the Node deleted")
	// 4. The Node is deleted: the node registers again, Ready, and keeps its pods.
	old, err := cp.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 60*time.Second, "the node registered again", func() (bool, string) {
		n, err := cp.admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return n.UID != old.UID && nodeReady(n) == v1.ConditionTrue, fmt.Sprintf("uid %s Ready=%s", n.UID, nodeReady(n))
	})
	phase("steady", v1.PodRunning)
	steadyRunning("after the Node was deleted")
	select {
	case <-daemon.done:
		t.Fatal("the daemon exited")
	default:
	}
}
