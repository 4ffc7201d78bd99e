package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/childproc"
	"github.com/minikubelet/minikubelet/internal/eventually"
)

// bin is the minikubelet binary TestMain builds.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "minikubelet-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "minikubelet")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := exec.Command(goTool, "build", "-o", bin, "../../cmd/minikubelet")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building minikubelet:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const webManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: nginx
    image: nginx:1.27
`

// daemon is a running minikubelet process.
type daemon struct {
	t   *testing.T
	cmd *exec.Cmd
	url string
	// manifests is the watched manifest directory.
	manifests string
	mu        sync.Mutex
	stderr    bytes.Buffer
	exited    chan error
}

var servingRE = regexp.MustCompile(`"Serving HTTP" address="([^"]+)"`)

// startDaemon starts the binary with a manifest directory holding web.yaml and waits
// for the address it serves on.
func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"--pod-manifest-path=" + dir, "--read-only-port=0", "--port=0", "--hostname-override=e2e"}, args...)
	d := &daemon{t: t, cmd: exec.Command(bin, args...), manifests: dir, exited: make(chan error, 1)}
	childproc.DieWithParent(d.cmd)
	pipe, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			d.mu.Lock()
			d.stderr.WriteString(line + "\n")
			d.mu.Unlock()
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		d.exited <- d.cmd.Wait()
	}()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
		if t.Failed() {
			t.Logf("daemon stderr:\n%s", d.log())
		}
	})
	select {
	case a := <-addr:
		d.url = "http://" + a
	case err := <-d.exited:
		d.exited <- err
		t.Fatalf("daemon exited before serving: %v\n%s", err, d.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("no Serving HTTP line within 30s:\n%s", d.log())
	}
	return d
}

func (d *daemon) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stderr.String()
}

var client = &http.Client{Timeout: 5 * time.Second}

// request does one HTTP call and returns the status and body.
func (d *daemon) request(method, path, body string) (int, string) {
	d.t.Helper()
	req, err := http.NewRequest(method, d.url+path, strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatal(err)
	}
	return resp.StatusCode, string(data)
}

func (d *daemon) getJSON(path string, v any) {
	d.t.Helper()
	code, body := d.request(http.MethodGet, path, "")
	if code != http.StatusOK {
		d.t.Fatalf("GET %s = %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		d.t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// eventually waits until cond returns true, failing the test after timeout.
func (d *daemon) eventually(timeout time.Duration, what string, cond func() (bool, string)) {
	d.t.Helper()
	eventually.Within(d.t, timeout, what, cond)
}

func (d *daemon) podPhase(name string) v1.PodPhase {
	var list v1.PodList
	d.getJSON("/pods", &list)
	for _, p := range list.Items {
		if p.Name == name {
			return p.Status.Phase
		}
	}
	return ""
}

// ready is the node's Ready condition; before the node's first status update (/node
// answers 503 until then) an empty one whose message says so.
func (d *daemon) ready() v1.NodeCondition {
	d.t.Helper()
	code, body := d.request(http.MethodGet, "/node", "")
	if code == http.StatusServiceUnavailable {
		return v1.NodeCondition{Message: "GET /node: " + body}
	}
	var node v1.Node
	if code != http.StatusOK {
		d.t.Fatalf("GET /node = %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &node); err != nil {
		d.t.Fatalf("GET /node: %v\n%s", err, body)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c
		}
	}
	return v1.NodeCondition{}
}

// terminate sends SIGTERM and returns the exit error (nil for status 0).
func (d *daemon) terminate() error {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		d.t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		d.exited <- err
		return err
	case <-time.After(30 * time.Second):
		d.t.Fatalf("the daemon did not exit within 30s of SIGTERM:\n%s", d.log())
	}
	return nil
}

// TestDaemon is issue 6's end-to-end check: the real binary runs a pod, serves its API,
// goes NotReady naming PLEG when ListPodSandbox hangs past the relist threshold, comes
// back once the fault is cleared, answers the CLI, and exits 0 on SIGTERM.
func TestDaemon(t *testing.T) {
	d := startDaemon(t, "--enable-debugging-handlers", "--relist-threshold=3s", "--node-status-update-frequency=1s")

	d.eventually(30*time.Second, "web-e2e Running", func() (bool, string) {
		p := d.podPhase("web-e2e")
		return p == v1.PodRunning, string(p)
	})
	d.eventually(15*time.Second, "node Ready", func() (bool, string) {
		c := d.ready()
		return c.Status == v1.ConditionTrue, fmt.Sprintf("%+v", c)
	})
	if code, body := d.request(http.MethodGet, "/healthz", ""); code != http.StatusOK || body != "ok" {
		t.Errorf("GET /healthz = %d %q, want 200 ok", code, body)
	}
	// The kubelet's own series, and as in the kubelet's registry the Go runtime's and the
	// process' (the kubelet dashboards' memory, CPU and goroutine panels).
	code, body := d.request(http.MethodGet, "/metrics", "")
	for _, want := range []string{"\nkubelet_pleg_relist_duration_seconds_count ", "\ngo_goroutines ", "\nprocess_resident_memory_bytes ", "\nprocess_cpu_seconds_total "} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /metrics = %d, lacks a line starting %q", code, strings.TrimSpace(want))
		}
	}

	t.Run("cli get pods", func(t *testing.T) {
		out, err := exec.Command(bin, "get", "pods", "--server", d.url).CombinedOutput()
		if err != nil {
			t.Fatalf("get pods: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME READY STATUS RESTARTS AGE" {
			t.Fatalf("get pods output:\n%s", out)
		}
		if f := strings.Fields(lines[1]); f[0] != "web-e2e" || f[1] != "1/1" || f[2] != "Running" {
			t.Errorf("get pods row = %q", lines[1])
		}
	})

	// A hung ListPodSandbox stalls the relist; after the 3s threshold the PLEG is
	// unhealthy and the next node status update (1s) reports it.
	code, body = d.request(http.MethodPost, "/debug/faults", `{"method":"ListPodSandbox","type":"hang"}`)
	if code != http.StatusCreated {
		t.Fatalf("POST /debug/faults = %d %s", code, body)
	}
	d.eventually(30*time.Second, "node NotReady naming PLEG", func() (bool, string) {
		c := d.ready()
		return c.Status == v1.ConditionFalse && strings.Contains(c.Message, "PLEG is not healthy"), fmt.Sprintf("%+v", c)
	})
	if code, body := d.request(http.MethodGet, "/healthz/pleg", ""); code != http.StatusInternalServerError {
		t.Errorf("GET /healthz/pleg during the hang = %d %q, want 500", code, body)
	}
	if code, body := d.request(http.MethodDelete, "/debug/faults", ""); code != http.StatusOK {
		t.Fatalf("DELETE /debug/faults = %d %s", code, body)
	}
	d.eventually(30*time.Second, "node Ready again", func() (bool, string) {
		c := d.ready()
		return c.Status == v1.ConditionTrue, fmt.Sprintf("%+v", c)
	})

	if err := d.terminate(); err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", err)
	}
	if !strings.Contains(d.log(), `"Shutting down"`) {
		t.Errorf("no shutdown logged:\n%s", d.log())
	}
}

// TestDebugHandlersOffByDefault: without --enable-debugging-handlers fault injection is
// not reachable.
func TestDebugHandlersOffByDefault(t *testing.T) {
	d := startDaemon(t)
	if code, _ := d.request(http.MethodPost, "/debug/faults", `{"method":"ListPodSandbox","type":"hang"}`); code != http.StatusNotFound {
		t.Errorf("POST /debug/faults = %d, want 404", code)
	}
	if err := d.terminate(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// TestCLIUnreachable: a client command against no daemon prints one line and exits 1.
func TestCLIUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "get", "pods", "--server", "http://127.0.0.1:1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit = %v, want status 1", err)
	}
	lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "cannot reach minikubelet at http://127.0.0.1:1") {
		t.Errorf("stderr = %q, want one line naming the server", stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
}

// TestGracefulShutdownIsClean: SIGTERM with graceful node shutdown terminates the pods and
// exits 0 without logging errors: a restartPolicy OnFailure pod whose container exits 0 on
// SIGTERM stays Failed (no "illegal phase transition"), and syncs cut short by the stop are
// not "Error syncing pod".
func TestGracefulShutdownIsClean(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n"+
		// Standalone: a file's secure defaults need an API server for their webhooks.
		"authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--config="+cfg)
	job := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: job\n  namespace: batch\nspec:\n  restartPolicy: OnFailure\n  containers:\n  - {name: worker, image: busybox, command: [sleep, infinity]}\n"
	if err := os.WriteFile(filepath.Join(d.manifests, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-e2e", "job-e2e"} {
		d.eventually(30*time.Second, name+" Running", func() (bool, string) {
			p := d.podPhase(name)
			return p == v1.PodRunning, string(p)
		})
	}
	started := time.Now()
	if err := d.terminate(); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want status 0", err)
	}
	if took := time.Since(started); took > 15*time.Second {
		t.Errorf("the shutdown took %v; pods that honour SIGTERM stop at once", took)
	}
	log := d.log()
	if !strings.Contains(log, "Shutdown manager completed processing shutdown event") {
		t.Fatalf("no graceful shutdown logged:\n%s", log)
	}
	shutdown := log[strings.Index(log, `"Shutting down"`):]
	for _, line := range strings.Split(shutdown, "\n") {
		if strings.HasPrefix(line, "E") {
			t.Errorf("error logged during the shutdown: %s", line)
		}
	}
}

// TestLogs: `minikubelet logs` against the daemon: a followed log streams until the
// container exits by itself, then --previous and --tail read the finished instance.
func TestLogs(t *testing.T) {
	d := startDaemon(t, "--enable-debugging-handlers")
	job := `apiVersion: v1
kind: Pod
metadata:
  name: job
  annotations: {minikubelet.io/behavior.main: "logEvery=300ms,logLine=tick {n},runFor=2s"}
spec:
  restartPolicy: Never
  containers: [{name: main, image: busybox}]
`
	if err := os.WriteFile(filepath.Join(d.manifests, "job.yaml"), []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	d.eventually(30*time.Second, "job-e2e started", func() (bool, string) {
		p := d.podPhase("job-e2e")
		return p == v1.PodRunning || p == v1.PodSucceeded, string(p)
	})
	start := time.Now()
	out, err := exec.Command(bin, "logs", "job-e2e", "-f", "--server", d.url).CombinedOutput()
	if err != nil {
		t.Fatalf("logs -f: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.Contains(got, "tick 1\n") || !strings.Contains(got, "tick 6\n") || !strings.HasSuffix(got, "minikubelet: exited with code 0 (Completed)\n") {
		t.Errorf("logs -f printed:\n%s", got)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("logs -f returned %v after the start, want soon after the 2s run", took)
	}
	out, err = exec.Command(bin, "logs", "job-e2e", "--tail", "2", "--server", d.url).CombinedOutput()
	if err != nil || string(out) != "tick 6\nminikubelet: exited with code 0 (Completed)\n" {
		t.Errorf("logs --tail 2: %v\n%q", err, out)
	}
	out, err = exec.Command(bin, "logs", "job-e2e", "--previous", "--server", d.url).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "previous terminated container") {
		t.Errorf("logs --previous of a pod that never restarted: %v\n%s", err, out)
	}
}

// TestExec: `minikubelet exec` against a standalone daemon reaches its secure port (found
// from the node's kubelet endpoint) and runs the simulated command table there: output,
// stdin and the command's exit code as the program's.
func TestExec(t *testing.T) {
	d := startDaemon(t)
	d.eventually(30*time.Second, "web-e2e Running", func() (bool, string) {
		p := d.podPhase("web-e2e")
		return p == v1.PodRunning, string(p)
	})
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantOut  string
		wantCode int
	}{
		{"echo", "", []string{"web-e2e", "--", "echo", "hi"}, "hi\n", 0},
		{"shell over the pod's hostname", "", []string{"web-e2e", "--", "sh", "-c", "hostname && cat /etc/hostname"}, "web-e2e\nweb-e2e\n", 0},
		{"stdin", "typed\n", []string{"-i", "web-e2e", "--", "cat"}, "typed\n", 0},
		{"exit code", "", []string{"web-e2e", "--", "sh", "-c", "echo before; exit 5"}, "before\nError: command terminated with exit code 5\n", 5},
		// nginx's image has no top: the exec fails as containerd's does.
		{"unknown command", "", []string{"web-e2e", "--", "top"}, "OCI runtime exec failed: exec failed: unable to start container process: exec: \"top\": executable file not found in $PATH: unknown\nError: command terminated with exit code 127\n", 127},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"exec", "--server", d.url}, tt.args...)...)
			cmd.Stdin = strings.NewReader(tt.stdin)
			out, err := cmd.CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.wantOut || code != tt.wantCode {
				t.Errorf("got %q exit %d, want %q exit %d", out, code, tt.wantOut, tt.wantCode)
			}
		})
	}
}
