package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var now = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// fakeDaemon serves the canned testdata like a running daemon.
type fakeDaemon struct {
	mu          sync.Mutex
	debug       bool
	posted      []fault.Spec
	deleted     []string
	faultsEmpty bool
}

func (d *fakeDaemon) handler(t *testing.T) http.Handler {
	file := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	jsonReply := func(w http.ResponseWriter, code int, data []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write(data)
	}
	disabled := []byte(`{"error":"debugging handlers are disabled; start the daemon with --enable-debugging-handlers (or enableDebuggingHandlers: true)"}`)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, r *http.Request) { jsonReply(w, 200, file("pods.json")) })
	mux.HandleFunc("GET /node", func(w http.ResponseWriter, r *http.Request) { jsonReply(w, 200, file("node.json")) })
	mux.HandleFunc("GET /lease", func(w http.ResponseWriter, r *http.Request) { jsonReply(w, 200, file("lease.json")) })
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		var list v1.EventList
		if err := json.Unmarshal(file("events.json"), &list); err != nil {
			t.Error(err)
		}
		if l := r.URL.Query().Get("limit"); l != "" {
			var n int
			fmt.Sscan(l, &n)
			list.Items = list.Items[len(list.Items)-n:]
		}
		data, _ := json.Marshal(list)
		jsonReply(w, 200, data)
	})
	mux.HandleFunc("GET /debug/faults", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		switch {
		case !d.debug:
			jsonReply(w, 404, disabled)
		case d.faultsEmpty:
			jsonReply(w, 200, []byte(`{"items":[]}`))
		default:
			jsonReply(w, 200, file("faults.json"))
		}
	})
	mux.HandleFunc("POST /debug/faults", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if !d.debug {
			jsonReply(w, 404, disabled)
			return
		}
		var s fault.Spec
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			data, _ := json.Marshal(map[string]string{"error": err.Error()})
			jsonReply(w, 400, data)
			return
		}
		d.posted = append(d.posted, s)
		s.ID = fmt.Sprintf("f%d", 3+len(d.posted))
		data, _ := json.Marshal(s)
		jsonReply(w, 201, data)
	})
	mux.HandleFunc("DELETE /debug/faults", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.deleted = append(d.deleted, "*")
		jsonReply(w, 200, []byte(`{"cleared":3}`))
	})
	mux.HandleFunc("DELETE /debug/faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		id := r.PathValue("id")
		if id != "f1" {
			data, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("no fault with id %q", id)})
			jsonReply(w, 404, data)
			return
		}
		d.deleted = append(d.deleted, id)
		jsonReply(w, 200, []byte(`{"id":"f1","method":"ListPodSandbox","type":"hang"}`))
	})
	return mux
}

type result struct {
	stdout, stderr string
	err            error
}

// execute runs the commands as the minikubelet binary does: under a root that silences
// cobra's own error and usage printing, with main printing a returned error once.
func execute(t *testing.T, server string, stdin string, args ...string) result {
	t.Helper()
	root := &cobra.Command{Use: "minikubelet", SilenceErrors: true, SilenceUsage: true}
	AddCommands(root, Options{Clock: clocktesting.NewFakeClock(now), DefaultServer: server})
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		fmt.Fprintln(&errOut, "Error:", err) // what cmd/minikubelet's main does
	}
	return result{stdout: out.String(), stderr: errOut.String(), err: err}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/cli -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", path, diff)
	}
}

func TestGolden(t *testing.T) {
	d := &fakeDaemon{debug: true}
	srv := httptest.NewServer(d.handler(t))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"get-pods", []string{"get", "pods"}},
		{"get-pods-all-namespaces", []string{"get", "po", "-A"}},
		{"get-pods-namespace", []string{"get", "pods", "-n", "kube-system"}},
		{"get-pods-json", []string{"get", "pods", "-n", "kube-system", "-o", "json"}},
		{"get-node", []string{"get", "node"}},
		{"get-node-yaml", []string{"get", "nodes", "-o", "yaml"}},
		{"get-events", []string{"get", "events"}},
		{"get-events-limit", []string{"get", "events", "--limit", "2"}},
		{"describe-pod-crash", []string{"describe", "pod", "crash-node"}},
		{"describe-pod-web", []string{"describe", "pod", "web-node", "-n", "default"}},
		{"describe-pod-init", []string{"describe", "pod", "init-node"}},
		{"describe-node", []string{"describe", "node"}},
		{"fault-list", []string{"fault", "list"}},
		{"fault-list-yaml", []string{"fault", "list", "-o", "yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, srv.URL, "", tc.args...)
			if r.err != nil || r.stderr != "" {
				t.Fatalf("%v: err %v, stderr %q", tc.args, r.err, r.stderr)
			}
			golden(t, tc.name, r.stdout)
		})
	}
}

func TestPodStatusColumn(t *testing.T) {
	var list v1.PodList
	data, err := os.ReadFile("testdata/pods.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string][3]string{}
	for i := range list.Items {
		r := podRow(&list.Items[i], now)
		got[r.Name] = [3]string{r.Ready, r.Status, r.Restarts}
	}
	want := map[string][3]string{
		"web-node":      {"1/1", "Running", "0"},
		"crash-node":    {"0/1", "CrashLoopBackOff", "5 (3m ago)"},
		"init-node":     {"0/1", "Init:0/1", "0"},
		"job-node":      {"0/1", "Completed", "0"},
		"badinit-node":  {"0/1", "Init:CrashLoopBackOff", "3 (45s ago)"},
		"creating-node": {"0/1", "ContainerCreating", "0"},
		"leaving-node":  {"1/1", "Terminating", "0"},
		"sidecar-node":  {"2/2", "Running", "1 (8m2s ago)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("READY/STATUS/RESTARTS (-want +got):\n%s", diff)
	}
}

func TestPodStatusEdgeCases(t *testing.T) {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	for _, tc := range []struct {
		name string
		pod  v1.Pod
		want string
	}{
		{"pending without statuses", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, Status: v1.PodStatus{Phase: v1.PodPending}}, "Pending"},
		{"terminated without reason: exit code", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, Status: v1.PodStatus{Phase: v1.PodFailed,
			ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 3}}}}}}, "ExitCode:3"},
		{"terminated by signal", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, Status: v1.PodStatus{Phase: v1.PodFailed,
			ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Signal: 9}}}}}}, "Signal:9"},
		{"init failed without reason", v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i"}}, Containers: []v1.Container{{Name: "a"}}}, Status: v1.PodStatus{Phase: v1.PodPending,
			InitContainerStatuses: []v1.ContainerStatus{{Name: "i", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}}}}, "Init:ExitCode:1"},
		{"completed container but another still running, pod ready", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
				ContainerStatuses: []v1.ContainerStatus{{Name: "a", Ready: true, State: running}, {Name: "b", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}}}}, "Running"},
		{"completed container but another still running, pod not ready", v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning,
				ContainerStatuses: []v1.ContainerStatus{{Name: "a", Ready: true, State: running}, {Name: "b", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Completed"}}}}}}, "NotReady"},
		{"pod reason wins over phase", v1.Pod{Status: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"}}, "Evicted"},
		{"deleted but finished stays", v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{Time: now}}, Status: v1.PodStatus{Phase: v1.PodSucceeded}}, "Succeeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podRow(&tc.pod, now).Status; got != tc.want {
				t.Errorf("STATUS = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTolerationString checks the Tolerations line of describe pod against kubectl's
// format; every static pod carries {operator: Exists, effect: NoExecute}.
func TestTolerationString(t *testing.T) {
	secs := int64(300)
	for _, tc := range []struct {
		name string
		tol  v1.Toleration
		want string
	}{
		{"tolerate everything", v1.Toleration{Operator: v1.TolerationOpExists}, "op=Exists"},
		{"static pod default: effect only", v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}, ":NoExecute op=Exists"},
		{"key and effect with seconds", v1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs},
			"node.kubernetes.io/not-ready:NoExecute op=Exists for 300s"},
		{"key only", v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists}, "dedicated op=Exists"},
		{"equal with value", v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}, "dedicated=gpu:NoSchedule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tolerationString(tc.tol); got != tc.want {
				t.Errorf("tolerationString() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUnreachableDaemon(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	for _, args := range [][]string{
		{"get", "pods"},
		{"get", "node", "--server", url},
		{"describe", "node"},
		{"fault", "list"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := execute(t, url, "", args...)
			want := fmt.Sprintf("Error: cannot reach minikubelet at %s: connection refused (is the daemon running? start it with \"make run\")\n", url)
			if r.stderr != want {
				t.Errorf("stderr = %q, want exactly one line %q", r.stderr, want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing (no usage)", r.stdout)
			}
			if code := ExitCode(r.err); code != 1 {
				t.Errorf("ExitCode = %d, want 1", code)
			}
			var ue *UnreachableError
			if !errors.As(r.err, &ue) {
				t.Errorf("error %T does not wrap *UnreachableError", r.err)
			}
		})
	}
}

func TestFaultCommands(t *testing.T) {
	d := &fakeDaemon{debug: true}
	srv := httptest.NewServer(d.handler(t))
	defer srv.Close()

	r := execute(t, srv.URL, "", "fault", "add", "--method", "ListPodSandbox", "--type", "hang", "--for", "5m")
	if r.err != nil || r.stdout != "fault f4 added: ListPodSandbox hang for=5m0s\n" {
		t.Fatalf("fault add: %q %q %v", r.stdout, r.stderr, r.err)
	}
	r = execute(t, srv.URL, "", "fault", "add", "--method", "Status", "--type", "notReady", "--condition", "NetworkReady", "-o", "json")
	if r.err != nil || !strings.Contains(r.stdout, `"id": "f5"`) || !strings.Contains(r.stdout, `"condition": "NetworkReady"`) {
		t.Fatalf("fault add -o json: %q %v", r.stdout, r.err)
	}
	yamlFault := "method: StartContainer\ntype: error\nmessage: disk full\ncount: 2\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "fault.yaml")
	if err := os.WriteFile(path, []byte(yamlFault), 0o644); err != nil {
		t.Fatal(err)
	}
	r = execute(t, srv.URL, "", "fault", "add", "-f", path)
	if r.err != nil || r.stdout != "fault f6 added: StartContainer error message=\"disk full\" count=2\n" {
		t.Fatalf("fault add -f: %q %q %v", r.stdout, r.stderr, r.err)
	}
	r = execute(t, srv.URL, "method: ListContainers\ntype: latency\ndelay: 1s\n", "fault", "add", "-f", "-")
	if r.err != nil || r.stdout != "fault f7 added: ListContainers latency delay=1s\n" {
		t.Fatalf("fault add -f -: %q %q %v", r.stdout, r.stderr, r.err)
	}
	d.mu.Lock()
	wantPosted := []fault.Spec{
		{Method: "ListPodSandbox", Type: fault.Hang, For: metav1.Duration{Duration: 5 * time.Minute}},
		{Method: "Status", Type: fault.NotReady, Condition: "NetworkReady"},
		{Method: "StartContainer", Type: fault.Error, Message: "disk full", Count: 2},
		{Method: "ListContainers", Type: fault.Latency, Delay: metav1.Duration{Duration: time.Second}},
	}
	if diff := cmp.Diff(wantPosted, d.posted); diff != "" {
		t.Errorf("posted faults (-want +got):\n%s", diff)
	}
	d.mu.Unlock()

	r = execute(t, srv.URL, "", "fault", "clear", "f1")
	if r.err != nil || r.stdout != "fault f1 cleared\n" {
		t.Fatalf("fault clear f1: %q %v", r.stdout, r.err)
	}
	r = execute(t, srv.URL, "", "fault", "clear")
	if r.err != nil || r.stdout != "3 fault(s) cleared\n" {
		t.Fatalf("fault clear: %q %v", r.stdout, r.err)
	}
	r = execute(t, srv.URL, "", "fault", "clear", "nope")
	if ExitCode(r.err) != 1 || r.stderr != "Error: DELETE /debug/faults/nope: no fault with id \"nope\"\n" {
		t.Fatalf("fault clear unknown: %q %v", r.stderr, r.err)
	}
	d.mu.Lock()
	d.faultsEmpty = true
	d.mu.Unlock()
	r = execute(t, srv.URL, "", "fault", "list")
	if r.err != nil || r.stdout != "" || r.stderr != "No faults injected.\n" {
		t.Fatalf("empty fault list: %q %q %v", r.stdout, r.stderr, r.err)
	}
}

func TestCommandErrors(t *testing.T) {
	enabled := httptest.NewServer((&fakeDaemon{debug: true}).handler(t))
	defer enabled.Close()
	disabled := httptest.NewServer((&fakeDaemon{}).handler(t))
	defer disabled.Close()
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badFile, []byte("method: Status\ntype: hang\ndelya: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		server string
		args   []string
		want   string
	}{
		{"debug handlers disabled", disabled.URL, []string{"fault", "list"},
			"Error: GET /debug/faults: debugging handlers are disabled; start the daemon with --enable-debugging-handlers (or enableDebuggingHandlers: true)\n"},
		{"invalid fault flags", enabled.URL, []string{"fault", "add", "--method", "ListPods", "--type", "hang"},
			"Error: invalid fault: fault field \"method\": unknown runtime method \"ListPods\""},
		{"missing type", enabled.URL, []string{"fault", "add", "--method", "Status"},
			"Error: invalid fault: fault field \"type\" is required"},
		{"flags with -f", enabled.URL, []string{"fault", "add", "-f", badFile, "--method", "Status"},
			"Error: --method cannot be combined with -f: put it in the file\n"},
		{"unknown field in file", enabled.URL, []string{"fault", "add", "-f", badFile},
			`unknown field "delya"`},
		{"missing file", enabled.URL, []string{"fault", "add", "-f", filepath.Join(dir, "nope.yaml")},
			"Error: reading fault file: open "},
		{"bad output format", enabled.URL, []string{"get", "pods", "-o", "xml"},
			"Error: unknown output format \"xml\" (use json or yaml)\n"},
		{"unknown pod", enabled.URL, []string{"describe", "pod", "nginx"},
			"Error: pod \"nginx\" not found (pods: badinit-node, crash-node, creating-node, init-node, job-node, leaving-node, sidecar-node, web-node)\n"},
		{"pod in another namespace", enabled.URL, []string{"describe", "pod", "web-node", "-n", "kube-system"},
			"Error: pod \"web-node\" not found in namespace \"kube-system\"\n"},
		{"wrong node name", enabled.URL, []string{"get", "node", "other"},
			"Error: node \"other\" not found (this daemon runs node \"node\")\n"},
		{"bad server URL", "localhost:10255", []string{"get", "pods"},
			"Error: invalid --server \"localhost:10255\": want http://HOST:PORT\n"},
		{"unknown resource type", enabled.URL, []string{"get", "deployments"},
			"Error: unknown command \"deployments\" for \"minikubelet get\" (one of: events, node, pods)\n"},
		{"unknown describe target", enabled.URL, []string{"describe", "lease"},
			"Error: unknown command \"lease\" for \"minikubelet describe\" (one of: node, pod)\n"},
		{"unknown fault command", enabled.URL, []string{"fault", "remove", "f1"},
			"Error: unknown command \"remove\" for \"minikubelet fault\" (one of: add, clear, list)\n"},
		{"negative limit", enabled.URL, []string{"get", "events", "--limit", "-1"},
			"Error: --limit must not be negative, got -1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := execute(t, tc.server, "", tc.args...)
			if ExitCode(r.err) != 1 {
				t.Errorf("ExitCode = %d, want 1", ExitCode(r.err))
			}
			if !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr = %q, want one line containing %q", r.stderr, tc.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}

	// argument errors are cobra's, one line too
	r := execute(t, enabled.URL, "", "describe", "pod")
	if ExitCode(r.err) != 1 || r.stderr != "Error: accepts 1 arg(s), received 0\n" {
		t.Errorf("missing argument: err %v stderr %q", r.err, r.stderr)
	}
	// a parent command alone shows its help and succeeds
	if r := execute(t, enabled.URL, "", "get"); r.err != nil || !strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("get alone: err %v stdout %q", r.err, r.stdout)
	}
	if ExitCode(nil) != 0 {
		t.Error("ExitCode(nil) != 0")
	}
}

func TestEmptyResults(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[]}`)
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"kind":"EventList","apiVersion":"v1","items":[]}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if r := execute(t, srv.URL, "", "get", "pods"); r.err != nil || r.stdout != "" || r.stderr != "No resources found.\n" {
		t.Errorf("get pods: %q %q %v", r.stdout, r.stderr, r.err)
	}
	if r := execute(t, srv.URL, "", "get", "events"); r.err != nil || r.stdout != "" || r.stderr != "No events found.\n" {
		t.Errorf("get events: %q %q %v", r.stdout, r.stderr, r.err)
	}
}

func BenchmarkGetPodsTable(b *testing.B) {
	data, err := os.ReadFile("testdata/pods.json")
	if err != nil {
		b.Fatal(err)
	}
	var list v1.PodList
	if err := json.Unmarshal(data, &list); err != nil {
		b.Fatal(err)
	}
	var pods []v1.Pod
	for len(pods) < 100 {
		pods = append(pods, list.Items...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := printPodTable(io.Discard, pods, now, true); err != nil {
			b.Fatal(err)
		}
	}
}
