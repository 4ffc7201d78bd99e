package servers

import (
	"bytes"
	iofs "io/fs"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// server starts argv on a machine of its own with files, on a network, and returns
// them after the first step.
func server(t *testing.T, files map[string]string, argv ...string) (*shell.Machine, *simnet.Network, *bytes.Buffer, *int) {
	t.Helper()
	fs := vfs.New(nil)
	for p, c := range files {
		if err := fs.MkdirAll(p[:strings.LastIndex(p, "/")+1], 0o755, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteFile(p, []byte(c), 0o644, false, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.WriteFile("/prog", nil, 0o755, false, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := fs.SetProgram("/prog", argv[0]); err != nil {
		t.Fatal(err)
	}
	n := simnet.New()
	m := shell.NewMachine(shell.Config{FS: fs, Programs: Lookup, Net: n.NewNamespace("10.88.0.2"), Network: n})
	var out bytes.Buffer
	status := -1
	if _, err := m.Start(shell.Spec{Argv: append([]string{"/prog"}, argv[1:]...), Stdout: &out, Stderr: &out, OnExit: func(s int) { status = s }}); err != nil {
		t.Fatal(err)
	}
	m.Step(0)
	return m, n, &out, &status
}

func get(t *testing.T, n *simnet.Network, port int, path string) (int, string) {
	t.Helper()
	resp, err := n.HTTP(nil, "10.88.0.2", port, &simnet.Request{Method: "GET", Target: path})
	if err != nil {
		return 0, err.Error()
	}
	return resp.Status, string(resp.Body)
}

// TestNginxServesItsRoot: nginx answers from the files of its document root, so removing
// index.html makes a probe of / fail with 404, as on a node.
func TestNginxServesItsRoot(t *testing.T) {
	m, n, _, status := server(t, map[string]string{
		"/usr/share/nginx/html/index.html":   "<h1>Welcome to nginx!</h1>\n",
		"/etc/nginx/conf.d/default.conf":     "server {\n    listen       80;\n    root   /usr/share/nginx/html;\n}\n",
		"/usr/share/nginx/html/sub/page.txt": "page\n",
	}, "nginx", "-g", "daemon off;")
	tests := []struct {
		path   string
		status int
		body   string
	}{
		{"/", 200, "<h1>Welcome to nginx!</h1>\n"},
		{"/sub/page.txt", 200, "page\n"},
		{"/../../etc/passwd", 404, ""},
		{"/missing", 404, ""},
	}
	for _, tt := range tests {
		code, body := get(t, n, 80, tt.path)
		if code != tt.status || tt.body != "" && body != tt.body {
			t.Errorf("GET %s = %d %q, want %d %q", tt.path, code, body, tt.status, tt.body)
		}
	}
	if err := m.FS().Remove("/usr/share/nginx/html/index.html", false); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, n, 80, "/"); code != 404 {
		t.Errorf("GET / without index.html = %d, want 404", code)
	}
	if code, body := get(t, n, 8080, "/"); code != 0 || !strings.Contains(body, "connection refused") {
		t.Errorf("a port nginx does not listen on: %d %q", code, body)
	}
	m.Signal(1, 3) // SIGQUIT, the image's stop signal: a graceful stop
	m.Step(int64(time.Second))
	if *status != 0 {
		t.Errorf("status after SIGQUIT %d, want 0", *status)
	}
	if code, _ := get(t, n, 80, "/"); code != 0 {
		t.Errorf("a stopped nginx still answers (%d)", code)
	}
}

// TestWaitingServersHoldNoGoroutine: a server waiting for requests and its stop signal
// parks (its handlers run in their callers' goroutines), and still stops on its signal.
func TestWaitingServersHoldNoGoroutine(t *testing.T) {
	for _, argv := range [][]string{{"nginx", "-g", "daemon off;"}, {"httpd", "-DFOREGROUND"}, {"redis-server"}, {"pause"}} {
		t.Run(argv[0], func(t *testing.T) {
			m, _, _, status := server(t, nil, argv...)
			m.Step(int64(time.Minute))
			if n := m.Coroutines(); n != 0 || *status != -1 {
				t.Fatalf("waiting: %d processes on coroutines, status %d; want 0 and still running", n, *status)
			}
			m.Signal(1, shell.SIGTERM)
			m.Step(int64(2 * time.Minute))
			if *status != 0 {
				t.Errorf("after SIGTERM: status %d, want 0", *status)
			}
		})
	}
}

func TestHttpdAndRedisAndPause(t *testing.T) {
	_, n, out, _ := server(t, map[string]string{"/usr/local/apache2/htdocs/index.html": "<html><body><h1>It works!</h1></body></html>\n"}, "httpd", "-DFOREGROUND")
	if code, body := get(t, n, 80, "/"); code != 200 || !strings.Contains(body, "It works!") {
		t.Errorf("httpd GET / = %d %q", code, body)
	}
	if !strings.Contains(out.String(), "AH00558: httpd: Could not reliably determine the server's fully qualified domain name, using 10.88.0.2") {
		t.Errorf("httpd's start lines: %q", out.String())
	}

	_, n, _, _ = server(t, nil, "redis-server")
	if got, err := n.Exchange(nil, "tcp", "10.88.0.2", 6379, []byte("PING\r\n"), time.Time{}); err != nil || string(got) != "+PONG\r\n" {
		t.Errorf("redis PING: %q %v", got, err)
	}

	m, _, out, status := server(t, nil, "pause")
	m.Step(int64(time.Hour))
	if *status != -1 {
		t.Fatalf("pause exited (%d) by itself", *status)
	}
	m.Signal(1, shell.SIGTERM)
	m.Step(int64(time.Hour))
	if *status != 0 || out.String() != "Shutting down, got signal: Terminated\n" {
		t.Errorf("pause after SIGTERM: status %d, output %q", *status, out.String())
	}
}

// TestNNPEffectiveUser: a setuid-root executable runs as root unless no_new_privs
// (allowPrivilegeEscalation: false) keeps the caller's user.
func TestNNPEffectiveUser(t *testing.T) {
	for _, tc := range []struct {
		noNewPrivs bool
		want       string
	}{{false, "Effective uid: 0\n"}, {true, "Effective uid: 1000\n"}} {
		fs := vfs.New(nil)
		if err := fs.WriteFile("/nnp", nil, 0o755, false, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := fs.Chmod("/nnp", iofs.ModeSetuid|0o755); err != nil {
			t.Fatal(err)
		}
		if err := fs.SetProgram("/nnp", "nnp"); err != nil {
			t.Fatal(err)
		}
		m := shell.NewMachine(shell.Config{FS: fs, Programs: Lookup})
		var out bytes.Buffer
		if _, err := m.Start(shell.Spec{Argv: []string{"/nnp"}, Identity: shell.Identity{UID: 1000, GID: 1000, NoNewPrivs: tc.noNewPrivs}, Stdout: &out}); err != nil {
			t.Fatal(err)
		}
		m.Step(0)
		if out.String() != tc.want {
			t.Errorf("no_new_privs %t: %q, want %q", tc.noNewPrivs, out.String(), tc.want)
		}
	}
}

// TestNginxIsTheImagesVersion: nginx -v, the Server header and the 404 page name the
// version the image's NGINX_VERSION says (nginx:1.27 is not 1.25), or the default.
func TestNginxIsTheImagesVersion(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"NGINX_VERSION=1.27.5", "nginx/1.27.5"},
		{"", "nginx/" + defaultNginxVersion},
	} {
		t.Run(tc.want, func(t *testing.T) {
			fs := vfs.New(nil)
			if err := fs.WriteFile("/nginx", nil, 0o755, false, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := fs.SetProgram("/nginx", "nginx"); err != nil {
				t.Fatal(err)
			}
			n := simnet.New()
			m := shell.NewMachine(shell.Config{FS: fs, Programs: Lookup, Net: n.NewNamespace("10.88.0.2"), Network: n})
			var env []string
			if tc.env != "" {
				env = []string{tc.env}
			}
			var out bytes.Buffer
			if _, err := m.Start(shell.Spec{Argv: []string{"/nginx", "-v"}, Env: env, Stdout: &out, Stderr: &out}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Start(shell.Spec{Argv: []string{"/nginx", "-g", "daemon off;"}, Env: env, Stdout: &out, Stderr: &out}); err != nil {
				t.Fatal(err)
			}
			m.Step(0)
			if got := out.String(); got != "nginx version: "+tc.want+"\n" {
				t.Errorf("nginx -v printed %q", got)
			}
			resp, err := n.HTTP(nil, "10.88.0.2", 80, &simnet.Request{Method: "GET", Target: "/missing"})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Header.Get("Server"); got != tc.want || !strings.Contains(string(resp.Body), "<center>"+tc.want+"</center>") {
				t.Errorf("Server %q, 404 page %q; want %s", got, resp.Body, tc.want)
			}
		})
	}
}
