package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clientremotecommand "k8s.io/client-go/tools/remotecommand"
	clientexec "k8s.io/client-go/util/exec"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/minikubelet/minikubelet/pkg/metrics"
)

// fakeStreams knows pod default/web (uid u1) with container app; its exec echoes the
// command's arguments and exits with the code the test sets, or blocks until released.
type fakeStreams struct {
	exitCode int
	block    chan struct{}
	started  chan struct{}
}

func (f *fakeStreams) StreamTarget(namespace, pod, uid, container string) (string, types.UID, error) {
	if namespace != "default" || pod != "web" || (uid != "" && uid != "u1") {
		return "", "", &StatusError{Code: http.StatusNotFound, Message: "pod does not exist"}
	}
	if container != "" && container != "app" {
		return "", "", &StatusError{Code: http.StatusNotFound, Message: fmt.Sprintf("container not found (%q)", container)}
	}
	return "web_default", "u1", nil
}

func (f *fakeStreams) ExecInContainer(ctx context.Context, name string, uid string, container string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, timeout time.Duration) error {
	if f.block != nil {
		close(f.started)
		<-f.block
	}
	fmt.Fprintf(out, "%s in %s/%s: %s\n", name, uid, container, strings.Join(cmd, " "))
	if in != nil {
		_, _ = io.Copy(out, in)
	}
	if f.exitCode != 0 {
		return utilexec.CodeExitError{Err: errors.New("exit"), Code: f.exitCode}
	}
	return nil
}

func (f *fakeStreams) AttachContainer(ctx context.Context, name string, uid string, container string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	return nil
}

func (f *fakeStreams) PortForward(ctx context.Context, name string, uid string, port int32, stream io.ReadWriteCloser) error {
	return stream.Close()
}

type fakeLogs struct{}

func (fakeLogs) ContainerLogs(ctx context.Context, namespace, pod, container string, opts LogOptions, w io.Writer) error {
	_, err := io.WriteString(w, "a line\n")
	return err
}

// denyAll stands in for pkg/auth: every request is unauthenticated.
type denyAll struct{}

func (denyAll) Wrap(http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "Unauthorized", http.StatusUnauthorized) })
}

// emptyNodeConfig is a server configuration for a node with no pods, events or lease.
func emptyNodeConfig() Config {
	return Config{
		Pods:     PodsFunc(func() []*v1.Pod { return nil }),
		Node:     NodeFunc(func() *v1.Node { return &v1.Node{} }),
		Lease:    LeaseFunc(func() *coordinationv1.Lease { return nil }),
		Events:   EventsFunc(func() []v1.Event { return nil }),
		Registry: metrics.NewRegistry(""),
	}
}

func secureServer(t testing.TB, streams *fakeStreams, debug bool, auth Authenticator, maxStreams int) *Server {
	t.Helper()
	cfg := emptyNodeConfig()
	cfg.Streaming, cfg.Logs, cfg.Auth = streams, fakeLogs{}, auth
	cfg.SecureDebuggingHandlers, cfg.MaxStreams = debug, maxStreams
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSecurePortRoutes: the debugging handlers live on the secure port only; unknown pods
// and containers are 404 with upstream's messages, bad queries 400 naming the problem.
func TestSecurePortRoutes(t *testing.T) {
	s := secureServer(t, &fakeStreams{}, true, nil, 0)
	disabled := secureServer(t, &fakeStreams{}, false, nil, 0)
	tests := []struct {
		name     string
		handler  http.Handler
		method   string
		target   string
		wantCode int
		wantBody string
	}{
		{"unknown pod", s.SecureHandler(), "POST", "/exec/default/nope/app?command=ls&output=1", 404, "pod does not exist"},
		{"wrong uid", s.SecureHandler(), "POST", "/exec/default/web/u2/app?command=ls&output=1", 404, "pod does not exist"},
		{"unknown container", s.SecureHandler(), "POST", "/exec/default/web/zzz?command=ls&output=1", 404, `container not found (\"zzz\")`},
		{"no stream asked for", s.SecureHandler(), "POST", "/exec/default/web/app?command=ls", 400, "you must specify at least 1 of stdin, stdout, stderr"},
		{"no command", s.SecureHandler(), "POST", "/exec/default/web/app?output=1", 400, "you must specify a command"},
		{"not an upgrade", s.SecureHandler(), "POST", "/exec/default/web/app?command=ls&output=1", 400, ""},
		{"port-forward of an unknown pod", s.SecureHandler(), "POST", "/portForward/default/nope", 404, "pod does not exist"},
		{"logs on the secure port", s.SecureHandler(), "GET", "/containerLogs/default/web/app", 200, "a line"},
		{"exec is not on the read-only port", s.Handler(), "POST", "/exec/default/web/app?command=ls&output=1", 404, "no such endpoint"},
		{"debugging handlers disabled", disabled.SecureHandler(), "POST", "/exec/default/web/app?command=ls&output=1", 405, "Debug endpoints are disabled."},
		{"logs disabled too", disabled.SecureHandler(), "GET", "/containerLogs/default/web/app", 405, "Debug endpoints are disabled."},
		{"read-only endpoints on the secure port", s.SecureHandler(), "GET", "/healthz", 200, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tt.handler.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.target, nil))
			if rec.Code != tt.wantCode || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("%s %s: %d %q, want %d containing %q", tt.method, tt.target, rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
		})
	}
}

// TestSecurePortIsGuarded: the authenticator wraps every secure path, read-only ones
// included, and never the read-only port.
func TestSecurePortIsGuarded(t *testing.T) {
	s := secureServer(t, &fakeStreams{}, true, denyAll{}, 0)
	for _, path := range []string{"/healthz", "/pods", "/stats/summary", "/containerLogs/default/web/app"} {
		rec := httptest.NewRecorder()
		s.SecureHandler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("secure %s: %d, want 401", path, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("read-only /healthz: %d, want 200", rec.Code)
	}
}

// execURL returns an SPDY executor for the test server.
func executor(t *testing.T, srv *httptest.Server, query url.Values) clientremotecommand.Executor {
	t.Helper()
	u, _ := url.Parse(srv.URL + "/exec/default/web/app")
	u.RawQuery = query.Encode()
	ex, err := clientremotecommand.NewSPDYExecutor(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// TestExecOverSPDY: kubectl's protocol end to end over TLS: stdin, stdout and the exit
// code; sessions beyond MaxStreams are refused with 429.
func TestExecOverSPDY(t *testing.T) {
	streams := &fakeStreams{exitCode: 3}
	s := secureServer(t, streams, true, nil, 1)
	srv := httptest.NewUnstartedServer(s.SecureHandler())
	srv.EnableHTTP2 = false
	srv.StartTLS()
	defer srv.Close()

	var out bytes.Buffer
	err := executor(t, srv, url.Values{"command": {"echo", "hi"}, "input": {"1"}, "output": {"1"}}).StreamWithContext(context.Background(),
		clientremotecommand.StreamOptions{Stdin: strings.NewReader("from stdin\n"), Stdout: &out})
	var exit clientexec.CodeExitError
	if !errors.As(err, &exit) || exit.Code != 3 {
		t.Errorf("exit: %v, want code 3", err)
	}
	if want := "web_default in u1/app: echo hi\nfrom stdin\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}

	// One session open: the next is refused.
	streams.exitCode, streams.block, streams.started = 0, make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- executor(t, srv, url.Values{"command": {"sleep"}, "output": {"1"}}).StreamWithContext(context.Background(), clientremotecommand.StreamOptions{Stdout: io.Discard})
	}()
	<-streams.started
	req, _ := http.NewRequest("POST", srv.URL+"/exec/default/web/app?command=ls&output=1", nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a second session: %d, want 429", resp.StatusCode)
	}
	close(streams.block)
	if err := <-done; err != nil {
		t.Errorf("the first session: %v", err)
	}
}
