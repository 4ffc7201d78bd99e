package agnhost

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/minikubelet/minikubelet/pkg/images"
	"github.com/minikubelet/minikubelet/pkg/programs"
	"github.com/minikubelet/minikubelet/pkg/programs/netclients"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// The addresses of the test pods: A serves, B is a client on the same network.
const (
	ipA = "10.88.0.5"
	ipB = "10.88.0.6"
)

// netPod is a container of the agnhost image in a pod on a simulated network.
type netPod struct {
	m          *shell.Machine
	fs         *vfs.View
	stdout     bytes.Buffer
	stderr     bytes.Buffer
	pid        int
	exited     bool
	status     int
	exitedAt   time.Duration
	now        time.Duration
	hostname   string
	ns         *simnet.Namespace
	netw       *simnet.Network
	startedErr error
}

func newNetPod(t *testing.T, netw *simnet.Network, ns *simnet.Namespace, hostname string, setup func(fs *vfs.View)) *netPod {
	t.Helper()
	img, ok := images.Lookup("registry.k8s.io/e2e-test-images/agnhost:2.47")
	if !ok {
		t.Fatal("agnhost is not catalogued")
	}
	fsys := vfs.NewView(vfs.New(nil), img.Tree(), false)
	if setup != nil {
		setup(fsys)
	}
	m := shell.NewMachine(shell.Config{FS: fsys, Seed: 1, Hostname: hostname, Net: ns, Network: netw, Programs: func(name string) shell.Program {
		if name == "agnhost" {
			return Program
		}
		if p := netclients.Lookup(name); p != nil {
			return p
		}
		return programs.Lookup(name)
	}})
	return &netPod{m: m, fs: fsys, hostname: hostname, ns: ns, netw: netw}
}

// start runs argv (with env) at the pod's current instant.
func (c *netPod) start(t *testing.T, env []string, argv ...string) {
	t.Helper()
	pid, err := c.m.Start(shell.Spec{Argv: argv, Env: append([]string{"PATH=" + shell.DefaultPath}, env...), Stdout: &c.stdout, Stderr: &c.stderr, OnExit: func(s int) {
		c.exited, c.status, c.exitedAt = true, s, c.now
	}})
	if err != nil {
		t.Fatalf("start %v: %v", argv, err)
	}
	c.pid = pid
	c.m.Step(int64(c.now))
}

// advance steps the machine through every wake-up up to at.
func (c *netPod) advance(at time.Duration) {
	for {
		next := c.m.Step(int64(c.now))
		if next == 0 || next > int64(at) {
			break
		}
		c.now = time.Duration(next)
	}
	c.now = at
	c.m.Step(int64(at))
}

// signal sends sig at the pod's current instant and steps.
func (c *netPod) signal(sig int) {
	c.m.Signal(c.pid, sig)
	c.m.Step(int64(c.now))
}

// twoPods is a network with pod A (hostname pod-a) and pod B (pod-b).
func twoPods(t *testing.T, setupA func(*vfs.View)) (*simnet.Network, *netPod, *netPod) {
	netw := simnet.New()
	a := newNetPod(t, netw, netw.NewNamespace(ipA), "pod-a", setupA)
	b := newNetPod(t, netw, netw.NewNamespace(ipB), "pod-b", nil)
	return netw, a, b
}

// answer is what a request got back, for comparing.
type answer struct {
	Status  int
	Body    string
	Headers map[string]string // the ones a case asks about
	Err     string
}

func get(netw *simnet.Network, from *simnet.Namespace, ip string, port int, target string, at time.Duration, headers ...string) answer {
	return do(netw, from, ip, port, &simnet.Request{Method: http.MethodGet, Target: target, Header: http.Header{}}, at, headers...)
}

func do(netw *simnet.Network, from *simnet.Namespace, ip string, port int, req *simnet.Request, at time.Duration, headers ...string) answer {
	req.Now = time.Unix(0, int64(at))
	resp, err := netw.HTTP(from, ip, port, req)
	if err != nil {
		return answer{Err: err.Error()}
	}
	a := answer{Status: resp.Status, Body: string(resp.Body)}
	for _, h := range headers {
		if a.Headers == nil {
			a.Headers = map[string]string{}
		}
		a.Headers[h] = resp.Header.Get(h)
	}
	return a
}

func TestNetexec(t *testing.T) {
	netw, a, b := twoPods(t, nil)
	a.start(t, nil, "/agnhost", "netexec", "--http-port=8080", "--udp-port=8081")
	b.start(t, nil, "/agnhost", "netexec")
	if got, want := a.stderr.String(), "1970/01/01 00:00:00 Started HTTP server on port 8080\n1970/01/01 00:00:00 Started UDP server on port  8081\n"; got != want {
		t.Errorf("netexec logs %q, want %q", got, want)
	}
	text := func(body string) answer { return answer{Status: 200, Body: body} }
	tests := []struct {
		name    string
		from    *simnet.Namespace // nil: the node
		target  string
		headers []string
		want    answer
	}{
		{name: "hostname", target: "/hostname", want: text("pod-a")},
		{name: "hostName", target: "/hostName", want: text("pod-a")},
		{name: "echo", target: "/echo?msg=echoed_msg", want: text("echoed_msg")},
		{name: "echo with a code", target: "/echo?msg=gone&code=410", want: answer{Status: 410, Body: "gone"}},
		{name: "echo with a bad code", target: "/echo?msg=x&code=abc", want: text("argument 'code' must be an integer or empty, got \"abc\"\n")},
		{name: "clientip from the node", target: "/clientip", want: text("10.88.0.1:32768")},
		{name: "clientip from a pod", from: b.ns, target: "/clientip", want: text("10.88.0.6:32769")},
		{name: "the root is the time", target: "/", want: text("NOW: 1970-01-01 00:00:05 +0000 UTC m=+5.000000000")},
		{name: "any other path too", target: "/whatever", want: text("NOW: 1970-01-01 00:00:05 +0000 UTC m=+5.000000000")},
		{name: "a path that is not clean is redirected", target: "/a/../hostname?x=1", headers: []string{"Location"},
			want: answer{Status: 301, Body: "<a href=\"/hostname?x=1\">Moved Permanently</a>.\n\n", Headers: map[string]string{"Location": "/hostname?x=1"}}},
		{name: "healthz once the UDP server runs", target: "/healthz", want: answer{Status: 200}},
		{name: "readyz", target: "/readyz", want: text("ok")},
		{name: "header by key", target: "/header?key=X-Test", want: text("yes")},
		{name: "redirect", target: "/redirect?location=/echo%3Fmsg%3Dfoobar&code=307", headers: []string{"Location"},
			want: answer{Status: 307, Body: "<a href=\"/echo?msg=foobar\">Temporary Redirect</a>.\n\n", Headers: map[string]string{"Location": "/echo?msg=foobar"}}},
		{name: "dial over HTTP", target: "/dial?request=hostname&protocol=http&host=" + ipB + "&port=8080&tries=1", want: text(`{"responses":["pod-b"]}`)},
		{name: "dial over UDP, twice", target: "/dial?request=hostname&protocol=udp&host=" + ipB + "&port=8081&tries=2", want: text(`{"responses":["pod-b","pod-b"]}`)},
		{name: "dial the pod itself by name", target: "/dial?request=echo?msg=me&host=pod-a&port=8080", want: text(`{"responses":["me"]}`)},
		{name: "dial a closed port", target: "/dial?request=hostname&host=" + ipB + "&port=81",
			want: text(`{"errors":["Get \"http://10.88.0.6:81/hostname\": dial tcp 10.88.0.6:81: connect: connection refused"]}`)},
		{name: "dial a UDP port nobody answers", target: "/dial?request=hostname&protocol=udp&host=" + ipB + "&port=9999",
			want: text(`{"errors":["reading from udp connection failed. err:'read udp 10.88.0.5:32770-\u003e10.88.0.6:9999: i/o timeout'"]}`)},
		{name: "dial an unknown name", target: "/dial?request=hostname&host=nosuch&port=80",
			want: answer{Status: 400, Body: "host and/or port param are invalid. lookup nosuch on 127.0.0.1:53: no such host\n"}},
		{name: "dial without a request", target: "/dial?host=" + ipB + "&port=8080", want: answer{Status: 400, Body: "request parameter not specified. <nil>\n"}},
		{name: "dial with bad tries", target: "/dial?request=x&tries=many", want: answer{Status: 400, Body: "tries parameter is invalid. strconv.Atoi: parsing \"many\": invalid syntax\n"}},
		{name: "dial over an unknown protocol", target: "/dial?request=x&protocol=quic", want: answer{Status: 400, Body: "unsupported protocol. quic\n"}},
		{name: "exit is not simulated", target: "/exit?code=3", want: answer{Status: 501, Body: "netexec /exit is not simulated by minikubelet: a request cannot end the server's process\n"}},
		{name: "shell is not simulated", target: "/shell?cmd=ls", want: answer{Status: 501, Body: "netexec /shell is not simulated by minikubelet: a request cannot run commands in the container\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &simnet.Request{Method: http.MethodGet, Target: tt.target, Header: http.Header{"X-Test": {"yes"}}}
			got := do(netw, tt.from, ipA, 8080, req, 5*time.Second, tt.headers...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", tt.target, diff)
			}
		})
	}

	t.Run("UDP", func(t *testing.T) {
		for payload, want := range map[string]string{"hostname": "pod-a", "echo Hello World\n": "hello world", "clientip": "10.88.0.1:32771", "nonsense": ""} {
			got, err := netw.Exchange(b.ns, "udp", ipA, 8081, []byte(payload), time.Unix(5, 0))
			if err != nil || string(got) != want {
				t.Errorf("UDP %q: %q, %v; want %q", payload, got, err, want)
			}
		}
	})
	t.Run("header as JSON", func(t *testing.T) {
		req := &simnet.Request{Method: http.MethodGet, Target: "/header", Header: http.Header{"Accept": {"*/*"}, "User-Agent": {"curl/8.5.0"}}}
		if got := do(netw, nil, ipA, 8080, req, 0); got.Body != `{"Accept":["*/*"],"User-Agent":["curl/8.5.0"]}` {
			t.Errorf("/header: %+v", got)
		}
	})
	t.Run("raw bytes to the HTTP port", func(t *testing.T) {
		got, err := netw.Exchange(nil, "tcp", ipA, 8080, []byte("hello\n"), time.Unix(0, 0))
		if err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 400 Bad Request\r\n") {
			t.Errorf("raw bytes: %q, %v; want Go's 400", got, err)
		}
	})
}

func TestNetexecLifecycle(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		signalAt   time.Duration
		probeAt    time.Duration
		until      time.Duration
		wantReady  answer // /readyz at probeAt
		wantHealth answer // /healthz at probeAt
		wantStatus int
		wantAt     time.Duration
		wantLog    string
	}{
		{
			name: "SIGTERM ends it at once with 0", args: []string{"netexec"}, signalAt: time.Minute, probeAt: 30 * time.Second,
			until: time.Hour, wantReady: answer{Status: 200, Body: "ok"}, wantHealth: answer{Status: 200}, wantAt: time.Minute,
			wantLog: "1970/01/01 00:00:00 Started HTTP server on port 8080\n1970/01/01 00:00:00 Started UDP server on port  8081\n",
		},
		{
			name: "delay-shutdown keeps it serving, not ready", args: []string{"netexec", "--delay-shutdown=10"}, signalAt: time.Minute,
			probeAt: time.Minute + 5*time.Second, until: time.Hour,
			wantReady: answer{Status: 503, Body: "shutting down"}, wantHealth: answer{Status: 200}, wantAt: time.Minute + 10*time.Second,
			wantLog: "1970/01/01 00:00:00 Started HTTP server on port 8080\n1970/01/01 00:00:00 Started UDP server on port  8081\n" +
				"1970/01/01 00:01:00 Sleeping 10 seconds before terminating...\n",
		},
		{
			name: "without the UDP server it never gets healthy", args: []string{"netexec", "--udp-port=-1"}, probeAt: time.Second,
			until: time.Hour, wantReady: answer{Status: 412}, wantHealth: answer{Status: 412}, wantStatus: -1,
			wantLog: "1970/01/01 00:00:00 Started HTTP server on port 8080\n",
		},
		{
			name: "a bad UDP address", args: []string{"netexec", "--udp-listen-addresses=10.0.0.300"}, until: time.Hour,
			wantReady: answer{Err: "dial tcp 10.88.0.5:8080: connect: connection refused"}, wantHealth: answer{Err: "dial tcp 10.88.0.5:8080: connect: connection refused"},
			wantStatus: 1, wantLog: "1970/01/01 00:00:00 parseAddress: invalid address 10.0.0.300\n",
		},
		{
			name: "a UDP address the pod does not have", args: []string{"netexec", "--udp-listen-addresses=10.1.2.3"}, until: time.Hour,
			wantReady: answer{Err: "dial tcp 10.88.0.5:8080: connect: connection refused"}, wantHealth: answer{Err: "dial tcp 10.88.0.5:8080: connect: connection refused"},
			wantStatus: 1, wantLog: "1970/01/01 00:00:00 Started HTTP server on port 8080\n" +
				"1970/01/01 00:00:00 Error occurred: failed to create listener for UDP address 10.1.2.3:8081:listen udp 10.1.2.3:8081: bind: cannot assign requested address\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			netw, a, _ := twoPods(t, nil)
			a.start(t, nil, append([]string{"/agnhost"}, tt.args...)...)
			if tt.signalAt != 0 && tt.signalAt <= tt.probeAt {
				a.advance(tt.signalAt)
				a.signal(shell.SIGTERM)
			}
			a.advance(tt.probeAt)
			ready := get(netw, nil, ipA, 8080, "/readyz", tt.probeAt)
			health := get(netw, nil, ipA, 8080, "/healthz", tt.probeAt)
			if tt.signalAt > tt.probeAt {
				a.advance(tt.signalAt)
				a.signal(shell.SIGTERM)
			}
			a.advance(tt.until)
			if diff := cmp.Diff(tt.wantReady, ready); diff != "" {
				t.Errorf("/readyz (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantHealth, health); diff != "" {
				t.Errorf("/healthz (-want +got):\n%s", diff)
			}
			if tt.wantStatus == -1 {
				if a.exited {
					t.Errorf("exited with %d, want it running", a.status)
				}
			} else if !a.exited || a.status != tt.wantStatus || a.exitedAt != tt.wantAt {
				t.Errorf("exited %t with %d at %v, want %d at %v", a.exited, a.status, a.exitedAt, tt.wantStatus, tt.wantAt)
			}
			if got := a.stderr.String(); got != tt.wantLog {
				t.Errorf("log %q, want %q", got, tt.wantLog)
			}
			if a.exited && a.ns.Listening("tcp", 8080) {
				t.Error("the HTTP port still listens after the exit")
			}
		})
	}
}

// TestNetexecPortInUse: a second netexec in the same pod cannot bind.
func TestNetexecPortInUse(t *testing.T) {
	netw := simnet.New()
	ns := netw.NewNamespace(ipA)
	first := newNetPod(t, netw, ns, "pod-a", nil)
	second := newNetPod(t, netw, ns, "pod-a", nil)
	first.start(t, nil, "/agnhost", "netexec", "--udp-port=-1")
	second.start(t, nil, "/agnhost", "netexec", "--udp-port=-1")
	want := "1970/01/01 00:00:00 Started HTTP server on port 8080\n1970/01/01 00:00:00 listen tcp :8080: bind: address already in use\n"
	if !second.exited || second.status != 1 || second.stderr.String() != want {
		t.Errorf("second netexec: exited %t %d, log %q; want 1 and %q", second.exited, second.status, second.stderr.String(), want)
	}
}

// TestNetexecConcurrentRequests: handlers run in their callers' goroutines while the
// machine steps the server (run with -race).
func TestNetexecConcurrentRequests(t *testing.T) {
	netw, a, b := twoPods(t, nil)
	a.start(t, nil, "/agnhost", "netexec", "--delay-shutdown=30")
	b.start(t, nil, "/agnhost", "netexec")
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				for _, target := range []string{"/readyz", "/clientip", "/dial?request=hostname&host=" + ipB + "&port=8080", "/"} {
					if got := get(netw, nil, ipA, 8080, target, time.Duration(i*j)*time.Millisecond); got.Err != "" {
						t.Errorf("%s: %s", target, got.Err)
					}
				}
			}
		}()
	}
	for s := 1; s <= 20; s++ {
		a.advance(time.Duration(s) * time.Second)
		if s == 10 {
			a.signal(shell.SIGTERM)
		}
	}
	wg.Wait()
}

func TestLiveness(t *testing.T) {
	netw, a, _ := twoPods(t, nil)
	a.start(t, nil, "/agnhost", "liveness")
	tests := []struct {
		target string
		at     time.Duration
		want   answer
	}{
		{"/healthz", 3 * time.Second, answer{Status: 200, Body: "ok"}},
		{"/healthz", 10 * time.Second, answer{Status: 200, Body: "ok"}},
		{"/healthz", 10*time.Second + 500*time.Millisecond, answer{Status: 500, Body: "error: 10.5"}},
		{"/healthz", 13 * time.Second, answer{Status: 500, Body: "error: 13"}},
		{"/started", 1500 * time.Millisecond, answer{Status: 200, Body: "1.5s"}},
		{"/redirect?loc=%2Fhealthz", 0, answer{Status: 302, Body: "<a href=\"/healthz\">Found</a>.\n\n"}},
		{"/sleep-body", 0, answer{Status: 404, Body: "404 page not found\n"}},
	}
	for _, tt := range tests {
		if got := get(netw, nil, ipA, 8080, tt.target, tt.at); !cmp.Equal(tt.want, got) {
			t.Errorf("GET %s at %v: %+v, want %+v", tt.target, tt.at, got, tt.want)
		}
	}
	a.advance(time.Minute)
	a.signal(shell.SIGTERM)
	if !a.exited || a.status != 143 || a.stderr.String() != "" {
		t.Errorf("liveness on SIGTERM: exited %t %d, log %q; want killed (143), no log", a.exited, a.status, a.stderr.String())
	}
}

func TestTestWebserver(t *testing.T) {
	netw, a, _ := twoPods(t, func(fs *vfs.View) {
		must(fs.MkdirAll("/site/sub", 0o755, 0, 0))
		must(fs.WriteFile("/site/index.html", []byte("<h1>kitten</h1>\n"), 0o644, false, 0, 0))
		must(fs.WriteFile("/site/sub/a.txt", []byte("A\n"), 0o644, false, 0, 0))
		must(fs.WriteFile("/site/sub/data", []byte{0, 1, 2}, 0o644, false, 0, 0))
	})
	a.start(t, nil, "/agnhost", "test-webserver")
	tests := []struct {
		target string
		want   answer
	}{
		{"/site/", answer{Status: 200, Body: "<h1>kitten</h1>\n", Headers: map[string]string{"Content-Type": "text/html; charset=utf-8", "Location": "", "Access-Control-Allow-Origin": "*"}}},
		{"/site", answer{Status: 301, Headers: map[string]string{"Content-Type": "", "Location": "site/", "Access-Control-Allow-Origin": "*"}}},
		{"/site/index.html", answer{Status: 301, Headers: map[string]string{"Content-Type": "", "Location": "./", "Access-Control-Allow-Origin": "*"}}},
		{"/site/sub/a.txt", answer{Status: 200, Body: "A\n", Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8", "Location": "", "Access-Control-Allow-Origin": "*"}}},
		{"/site/sub/data", answer{Status: 200, Body: "\x00\x01\x02", Headers: map[string]string{"Content-Type": "application/octet-stream", "Location": "", "Access-Control-Allow-Origin": "*"}}},
		{"/site/sub/", answer{Status: 200, Body: "<!doctype html>\n<meta name=\"viewport\" content=\"width=device-width\">\n<pre>\n<a href=\"a.txt\">a.txt</a>\n<a href=\"data\">data</a>\n</pre>\n",
			Headers: map[string]string{"Content-Type": "text/html; charset=utf-8", "Location": "", "Access-Control-Allow-Origin": "*"}}},
		{"/nope", answer{Status: 404, Body: "404 page not found\n", Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8", "Location": "", "Access-Control-Allow-Origin": "*"}}},
	}
	for _, tt := range tests {
		got := get(netw, nil, ipA, 80, tt.target, 0, "Content-Type", "Location", "Access-Control-Allow-Origin")
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", tt.target, diff)
		}
	}
}

func TestServeHostname(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		check      func(netw *simnet.Network) string
		want       string
		wantLog    string
		wantStatus int
		wantAt     time.Duration
	}{
		{
			name:  "HTTP",
			args:  []string{"serve-hostname"},
			check: func(netw *simnet.Network) string { return get(netw, nil, ipA, 9376, "/anything", 0).Body },
			want:  "pod-a",
			wantLog: "1970/01/01 00:00:00 Serving on port 9376.\n1970/01/01 00:01:00 Shutting down after receiving signal: terminated.\n" +
				"1970/01/01 00:01:00 Awaiting pod deletion.\n",
			wantAt: 2 * time.Minute,
		},
		{
			name: "UDP",
			args: []string{"serve-hostname", "--udp", "--http=false", "--port=9377"},
			check: func(netw *simnet.Network) string {
				b, _ := netw.Exchange(nil, "udp", ipA, 9377, []byte("x"), time.Unix(0, 0))
				return string(b)
			},
			want: "pod-a",
			wantLog: "1970/01/01 00:00:00 Serving on port 9377.\n1970/01/01 00:01:00 Shutting down after receiving signal: terminated.\n" +
				"1970/01/01 00:01:00 Awaiting pod deletion.\n",
			wantAt: 2 * time.Minute,
		},
		{
			name: "raw TCP",
			args: []string{"serve-hostname", "--tcp", "--http=false"},
			check: func(netw *simnet.Network) string {
				b, _ := netw.Exchange(nil, "tcp", ipA, 9376, nil, time.Unix(0, 0))
				return string(b)
			},
			want: "pod-a",
			wantLog: "1970/01/01 00:00:00 Serving on port 9376.\n1970/01/01 00:01:00 Shutting down after receiving signal: terminated.\n" +
				"1970/01/01 00:01:00 Awaiting pod deletion.\n",
			wantAt: 2 * time.Minute,
		},
		{
			name:       "TCP and HTTP at once",
			args:       []string{"serve-hostname", "--tcp"},
			check:      func(netw *simnet.Network) string { return get(netw, nil, ipA, 9376, "/", 0).Err },
			want:       "dial tcp 10.88.0.5:9376: connect: connection refused",
			wantLog:    "1970/01/01 00:00:00 Can't server TCP/UDP mode and HTTP mode at the same time\n",
			wantStatus: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			netw, a, _ := twoPods(t, nil)
			a.start(t, nil, append([]string{"/agnhost"}, tt.args...)...)
			if got := tt.check(netw); got != tt.want {
				t.Errorf("answer %q, want %q", got, tt.want)
			}
			a.advance(time.Minute)
			a.signal(shell.SIGTERM)
			a.advance(time.Minute + 59*time.Second)
			if tt.wantAt != 0 && a.exited {
				t.Errorf("exited at %v, before its 60 s", a.exitedAt)
			}
			a.advance(time.Hour)
			if !a.exited || a.status != tt.wantStatus || a.exitedAt != tt.wantAt {
				t.Errorf("exited %t with %d at %v, want %d at %v", a.exited, a.status, a.exitedAt, tt.wantStatus, tt.wantAt)
			}
			if got := a.stderr.String(); got != tt.wantLog {
				t.Errorf("log %q, want %q", got, tt.wantLog)
			}
		})
	}
}

func TestPorter(t *testing.T) {
	tests := []struct {
		name       string
		env        []string
		args       []string
		check      func(netw *simnet.Network) []string
		want       []string
		wantLog    string
		wantStatus int // -1: still running
	}{
		{
			name: "HTTP and UDP ports",
			env:  []string{"SERVE_PORT_9001=foo", "SERVE_TCP_PORT_9002=bar", "SERVE_UDP_PORT_9003=baz"},
			check: func(netw *simnet.Network) []string {
				u, _ := netw.Exchange(nil, "udp", ipA, 9003, []byte("?"), time.Unix(0, 0))
				return []string{get(netw, nil, ipA, 9001, "/any", 0).Body, get(netw, nil, ipA, 9002, "/", 0).Body, string(u)}
			},
			want:       []string{"foo", "bar", "baz"},
			wantLog:    "1970/01/01 00:00:00 Started UDP server on port 9003\n",
			wantStatus: -1,
		},
		{
			name: "JSON answers",
			env:  []string{"SERVE_PORT_9001=foo"},
			args: []string{"--json-response"},
			check: func(netw *simnet.Network) []string {
				a := do(netw, nil, ipA, 9001, &simnet.Request{Method: http.MethodPost, Target: "/"}, 0, "Content-Type")
				return []string{a.Body, a.Headers["Content-Type"]}
			},
			want:       []string{`{"Method":"POST","Body":"foo"}`, "application/json"},
			wantStatus: -1,
		},
		{
			name: "a TLS port is served as plain HTTP",
			env:  []string{"SERVE_TLS_PORT_443=secret"},
			check: func(netw *simnet.Network) []string {
				return []string{get(netw, nil, ipA, 443, "/", 0).Body}
			},
			want:       []string{"secret"},
			wantStatus: -1,
		},
		{
			name:       "nothing to serve",
			check:      func(*simnet.Network) []string { return nil },
			wantLog:    "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [select (no cases)]:\n",
			wantStatus: 2,
		},
		{
			name:       "a bad port",
			env:        []string{"SERVE_PORT_http=x", "SERVE_PORT_80=y"},
			check:      func(netw *simnet.Network) []string { return []string{get(netw, nil, ipA, 80, "/", 0).Body} },
			want:       []string{"y"},
			wantLog:    "1970/01/01 00:00:00 server on port \"http\" failed: listen tcp: lookup tcp/http: unknown port\n",
			wantStatus: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			netw, a, _ := twoPods(t, nil)
			a.start(t, tt.env, append([]string{"/agnhost", "porter"}, tt.args...)...)
			if diff := cmp.Diff(tt.want, tt.check(netw)); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			if got := a.stderr.String(); got != tt.wantLog {
				t.Errorf("log %q, want %q", got, tt.wantLog)
			}
			if tt.wantStatus == -1 && a.exited || tt.wantStatus != -1 && (!a.exited || a.status != tt.wantStatus) {
				t.Errorf("exited %t with %d, want %d", a.exited, a.status, tt.wantStatus)
			}
		})
	}
}

func TestGrpcHealthChecking(t *testing.T) {
	netw, a, _ := twoPods(t, nil)
	a.start(t, nil, "/agnhost", "grpc-health-checking", "--service=svc", "--delay-unhealthy-sec=20")
	check := func(port int, service string, at time.Duration) answer {
		return do(netw, nil, ipA, port, &simnet.Request{Method: http.MethodPost, Target: grpcHealthPath, Body: []byte(service)}, at)
	}
	steps := []struct {
		name string
		do   func() answer
		want answer
	}{
		{"serving at first", func() answer { return check(5000, "svc", time.Second) }, answer{Status: 200, Body: "SERVING"}},
		{"an unknown service", func() answer { return check(5000, "other", time.Second) }, answer{Status: 404, Body: "rpc error: code = NotFound desc = unknown service"}},
		{"make-not-serving", func() answer { return get(netw, nil, ipA, 8080, "/make-not-serving", 2*time.Second) }, answer{Status: 200, Body: "2s"}},
		{"not serving when told", func() answer { return check(5000, "svc", 3*time.Second) }, answer{Status: 200, Body: "NOT_SERVING"}},
		{"make-serving", func() answer { return get(netw, nil, ipA, 8080, "/make-serving", 4*time.Second) }, answer{Status: 200, Body: "4s"}},
		{"serving again, on the HTTP port too", func() answer { return check(8080, "svc", 5*time.Second) }, answer{Status: 200, Body: "SERVING"}},
		{"not serving after the delay", func() answer { return check(5000, "svc", 20*time.Second) }, answer{Status: 200, Body: "NOT_SERVING"}},
		{"no HTTP/1 on the gRPC port", func() answer { return get(netw, nil, ipA, 5000, "/", 0) }, answer{Err: "read 10.88.0.5:5000: connection reset by peer"}},
	}
	for _, s := range steps {
		if diff := cmp.Diff(s.want, s.do()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	want := "1970/01/01 00:00:00 Http server starting to listen on :8080\n1970/01/01 00:00:00 gRPC server starting to listen on :5000\n"
	if got := a.stderr.String(); got != want {
		t.Errorf("log %q, want %q", got, want)
	}
}

func TestConnect(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStderr string
		wantStatus int
		wantAt     time.Duration
	}{
		{name: "a listening port", args: []string{ipA + ":8080"}},
		{name: "its own name, where nothing listens", args: []string{"pod-b:8080"}, wantStderr: "REFUSED\n", wantStatus: 1},
		{name: "a closed port", args: []string{ipA + ":81"}, wantStderr: "REFUSED\n", wantStatus: 1},
		{name: "an address nobody has", args: []string{"10.88.0.99:80"}, wantStderr: "OTHER: dial tcp 10.88.0.99:80: connect: no route to host\n", wantStatus: 1},
		{name: "no port", args: []string{ipA}, wantStderr: "UNKNOWN: address 10.88.0.5: missing port in address\n", wantStatus: 1},
		{name: "an unknown name", args: []string{"my-svc:80"}, wantStderr: "DNS: lookup my-svc on 127.0.0.1:53: no such host\n", wantStatus: 1},
		{name: "UDP with an answer", args: []string{ipA + ":8081", "--protocol=udp"}},
		{name: "UDP without one", args: []string{ipA + ":9999", "--protocol=udp", "--timeout=3s"},
			wantStderr: "TIMEOUT: read udp 10.88.0.6:32768->10.88.0.5:9999: i/o timeout\n", wantStatus: 1, wantAt: 3 * time.Second},
		{name: "an unknown protocol", args: []string{ipA + ":80", "--protocol=quic"}, wantStderr: "Unsupported protocol\nquic", wantStatus: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, a, b := twoPods(t, nil)
			a.start(t, nil, "/agnhost", "netexec")
			b.start(t, nil, append([]string{"/agnhost", "connect"}, tt.args...)...)
			b.advance(time.Hour)
			if !b.exited || b.status != tt.wantStatus || b.exitedAt != tt.wantAt || b.stderr.String() != tt.wantStderr {
				t.Errorf("connect %v: exited %t with %d at %v, stderr %q; want %d at %v, %q", tt.args, b.exited, b.status, b.exitedAt, b.stderr.String(), tt.wantStatus, tt.wantAt, tt.wantStderr)
			}
		})
	}
}

// TestClientsInTheAgnhostImage: the image's curl and nc reach another pod's netexec.
func TestClientsInTheAgnhostImage(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		wantStdout string
		wantStatus int
	}{
		{name: "curl through dial", script: "curl -g -q -s 'http://" + ipA + ":8080/dial?request=hostname&protocol=udp&host=" + ipA + "&port=8081&tries=1'",
			wantStdout: `{"responses":["pod-a"]}`},
		{name: "nc over UDP", script: "echo hostName | nc -w 1 -u " + ipA + " 8081", wantStdout: "pod-a"},
		{name: "nc -vz", script: "nc -vz -w 2 " + ipA + " 8080 2>&1", wantStdout: "Connection to 10.88.0.5 8080 port [tcp/http-alt] succeeded!\n"},
		{name: "nc to a closed port", script: "nc -vz " + ipA + " 81 2>&1", wantStdout: "nc: connect to 10.88.0.5 port 81 (tcp) failed: Connection refused\n", wantStatus: 1},
		{name: "busybox wget", script: "wget -qO- http://" + ipA + ":8080/hostname", wantStdout: "pod-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, a, b := twoPods(t, nil)
			a.start(t, nil, "/agnhost", "netexec")
			b.start(t, nil, "/bin/sh", "-c", tt.script)
			b.advance(time.Hour)
			if !b.exited || b.status != tt.wantStatus || b.stdout.String() != tt.wantStdout {
				t.Errorf("%s: exited %t with %d, stdout %q, stderr %q; want %d, %q", tt.script, b.exited, b.status, b.stdout.String(), b.stderr.String(), tt.wantStatus, tt.wantStdout)
			}
		})
	}
}
