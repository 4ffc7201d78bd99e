package netclients_test

import (
	"bytes"
	"net/http"
	"strings"
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

const (
	serverIP = "10.88.0.5"
	clientIP = "10.88.0.6"
)

// server is the test's simulated server: HTTP on 80 and 8080, raw TCP on 6379 (a redis
// that answers PING), UDP on 53 (answers in capitals); 81 is closed.
type server struct {
	routes map[string]func(req *simnet.Request) *simnet.Response
	raw    func(b []byte) []byte
}

func (s server) HTTP(req *simnet.Request) *simnet.Response {
	if s.routes == nil {
		return nil
	}
	h, ok := s.routes[req.Path()]
	if !ok {
		return &simnet.Response{Status: http.StatusNotFound, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("not here\n")}
	}
	return h(req)
}

func (s server) Datagram(b []byte, _ time.Time) []byte {
	if s.raw == nil {
		return nil
	}
	return s.raw(b)
}

func body(s string) *simnet.Response {
	return &simnet.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte(s)}
}

func redirectTo(status int, loc string) func(*simnet.Request) *simnet.Response {
	return func(*simnet.Request) *simnet.Response {
		return &simnet.Response{Status: status, Header: http.Header{"Location": {loc}}}
	}
}

// network is a network with the server's pod and the client's.
func network(t *testing.T) (*simnet.Network, *simnet.Namespace) {
	t.Helper()
	netw := simnet.New()
	srv := netw.NewNamespace(serverIP)
	listen := func(proto string, port int, h simnet.Handler) {
		if _, err := srv.Listen(proto, port, h); err != nil {
			t.Fatal(err)
		}
	}
	listen("tcp", 80, server{routes: map[string]func(*simnet.Request) *simnet.Response{
		"/":             func(*simnet.Request) *simnet.Response { return body("hello\n") },
		"/files/a.txt":  func(*simnet.Request) *simnet.Response { return body("A\n") },
		"/empty":        func(*simnet.Request) *simnet.Response { return body("") },
		"/big":          func(*simnet.Request) *simnet.Response { return body(strings.Repeat("x", 200000)) },
		"/redirect":     redirectTo(http.StatusFound, "/"),
		"/abs-redirect": redirectTo(http.StatusMovedPermanently, "http://"+serverIP+":8080/x"),
		"/loop":         redirectTo(http.StatusFound, "/loop"),
		"/broken":       func(*simnet.Request) *simnet.Response { return nil },
		"/unavailable":  func(*simnet.Request) *simnet.Response { return &simnet.Response{Status: 503, Body: []byte("busy\n")} },
		"/whoami": func(req *simnet.Request) *simnet.Response {
			return body(req.Method + " " + req.Host + " " + req.Header.Get("User-Agent") + " " + req.From + " " + string(req.Body))
		},
	}})
	listen("tcp", 8080, server{routes: map[string]func(*simnet.Request) *simnet.Response{
		"/x": func(*simnet.Request) *simnet.Response { return body("moved here\n") },
	}})
	listen("tcp", 6379, server{raw: func(b []byte) []byte {
		if strings.TrimSpace(string(b)) == "PING" {
			return []byte("+PONG\r\n")
		}
		return nil
	}})
	listen("udp", 53, server{raw: func(b []byte) []byte { return bytes.ToUpper(bytes.TrimSpace(b)) }})
	return netw, netw.NewNamespace(clientIP)
}

// result is how a command ended.
type result struct {
	Stdout, Stderr string
	Status         int
	At             time.Duration
}

// container is a busybox container in the client's pod, with curl and OpenBSD nc added,
// "server" in its /etc/hosts.
func container(t *testing.T, netw *simnet.Network, ns *simnet.Namespace) (*shell.Machine, *vfs.View) {
	t.Helper()
	img, ok := images.Lookup("busybox")
	if !ok {
		t.Fatal("busybox is not catalogued")
	}
	fsys := vfs.NewView(vfs.New(nil), img.Tree(), false)
	must(t, fsys.MkdirAll("/usr/bin", 0o755, 0, 0))
	for _, prog := range []string{"curl", "nc.openbsd"} {
		must(t, fsys.WriteFile("/usr/bin/"+prog, nil, 0o755, false, 0, 0))
		must(t, fsys.SetProgram("/usr/bin/"+prog, prog))
	}
	must(t, fsys.WriteFile("/etc/hosts", []byte("127.0.0.1\tlocalhost\n"+clientIP+"\tclient\n"+serverIP+"\tserver server.default\n"), 0o644, false, 0, 0))
	must(t, fsys.MkdirAll("/home/user", 0o755, 1000, 1000))
	m := shell.NewMachine(shell.Config{FS: fsys, Seed: 1, Hostname: "client", Net: ns, Network: netw, Programs: func(name string) shell.Program {
		if p := netclients.Lookup(name); p != nil {
			return p
		}
		return programs.Lookup(name)
	}})
	return m, fsys
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// run runs script in sh as uid (in /tmp) and steps the machine until it ends.
func run(t *testing.T, m *shell.Machine, uid int64, script string) result {
	t.Helper()
	var out, errb bytes.Buffer
	var res result
	exited := false
	now := int64(0)
	_, err := m.Start(shell.Spec{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=" + shell.DefaultPath}, Dir: "/tmp",
		Identity: shell.Identity{UID: uid, GID: uid}, Stdout: &out, Stderr: &errb,
		OnExit: func(s int) { exited, res.Status, res.At = true, s, time.Duration(now) }})
	if err != nil {
		t.Fatal(err)
	}
	for !exited {
		next := m.Step(now)
		if exited || next == 0 || next > int64(time.Hour) {
			break
		}
		now = next
	}
	if !exited {
		res.Status = -1
	}
	res.Stdout, res.Stderr = out.String(), errb.String()
	return res
}

const bbUsagePrefix = "BusyBox v1.36.1 (simulated) multi-call binary.\n\nUsage: "

func TestWget(t *testing.T) {
	const bar = "|********************************|"
	tests := []struct {
		name   string
		uid    int64
		script string
		want   result
		file   string // a file the run must leave
		data   string // its content
	}{
		{name: "quiet to stdout", script: "wget -qO- http://" + serverIP + "/", want: result{Stdout: "hello\n"}},
		{name: "to stdout with its messages", script: "wget -O - " + serverIP + "/",
			want: result{Stdout: "hello\n", Stderr: "Connecting to 10.88.0.5 (10.88.0.5:80)\nwriting to stdout\n-                    100% " + bar + "     6  0:00:00 ETA\nwritten to stdout\n"}},
		{name: "saves index.html", script: "wget http://server/",
			want: result{Stderr: "Connecting to server (10.88.0.5:80)\nsaving to 'index.html'\nindex.html           100% " + bar + "     6  0:00:00 ETA\n'index.html' saved\n"},
			file: "/tmp/index.html", data: "hello\n"},
		{name: "saves under the URL's name", script: "wget -q http://server/files/a.txt", file: "/tmp/a.txt", data: "A\n"},
		{name: "into a directory", script: "mkdir d && wget -q -P d http://server/files/a.txt", file: "/tmp/d/a.txt", data: "A\n"},
		{name: "an existing file is kept", script: "wget -q http://server/ && wget -q http://server/",
			want: result{Stderr: "wget: can't open 'index.html': File exists\n", Status: 1}, file: "/tmp/index.html", data: "hello\n"},
		{name: "-O overwrites", script: "echo old > f && wget -q -O f http://server/", file: "/tmp/f", data: "hello\n"},
		{name: "a directory the user may not write", uid: 1000, script: "cd / && wget -q http://server/",
			want: result{Stderr: "wget: can't open 'index.html': Permission denied\n", Status: 1}},
		{name: "an empty body", script: "wget -O- http://server/empty",
			want: result{Stderr: "Connecting to server (10.88.0.5:80)\nwriting to stdout\nwritten to stdout\n"}},
		{name: "a big body", script: "wget -O /dev/null http://server/big 2>&1 | grep ETA",
			want: result{Stdout: "null                 100% " + bar + "  195k  0:00:00 ETA\n"}},
		{name: "not found", script: "wget -q http://" + serverIP + "/missing",
			want: result{Stderr: "wget: server returned error: HTTP/1.1 404 Not Found\n", Status: 1}},
		{name: "refused", script: "wget -q -T 1 http://" + serverIP + ":81/",
			want: result{Stderr: "wget: can't connect to remote host (10.88.0.5): Connection refused\n", Status: 1}},
		{name: "nobody there", script: "wget -q http://10.88.0.99/",
			want: result{Stderr: "wget: can't connect to remote host (10.88.0.99): No route to host\n", Status: 1}},
		{name: "a name that does not resolve", script: "wget -q http://my-svc.default.svc:8080/",
			want: result{Stderr: "wget: bad address 'my-svc.default.svc:8080'\n", Status: 1}},
		{name: "a bad port", script: "wget -q http://server:http/", want: result{Stderr: "wget: bad port 'http'\n", Status: 1}},
		{name: "not http", script: "wget -q gopher://server/", want: result{Stderr: "wget: not an http or ftp url: gopher://server/\n", Status: 1}},
		{name: "the connection reset", script: "wget -q -O- http://server/broken",
			want: result{Stderr: "wget: error getting response: Connection reset by peer\n", Status: 1}},
		{name: "spider", script: "wget --spider http://server/", want: result{Stderr: "Connecting to server (10.88.0.5:80)\nremote file exists\n"}},
		{name: "spider on a missing file", script: "wget -q --spider http://server/nope",
			want: result{Stderr: "wget: server returned error: HTTP/1.1 404 Not Found\n", Status: 1}},
		{name: "a redirect on the same server", script: "wget -O- http://server/redirect",
			want: result{Stdout: "hello\n", Stderr: "Connecting to server (10.88.0.5:80)\nwriting to stdout\n-                    100% " + bar + "     6  0:00:00 ETA\nwritten to stdout\n"}},
		{name: "a redirect elsewhere", script: "wget -O- http://server/abs-redirect 2>&1 | grep Connecting",
			want: result{Stdout: "Connecting to server (10.88.0.5:80)\nConnecting to 10.88.0.5:8080 (10.88.0.5:8080)\n"}},
		{name: "a redirect loop", script: "wget -q http://server/loop", want: result{Stderr: "wget: too many redirections\n", Status: 1}},
		{name: "the server's response", script: "wget -q -S -O /dev/null http://server/",
			want: result{Stderr: "  HTTP/1.1 200 OK\n  Content-Length: 6\n  Content-Type: text/plain\n  Date: Thu, 01 Jan 1970 00:00:00 GMT\n  \n"}},
		{name: "post data and a user agent", script: "wget -qO- -U probe --post-data 'a=1' http://server/whoami",
			want: result{Stdout: "POST server probe 10.88.0.6 a=1"}},
		{name: "a Host header", script: "wget -qO- --header 'Host: example.com' http://server/whoami",
			want: result{Stdout: "GET example.com Wget 10.88.0.6 "}},
		{name: "localhost is the pod itself", script: "wget -q http://localhost:8080/",
			want: result{Stderr: "wget: can't connect to remote host (127.0.0.1): Connection refused\n", Status: 1}},
		{name: "a log file", script: "wget -o log -O /dev/null http://server/ && cat log",
			want: result{Stdout: "Connecting to server (10.88.0.5:80)\nsaving to '/dev/null'\n'/dev/null' saved\n"}},
		{name: "an unknown option", script: "wget -Z http://server/",
			want: result{Stderr: "wget: invalid option -- 'Z'\n" + bbUsagePrefix + "wget [-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR]\n\t[--post-data STR | --post-file FILE] [-Y on/off]\n\t[--no-check-certificate] [-P DIR] [-U AGENT] [-T SEC] URL...\n", Status: 1}},
		{name: "no URL", script: "wget -q 2>&1 | head -1", want: result{Stdout: "BusyBox v1.36.1 (simulated) multi-call binary.\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			netw, ns := network(t)
			m, fsys := container(t, netw, ns)
			got := run(t, m, tt.uid, tt.script)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.script, diff)
			}
			if tt.file != "" {
				data, err := fsys.ReadFile(tt.file)
				if err != nil || string(data) != tt.data {
					t.Errorf("%s: %q, %v; want %q", tt.file, data, err, tt.data)
				}
			}
		})
	}
}

func TestCurl(t *testing.T) {
	const meterHead = "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n" +
		"                                 Dload  Upload   Total   Spent    Left  Speed\n"
	const zero = "\r  0     0    0     0    0     0      0      0 --:--:-- --:--:-- --:--:--     0"
	const try = "curl: try 'curl --help' or 'curl --manual' for more information\n"
	tests := []struct {
		name   string
		script string
		want   result
		file   string
		data   string
	}{
		{name: "silent", script: "curl -s http://" + serverIP + "/", want: result{Stdout: "hello\n"}},
		{name: "the progress meter", script: "curl http://" + serverIP + "/",
			want: result{Stdout: "hello\n", Stderr: meterHead + zero + "\r100     6  100     6    0     0   6000      0 --:--:-- --:--:-- --:--:--  6000\n"}},
		{name: "no scheme", script: "curl -s server/files/a.txt", want: result{Stdout: "A\n"}},
		{name: "refused", script: "curl -sS http://" + serverIP + ":81/",
			want: result{Stderr: "curl: (7) Failed to connect to 10.88.0.5 port 81 after 0 ms: Couldn't connect to server\n", Status: 7}},
		{name: "refused, silently", script: "curl -s http://" + serverIP + ":81/", want: result{Status: 7}},
		{name: "refused with the meter", script: "curl localhost:81",
			want: result{Stderr: meterHead + zero + "\ncurl: (7) Failed to connect to localhost port 81 after 0 ms: Couldn't connect to server\n", Status: 7}},
		{name: "the status code", script: "curl -s -o /dev/null -w '%{http_code}' http://server/missing", want: result{Stdout: "404"}},
		{name: "no status when refused", script: "curl -s -w '%{http_code}\\n' http://server:81/", want: result{Stdout: "000\n", Status: 7}},
		{name: "write-out variables", script: "curl -s -o /dev/null -w '%{http_code} %{size_download} %{remote_ip}:%{remote_port} %{content_type} %{url_effective}\\n' http://server/",
			want: result{Stdout: "200 6 10.88.0.5:80 text/plain http://server/\n"}},
		{name: "fail", script: "curl -sf http://server/missing", want: result{Status: 22}},
		{name: "fail and show", script: "curl -sSf http://server/missing", want: result{Stderr: "curl: (22) The requested URL returned error: 404\n", Status: 22}},
		{name: "fail with body", script: "curl -sS --fail-with-body http://server/missing",
			want: result{Stdout: "not here\n", Stderr: "curl: (22) The requested URL returned error: 404\n", Status: 22}},
		{name: "an error status without -f", script: "curl -s http://server/missing", want: result{Stdout: "not here\n"}},
		{name: "HEAD", script: "curl -sI http://server/",
			want: result{Stdout: "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nContent-Type: text/plain\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n\r\n"}},
		{name: "include", script: "curl -si http://server/files/a.txt",
			want: result{Stdout: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n\r\nA\n"}},
		{name: "a redirect not followed", script: "curl -s -w '%{http_code} %{redirect_url}' http://server/redirect", want: result{Stdout: "302 /"}},
		{name: "redirects followed", script: "curl -sL -w ' %{num_redirects} %{url_effective}' http://server/abs-redirect",
			want: result{Stdout: "moved here\n 1 http://10.88.0.5:8080/x"}},
		{name: "a redirect loop", script: "curl -sSL --max-redirs 3 http://server/loop",
			want: result{Stderr: "curl: (47) Maximum (3) redirects followed\n", Status: 47}},
		{name: "what is sent", script: "curl -s http://server/whoami", want: result{Stdout: "GET server curl/8.5.0 10.88.0.6 "}},
		{name: "a Host header and a user agent", script: "curl -s -H 'Host: example.com' -A probe http://server:80/whoami",
			want: result{Stdout: "GET example.com probe 10.88.0.6 "}},
		{name: "post data", script: "curl -s -d a=1 -d b=2 http://server/whoami", want: result{Stdout: "POST server curl/8.5.0 10.88.0.6 a=1&b=2"}},
		{name: "another method", script: "curl -s -X PUT --data-raw x http://server/whoami", want: result{Stdout: "PUT server curl/8.5.0 10.88.0.6 x"}},
		{name: "an unknown host", script: "curl -sS http://my-svc:8080/", want: result{Stderr: "curl: (6) Could not resolve host: my-svc\n", Status: 6}},
		{name: "resolve", script: "curl -s --resolve my-svc:8080:" + serverIP + " http://my-svc:8080/x", want: result{Stdout: "moved here\n"}},
		{name: "a reset", script: "curl -sS http://server/broken", want: result{Stderr: "curl: (56) Recv failure: Connection reset by peer\n", Status: 56}},
		{name: "an output file", script: "curl -s -o out.txt http://server/files/a.txt", file: "/tmp/out.txt", data: "A\n"},
		{name: "the remote name", script: "curl -sO http://server/files/a.txt", file: "/tmp/a.txt", data: "A\n"},
		{name: "an unsupported protocol", script: "curl -sS ftp://server/", want: result{Stderr: "curl: (1) Protocol \"ftp\" not supported\n", Status: 1}},
		{name: "no URL", script: "curl -s", want: result{Stderr: "curl: no URL specified\n" + try, Status: 2}},
		{name: "an unknown option", script: "curl --bogus http://server/", want: result{Stderr: "curl: option --bogus: is unknown\n" + try, Status: 2}},
		{name: "a missing parameter", script: "curl -s http://server/ -o", want: result{Stderr: "curl: option -o: requires parameter\n" + try, Status: 2}},
		{name: "a bad number", script: "curl -s -m soon http://server/", want: result{Stderr: "curl: option -m: expected a proper numerical parameter\n" + try, Status: 2}},
		// Each attempt's body reaches stdout, which curl cannot take back.
		{name: "retries", script: "curl -s --retry 2 http://server/unavailable", want: result{Stdout: "busy\nbusy\nbusy\n", At: 3 * time.Second}},
		{name: "retries say so", script: "curl --no-progress-meter --retry 1 http://server/unavailable",
			want: result{Stdout: "busy\nbusy\n", Stderr: "Warning: Problem : HTTP error. Will retry in 1 seconds. 1 retries left.\n", At: time.Second}},
		{name: "retries on refusal", script: "curl -sS --retry 1 --retry-connrefused --retry-delay 5 http://server:81/",
			want: result{Stderr: "curl: (7) Failed to connect to server port 81 after 0 ms: Couldn't connect to server\n", Status: 7, At: 5 * time.Second}},
		{name: "the version", script: "curl -sV | head -1", want: result{Stdout: "curl 8.5.0 (x86_64-alpine-linux-musl) libcurl/8.5.0 OpenSSL/3.1.4 zlib/1.3.1\n"}},
		{name: "no meter with -v -s", script: "curl -sv http://server/files/a.txt 2>&1 >/dev/null | head -2",
			want: result{Stdout: "*   Trying 10.88.0.5:80...\n* Connected to server (10.88.0.5) port 80\n"}},
		{name: "the agnhost specs' form", script: "curl -g -q -s --max-time 15 --connect-timeout 1 http://" + serverIP + "/", want: result{Stdout: "hello\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			netw, ns := network(t)
			m, fsys := container(t, netw, ns)
			got := run(t, m, 0, tt.script)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.script, diff)
			}
			if tt.file != "" {
				data, err := fsys.ReadFile(tt.file)
				if err != nil || string(data) != tt.data {
					t.Errorf("%s: %q, %v; want %q", tt.file, data, err, tt.data)
				}
			}
		})
	}
}

func TestNC(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   result
	}{
		{name: "busybox: an open port", script: "nc -z " + serverIP + " 80; echo $?", want: result{Stdout: "0\n"}},
		{name: "busybox: a closed port", script: "nc -z " + serverIP + " 81; echo $?", want: result{Stdout: "1\n"}},
		{name: "busybox: verbose", script: "nc -vz server 80", want: result{Stderr: "server (10.88.0.5:80) open\n"}},
		{name: "busybox: one -v says nothing of a refusal", script: "nc -vz server 81", want: result{Status: 1}},
		{name: "busybox: two do", script: "nc -vvz server 81", want: result{Stderr: "nc: server (10.88.0.5:81): Connection refused\n", Status: 1}},
		{name: "busybox: no route", script: "nc -vz 10.88.0.99 80", want: result{Stderr: "nc: 10.88.0.99 (10.88.0.99:80): No route to host\n", Status: 1}},
		{name: "busybox: a service name", script: "nc -z server http", want: result{}},
		{name: "busybox: a bad address", script: "nc -z my-svc 80", want: result{Stderr: "nc: bad address 'my-svc'\n", Status: 1}},
		{name: "busybox: a bad port", script: "nc -z server nope", want: result{Stderr: "nc: bad port 'nope'\n", Status: 1}},
		{name: "busybox: raw bytes", script: "echo PING | nc server 6379", want: result{Stdout: "+PONG\r\n"}},
		{name: "busybox: an HTTP request", script: "printf 'GET /files/a.txt HTTP/1.0\\r\\n\\r\\n' | nc server 80",
			want: result{Stdout: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n\r\nA\n"}},
		{name: "busybox: UDP waits two -w periods", script: "echo hostname | nc -u -w 1 server 53", want: result{Stdout: "HOSTNAME", At: 2 * time.Second}},
		{name: "busybox: a UDP probe", script: "nc -zu server 9999", want: result{}},
		{name: "busybox: usage", script: "nc 2>&1 | head -3",
			want: result{Stdout: bbUsagePrefix + "nc [OPTIONS] HOST PORT  - connect\n"}},
		{name: "busybox: -e", script: "nc -e /bin/sh server 80", want: result{Stderr: "nc: -e is not simulated (minikubelet)\n", Status: 1}},
		{name: "openbsd: verbose", script: "nc.openbsd -vz " + serverIP + " 80", want: result{Stderr: "Connection to 10.88.0.5 80 port [tcp/http] succeeded!\n"}},
		{name: "openbsd: by name", script: "nc.openbsd -vz server 8080", want: result{Stderr: "Connection to server (10.88.0.5) 8080 port [tcp/http-alt] succeeded!\n"}},
		{name: "openbsd: a closed port", script: "nc.openbsd -vz server 81",
			want: result{Stderr: "nc: connect to server (10.88.0.5) port 81 (tcp) failed: Connection refused\n", Status: 1}},
		{name: "openbsd: quiet failure", script: "nc.openbsd -z server 81", want: result{Status: 1}},
		{name: "openbsd: a range", script: "nc.openbsd -z server 79-81", want: result{}},
		{name: "openbsd: an unknown host", script: "nc.openbsd -z my-svc 80",
			want: result{Stderr: "nc: getaddrinfo for host \"my-svc\" port 80: Name does not resolve\n", Status: 1}},
		{name: "openbsd: UDP", script: "echo hostName | nc.openbsd -w 1 -u server 53", want: result{Stdout: "HOSTNAME", At: time.Second}},
		{name: "openbsd: -q", script: "echo hi | nc.openbsd -u -q 3 server 53", want: result{Stdout: "HI", At: 3 * time.Second}},
		{name: "openbsd: usage", script: "nc.openbsd server 2>&1 | head -1", want: result{Stdout: "usage: nc [-46CDdFhklNnrStUuvZz] [-I length] [-i interval] [-M ttl]\n"}},
		{name: "openbsd: options end at the host", script: "nc.openbsd server 80 -z 2>&1 | head -1",
			want: result{Stdout: "usage: nc [-46CDdFhklNnrStUuvZz] [-I length] [-i interval] [-M ttl]\n"}},
		{name: "openbsd: an unknown option", script: "nc.openbsd -Q server 80 2>&1 | head -1", want: result{Stdout: "nc: unrecognized option: Q\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			netw, ns := network(t)
			m, _ := container(t, netw, ns)
			got := run(t, m, 0, tt.script)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.script, diff)
			}
		})
	}
}

// TestNCListen: a listening nc answers the first connection with its stdin, prints what
// it was sent, exits, and no longer listens.
func TestNCListen(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		connect  func(netw *simnet.Network) (string, error)
		want     string
		wantOut  string
		wantLog  string
		wantRefd bool
	}{
		{
			name:   "busybox answers HTTP",
			script: "printf 'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nhi' | nc -v -l -p 9000",
			connect: func(netw *simnet.Network) (string, error) {
				resp, err := netw.HTTP(nil, clientIP, 9000, &simnet.Request{Method: http.MethodGet, Target: "/x"})
				if err != nil {
					return "", err
				}
				return string(resp.Body), nil
			},
			want: "hi", wantOut: "GET /x HTTP/1.1\r\nHost: 10.88.0.6:9000\r\n\r\n", wantLog: "listening on [::]:9000 ...\n",
		},
		{
			name:   "OpenBSD answers raw bytes",
			script: "echo pong | nc.openbsd -l 9000",
			connect: func(netw *simnet.Network) (string, error) {
				b, err := netw.Exchange(nil, "tcp", clientIP, 9000, []byte("ping\n"), time.Unix(0, 0))
				return string(b), err
			},
			want: "pong\n", wantOut: "ping\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			netw, ns := network(t)
			m, _ := container(t, netw, ns)
			var out, errb bytes.Buffer
			exited, status := false, 0
			if _, err := m.Start(shell.Spec{Argv: []string{"sh", "-c", tt.script}, Env: []string{"PATH=" + shell.DefaultPath}, Stdout: &out, Stderr: &errb,
				OnExit: func(s int) { exited, status = true, s }}); err != nil {
				t.Fatal(err)
			}
			m.Step(0)
			got, err := tt.connect(netw)
			if err != nil || got != tt.want {
				t.Errorf("the connection got %q, %v; want %q", got, err, tt.want)
			}
			if _, err := tt.connect(netw); err == nil {
				t.Error("a second connection was accepted")
			}
			for now := int64(0); !exited && now < int64(time.Minute); now += int64(time.Second) {
				m.Step(now)
			}
			if !exited || status != 0 || out.String() != tt.wantOut || errb.String() != tt.wantLog {
				t.Errorf("nc: exited %t with %d, stdout %q, stderr %q; want 0, %q, %q", exited, status, out.String(), errb.String(), tt.wantOut, tt.wantLog)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	fsys := vfs.New(nil)
	must(t, fsys.MkdirAll("/etc", 0o755, 0, 0))
	must(t, fsys.WriteFile("/etc/hosts", []byte("# kubelet-managed\n127.0.0.1 localhost\n::1 localhost ip6-localhost\nfe80::1 both\n10.1.1.1 both alias # a comment\n"), 0o644, false, 0, 0))
	bare := vfs.New(nil)
	tests := []struct {
		fs     *vfs.View
		host   string
		want   string
		wantOK bool
	}{
		{fsys, "10.2.3.4", "10.2.3.4", true},
		{fsys, "[fd00::1]", "fd00::1", true},
		{fsys, "localhost", "127.0.0.1", true},
		{fsys, "both", "10.1.1.1", true},
		{fsys, "ALIAS", "10.1.1.1", true},
		{fsys, "ip6-localhost", "::1", true},
		{fsys, "my-pod", "10.88.0.6", true},
		{fsys, "my-svc.default.svc.cluster.local", "", false},
		{bare, "localhost", "127.0.0.1", true},
		{bare, "my-pod", "10.88.0.6", true},
		{bare, "", "", false},
	}
	for _, tt := range tests {
		got, ok := netclients.Resolve(tt.fs, "my-pod", clientIP, tt.host)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("Resolve(%q) = %q, %t; want %q, %t", tt.host, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestImages: the images that have these clients have them where their packages put
// them, and every program of theirs is one of this package.
func TestImages(t *testing.T) {
	tests := []struct {
		image string
		path  string
		want  string // the program; "" when the image has no such file
	}{
		{"busybox", "/bin/wget", "wget"},
		{"busybox", "/bin/nc", "nc"},
		{"busybox", "/usr/bin/curl", ""},
		{"alpine", "/usr/bin/wget", "wget"},
		{"alpine", "/usr/bin/nc", "nc"},
		{"debian", "/usr/bin/wget", ""},
		{"debian", "/usr/bin/curl", ""},
		{"debian", "/usr/bin/nc", ""},
		{"ubuntu", "/usr/bin/wget", ""},
		{"nginx", "/usr/bin/curl", "curl"},
		{"httpd", "/usr/bin/curl", ""},
		{"registry.k8s.io/e2e-test-images/agnhost:2.47", "/usr/bin/curl", "curl"},
		{"registry.k8s.io/e2e-test-images/agnhost:2.47", "/usr/bin/nc", "nc.openbsd"},
		{"registry.k8s.io/e2e-test-images/agnhost:2.47", "/usr/bin/wget", "wget"},
		{"registry.k8s.io/e2e-test-images/busybox:1.36.1-1", "/bin/wget", "wget"},
		{"registry.k8s.io/e2e-test-images/nginx:1.14-4", "/usr/bin/wget", "wget"},
		{"some.registry/unknown:1", "/bin/wget", "wget"},
	}
	for _, tt := range tests {
		img, _ := images.Lookup(tt.image)
		v := vfs.NewView(vfs.New(nil), img.Tree(), false)
		info, err := v.Stat(tt.path)
		got := info.Program
		if err != nil {
			got = ""
		}
		if got != tt.want {
			t.Errorf("%s %s runs %q, want %q", tt.image, tt.path, got, tt.want)
		}
		if got != "" && netclients.Lookup(got) == nil {
			t.Errorf("%s %s runs %q, which Lookup does not know", tt.image, tt.path, got)
		}
	}
	for _, n := range netclients.Names() {
		if netclients.Lookup(n) == nil {
			t.Errorf("Lookup(%q) is nil", n)
		}
	}
	for _, n := range netclients.Applets() {
		if netclients.Lookup(n) == nil {
			t.Errorf("applet %q: Lookup is nil", n)
		}
	}
}
