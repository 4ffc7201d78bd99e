package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/eventually"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

type fakeFaults struct {
	mu     sync.Mutex
	faults []fault.Spec
	next   int
	addErr error
}

func (f *fakeFaults) AddFault(s fault.Spec) (fault.Spec, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.addErr != nil {
		return fault.Spec{}, f.addErr
	}
	f.next++
	s.ID = fmt.Sprintf("f%d", f.next)
	f.faults = append(f.faults, s)
	return s, nil
}

func (f *fakeFaults) Faults() []fault.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fault.Spec(nil), f.faults...)
}

func (f *fakeFaults) RemoveFault(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, s := range f.faults {
		if s.ID == id {
			f.faults = append(f.faults[:i], f.faults[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("no fault %q", id)
}

func (f *fakeFaults) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

type fixture struct {
	node    *v1.Node
	lease   *coordinationv1.Lease
	events  []v1.Event
	pleg    error
	faults  *fakeFaults
	reg     *metrics.Registry
	handler http.Handler
}

func newFixture(t testing.TB, debug bool, configz ConfigzProvider) *fixture {
	t.Helper()
	f := &fixture{faults: &fakeFaults{}, reg: metrics.NewRegistry("kubelet_")}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: f.reg.Name(metrics.NodeStatusReports), Help: "test"})
	c.Add(3)
	f.reg.MustRegister(c)
	var mu sync.Mutex
	pods := []*v1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node", Namespace: "default", UID: "u1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "nginx", Image: "nginx"}}},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}}
	s, err := New(Config{
		Pods:   PodsFunc(func() []*v1.Pod { return pods }),
		Node:   NodeFunc(func() *v1.Node { mu.Lock(); defer mu.Unlock(); return f.node }),
		Lease:  LeaseFunc(func() *coordinationv1.Lease { mu.Lock(); defer mu.Unlock(); return f.lease }),
		Events: EventsFunc(func() []v1.Event { mu.Lock(); defer mu.Unlock(); return f.events }),
		HealthChecks: []HealthCheck{
			HealthyCheck("pleg", func() (bool, error) { mu.Lock(); defer mu.Unlock(); return f.pleg == nil, f.pleg }),
		},
		Configz:                 configz,
		Registry:                f.reg,
		EnableDebuggingHandlers: debug,
		Faults:                  f.faults,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.handler = s.Handler()
	return f
}

type response struct {
	code   int
	ctype  string
	header http.Header
	body   string
}

func (f *fixture) do(t *testing.T, method, target, body string, header ...string) response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	return response{code: rec.Code, ctype: rec.Header().Get("Content-Type"), header: rec.Header(), body: rec.Body.String()}
}

func errorOf(t *testing.T, r response) string {
	t.Helper()
	if r.ctype != "application/json" {
		t.Fatalf("error response content type %q, want application/json (body %q)", r.ctype, r.body)
	}
	var e ErrorBody
	if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Error == "" {
		t.Fatalf("error body %q is not {\"error\": ...}: %v", r.body, err)
	}
	return e.Error
}

func TestHealthz(t *testing.T) {
	f := newFixture(t, false, nil)
	for _, tc := range []struct {
		name, target string
		plegErr      error
		wantCode     int
		wantBody     string
	}{
		{"all healthy", "/healthz", nil, 200, "ok"},
		{"verbose", "/healthz?verbose", nil, 200, "[+]ping ok\n[+]pleg ok\nhealthz check passed\n"},
		{"pleg unhealthy", "/healthz", errors.New("pleg was last seen active 3m10s ago; threshold is 3m0s"), 500,
			"[+]ping ok\n[-]pleg failed: pleg was last seen active 3m10s ago; threshold is 3m0s\nhealthz check failed\n"},
		{"single check ok", "/healthz/pleg", nil, 200, "ok"},
		{"single check failing", "/healthz/pleg", errors.New("pleg has yet to be successful"), 500, "internal server error: pleg has yet to be successful\n"},
		{"ping", "/healthz/ping", errors.New("ignored"), 200, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.pleg = tc.plegErr
			r := f.do(t, "GET", tc.target, "")
			if r.code != tc.wantCode || r.body != tc.wantBody {
				t.Fatalf("GET %s = %d %q, want %d %q", tc.target, r.code, r.body, tc.wantCode, tc.wantBody)
			}
			if r.ctype != "text/plain; charset=utf-8" {
				t.Errorf("content type %q", r.ctype)
			}
		})
	}
	if r := f.do(t, "GET", "/healthz/nope", ""); r.code != 404 {
		t.Errorf("unknown check: %d", r.code)
	}
}

func TestSyncLoopHealthCheck(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	var entered time.Time
	check := SyncLoopHealthCheck(clk, time.Second, func() time.Time { return entered })
	if err := check.Check(); err != nil {
		t.Fatalf("before the first iteration: %v", err)
	}
	entered = clk.Now()
	clk.Step(5 * time.Minute)
	if err := check.Check(); err != nil {
		t.Fatalf("at 5m (the floor): %v", err)
	}
	clk.Step(time.Nanosecond)
	if err := check.Check(); err == nil || err.Error() != "sync Loop took longer than expected" {
		t.Fatalf("after 5m: %v", err)
	}
	long := SyncLoopHealthCheck(clk, 4*time.Minute, func() time.Time { return entered })
	if err := long.Check(); err != nil {
		t.Fatalf("2 x 4m = 8m allowed: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	f := newFixture(t, false, nil)
	r := f.do(t, "GET", "/metrics", "")
	if r.code != 200 || !strings.HasPrefix(r.ctype, "text/plain; version=0.0.4") || !strings.Contains(r.body, "kubelet_node_status_reports_total 3") {
		t.Fatalf("text format: %d %q\n%s", r.code, r.ctype, r.body)
	}
	r = f.do(t, "GET", "/metrics", "", "Accept", "application/openmetrics-text; version=1.0.0")
	if r.code != 200 || !strings.HasPrefix(r.ctype, "application/openmetrics-text") || !strings.HasSuffix(r.body, "# EOF\n") {
		t.Fatalf("OpenMetrics: %d %q\n%s", r.code, r.ctype, r.body)
	}
}

func TestPods(t *testing.T) {
	f := newFixture(t, false, nil)
	r := f.do(t, "GET", "/pods", "")
	if r.code != 200 || r.ctype != "application/json" {
		t.Fatalf("GET /pods = %d %q", r.code, r.ctype)
	}
	var list v1.PodList
	if err := json.Unmarshal([]byte(r.body), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 1 || list.Items[0].Name != "web-node" || list.Items[0].Status.Phase != v1.PodRunning {
		t.Fatalf("pod list %+v", list)
	}
}

func TestNodeAndLease(t *testing.T) {
	f := newFixture(t, false, nil)
	if r := f.do(t, "GET", "/node", ""); r.code != 503 || !strings.Contains(errorOf(t, r), "not registered") {
		t.Fatalf("node before registration: %d %s", r.code, r.body)
	}
	if r := f.do(t, "GET", "/lease", ""); r.code != 503 || !strings.Contains(errorOf(t, r), "lease") {
		t.Fatalf("lease before creation: %d %s", r.code, r.body)
	}
	holder := "node"
	f.node = &v1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "node"},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Message: "PLEG is not healthy: x"}}}}
	f.lease = &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "node", Namespace: "kube-node-lease"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	r := f.do(t, "GET", "/node", "")
	var node v1.Node
	if r.code != 200 || r.ctype != "application/json" || json.Unmarshal([]byte(r.body), &node) != nil || node.Status.Conditions[0].Message != "PLEG is not healthy: x" || node.Kind != "Node" {
		t.Fatalf("GET /node = %d %s", r.code, r.body)
	}
	r = f.do(t, "GET", "/lease", "")
	var lease coordinationv1.Lease
	if r.code != 200 || json.Unmarshal([]byte(r.body), &lease) != nil || *lease.Spec.HolderIdentity != "node" || lease.APIVersion != "coordination.k8s.io/v1" {
		t.Fatalf("GET /lease = %d %s", r.code, r.body)
	}
}

func TestEvents(t *testing.T) {
	f := newFixture(t, false, nil)
	r := f.do(t, "GET", "/events", "")
	if r.code != 200 || !strings.Contains(r.body, `"items":[]`) || !strings.Contains(r.body, `"kind":"EventList"`) {
		t.Fatalf("empty events: %d %s", r.code, r.body)
	}
	for i := 1; i <= 4; i++ {
		f.events = append(f.events, v1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i)}, Reason: fmt.Sprintf("R%d", i)})
	}
	for _, tc := range []struct {
		target string
		want   []string
	}{
		{"/events", []string{"R1", "R2", "R3", "R4"}},
		{"/events?limit=2", []string{"R3", "R4"}},
		{"/events?limit=10", []string{"R1", "R2", "R3", "R4"}},
	} {
		t.Run(tc.target, func(t *testing.T) {
			r := f.do(t, "GET", tc.target, "")
			var list v1.EventList
			if r.code != 200 || json.Unmarshal([]byte(r.body), &list) != nil {
				t.Fatalf("%d %s", r.code, r.body)
			}
			var got []string
			for _, e := range list.Items {
				got = append(got, e.Reason)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"0", "-1", "x"} {
		r := f.do(t, "GET", "/events?limit="+bad, "")
		if r.code != 400 || errorOf(t, r) != fmt.Sprintf("invalid limit %q: must be a positive integer", bad) {
			t.Errorf("limit=%s: %d %s", bad, r.code, r.body)
		}
	}
}

func TestConfigz(t *testing.T) {
	f := newFixture(t, false, ConfigzFunc(func() any {
		return map[string]any{"kubeletconfig": map[string]any{"nodeStatusUpdateFrequency": "10s"}, "featureGates": map[string]bool{"EventedPLEG": false}}
	}))
	r := f.do(t, "GET", "/configz", "")
	if r.code != 200 || r.ctype != "application/json" || !strings.Contains(r.body, `"nodeStatusUpdateFrequency":"10s"`) || !strings.Contains(r.body, `"EventedPLEG":false`) {
		t.Fatalf("GET /configz = %d %s", r.code, r.body)
	}
	if r := newFixture(t, false, nil).do(t, "GET", "/configz", ""); r.code != 404 {
		t.Fatalf("no provider: %d", r.code)
	}
}

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	f := newFixture(t, true, nil)
	for _, tc := range []struct {
		method, target string
		wantCode       int
		wantErr        string
		wantAllow      string
	}{
		{"GET", "/nope", 404, "no such endpoint: /nope", ""},
		{"GET", "/pods/extra", 404, "no such endpoint: /pods/extra", ""},
		{"POST", "/pods", 405, "method POST not allowed on /pods (allowed: GET, HEAD)", "GET, HEAD"},
		{"DELETE", "/node", 405, "method DELETE not allowed on /node (allowed: GET, HEAD)", "GET, HEAD"},
		{"PUT", "/debug/faults", 405, "method PUT not allowed on /debug/faults (allowed: DELETE, GET, HEAD, POST)", "DELETE, GET, HEAD, POST"},
		{"POST", "/debug/faults/f1", 405, "method POST not allowed on /debug/faults/f1 (allowed: DELETE, GET, HEAD)", "DELETE, GET, HEAD"},
		{"POST", "/healthz", 405, "method POST not allowed on /healthz (allowed: GET, HEAD)", "GET, HEAD"},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			r := f.do(t, tc.method, tc.target, "")
			if r.code != tc.wantCode || errorOf(t, r) != tc.wantErr || r.header.Get("Allow") != tc.wantAllow {
				t.Fatalf("%d %s Allow=%q", r.code, r.body, r.header.Get("Allow"))
			}
		})
	}
}

func TestDebugHandlersDisabled(t *testing.T) {
	f := newFixture(t, false, nil)
	for _, tc := range []struct{ method, target, body string }{
		{"GET", "/debug/faults", ""},
		{"POST", "/debug/faults", `{"method":"ListPodSandbox","type":"hang"}`},
		{"DELETE", "/debug/faults", ""},
		{"DELETE", "/debug/faults/f1", ""},
	} {
		r := f.do(t, tc.method, tc.target, tc.body)
		if r.code != 404 || !strings.Contains(errorOf(t, r), "--enable-debugging-handlers") {
			t.Errorf("%s %s = %d %s", tc.method, tc.target, r.code, r.body)
		}
	}
	if len(f.faults.Faults()) != 0 {
		t.Fatal("a disabled handler added a fault")
	}
	if _, err := New(Config{Pods: PodsFunc(nil), Node: NodeFunc(nil), Lease: LeaseFunc(nil), Events: EventsFunc(nil), Registry: f.reg, EnableDebuggingHandlers: true}); err == nil {
		t.Fatal("debugging handlers without a FaultManager accepted")
	}
}

func TestFaultHandlers(t *testing.T) {
	f := newFixture(t, true, nil)
	r := f.do(t, "GET", "/debug/faults", "")
	if r.code != 200 || strings.TrimSpace(r.body) != `{"items":[]}` {
		t.Fatalf("empty list: %d %s", r.code, r.body)
	}
	r = f.do(t, "POST", "/debug/faults", `{"method":"ListPodSandbox","type":"hang"}`)
	var stored fault.Spec
	if r.code != 201 || r.ctype != "application/json" || json.Unmarshal([]byte(r.body), &stored) != nil || stored.ID != "f1" || stored.Method != "ListPodSandbox" {
		t.Fatalf("POST = %d %s", r.code, r.body)
	}
	if loc := r.header.Get("Location"); loc != "/debug/faults/f1" {
		t.Errorf("Location %q", loc)
	}
	f.do(t, "POST", "/debug/faults", `{"method":"Status","type":"notReady","condition":"NetworkReady"}`)
	r = f.do(t, "GET", "/debug/faults", "")
	var list FaultList
	if json.Unmarshal([]byte(r.body), &list) != nil || len(list.Items) != 2 || list.Items[1].Condition != "NetworkReady" {
		t.Fatalf("list: %s", r.body)
	}
	if r := f.do(t, "GET", "/debug/faults/f2", ""); r.code != 200 || !strings.Contains(r.body, `"id":"f2"`) {
		t.Fatalf("GET one: %d %s", r.code, r.body)
	}
	if r := f.do(t, "DELETE", "/debug/faults/f1", ""); r.code != 200 || !strings.Contains(r.body, `"id":"f1"`) {
		t.Fatalf("DELETE one: %d %s", r.code, r.body)
	}
	for _, target := range []string{"/debug/faults/f1", "/debug/faults/zzz"} {
		for _, m := range []string{"GET", "DELETE"} {
			if r := f.do(t, m, target, ""); r.code != 404 || !strings.Contains(errorOf(t, r), "no fault with id") {
				t.Fatalf("%s %s: %d %s", m, target, r.code, r.body)
			}
		}
	}
	if r := f.do(t, "DELETE", "/debug/faults", ""); r.code != 200 || strings.TrimSpace(r.body) != `{"cleared":1}` {
		t.Fatalf("clear: %d %s", r.code, r.body)
	}
	if n := len(f.faults.Faults()); n != 0 {
		t.Fatalf("%d faults left after clear", n)
	}
}

func TestAddFaultRejectsBadInput(t *testing.T) {
	f := newFixture(t, true, nil)
	for _, tc := range []struct{ name, body, want string }{
		{"unknown field", `{"method":"ListPodSandbox","type":"hang","delya":"1s"}`, `invalid fault JSON: json: unknown field "delya"`},
		{"malformed", `{"method":`, "invalid fault JSON: unexpected EOF"},
		{"wrong type", `{"method":"ListPodSandbox","type":"error","count":"two"}`, "invalid fault JSON: json: cannot unmarshal string into Go struct field Spec.count of type int"},
		{"bad duration", `{"method":"ListPodSandbox","type":"latency","delay":"soon"}`, `invalid fault JSON: time: invalid duration "soon"`},
		{"empty", ``, "invalid fault: empty body, want one fault as JSON"},
		{"two objects", `{"method":"Status","type":"hang"}{"method":"Status","type":"hang"}`, "trailing data"},
		{"invalid spec", `{"method":"ListPodSandbox","type":"explode"}`, `invalid fault: fault field "type": unknown fault type "explode"`},
		{"unknown method", `{"method":"ListPods","type":"hang"}`, `invalid fault: fault field "method": unknown runtime method "ListPods"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, "POST", "/debug/faults", tc.body)
			if r.code != 400 || !strings.Contains(errorOf(t, r), tc.want) {
				t.Fatalf("%d %s, want 400 containing %q", r.code, r.body, tc.want)
			}
		})
	}
	f.faults.addErr = errors.New("runtime refused")
	if r := f.do(t, "POST", "/debug/faults", `{"method":"Status","type":"hang"}`); r.code != 400 || errorOf(t, r) != "adding fault: runtime refused" {
		t.Fatalf("AddFault error: %d %s", r.code, r.body)
	}
	if n := len(f.faults.Faults()); n != 0 {
		t.Fatalf("%d faults stored from bad requests", n)
	}
}

func TestEveryResponseHasContentType(t *testing.T) {
	f := newFixture(t, true, ConfigzFunc(func() any { return struct{}{} }))
	f.node = &v1.Node{}
	f.lease = &coordinationv1.Lease{}
	for _, target := range []string{"/healthz", "/healthz/ping", "/healthz/pleg", "/metrics", "/pods", "/node", "/lease", "/events", "/configz", "/debug/faults", "/missing"} {
		for _, m := range []string{"GET", "HEAD", "PATCH"} {
			if r := f.do(t, m, target, ""); r.ctype == "" {
				t.Errorf("%s %s (%d): no Content-Type", m, target, r.code)
			}
		}
	}
}

func TestNewValidates(t *testing.T) {
	reg := metrics.NewRegistry("")
	base := func() Config {
		return Config{Pods: PodsFunc(nil), Node: NodeFunc(nil), Lease: LeaseFunc(nil), Events: EventsFunc(nil), Registry: reg}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no pods", func(c *Config) { c.Pods = nil }, "Config.Pods is required"},
		{"no registry", func(c *Config) { c.Registry = nil }, "Config.Registry is required"},
		{"duplicate check", func(c *Config) {
			c.HealthChecks = []HealthCheck{{Name: "pleg", Check: func() error { return nil }}, {Name: "pleg", Check: func() error { return nil }}}
		}, `health check "pleg" registered twice`},
		{"bad check name", func(c *Config) { c.HealthChecks = []HealthCheck{{Name: "a/b", Check: func() error { return nil }}} }, `health check "a/b" needs a path-safe name`},
		{"negative grace", func(c *Config) { c.ShutdownGracePeriod = -time.Second }, "ShutdownGracePeriod must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			tc.mutate(&cfg)
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestServeLogsAddressAndShutsDown(t *testing.T) {
	f := newFixture(t, false, nil)
	s, err := New(Config{Pods: PodsFunc(func() []*v1.Pod { return nil }), Node: NodeFunc(func() *v1.Node { return nil }),
		Lease: LeaseFunc(func() *coordinationv1.Lease { return nil }), Events: EventsFunc(func() []v1.Event { return nil }), Registry: f.reg})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, "127.0.0.1:0") }()

	var addr string
	eventually.True(t, "the Serving HTTP log line", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, `"msg"="Serving HTTP"`) {
				i := strings.Index(l, `"address"="`)
				addr = strings.TrimSuffix(l[i+len(`"address"="`):], `"`)
			}
		}
		return addr != ""
	})
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("logged address %q is not the bound one", addr)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("GET /healthz over TCP = %d %q", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve() = %v after shutdown, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after ctx ended")
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

func TestServeReportsBindError(t *testing.T) {
	f := newFixture(t, false, nil)
	s, _ := New(Config{Pods: PodsFunc(nil), Node: NodeFunc(nil), Lease: LeaseFunc(nil), Events: EventsFunc(nil), Registry: f.reg})
	if err := s.Serve(context.Background(), "256.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "listening on 256.0.0.1:1") {
		t.Fatalf("Serve(bad addr) = %v", err)
	}
}

func BenchmarkPods(b *testing.B) {
	pods := make([]*v1.Pod, 100)
	for i := range pods {
		pods[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "default"},
			Spec:   v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}
	}
	s, err := New(Config{Pods: PodsFunc(func() []*v1.Pod { return pods }), Node: NodeFunc(nil), Lease: LeaseFunc(nil), Events: EventsFunc(nil), Registry: metrics.NewRegistry("")})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/pods", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
