package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/pkg/metrics"
)

// panickyStreams panics in every session, as a provider bug would.
type panickyStreams struct{ fakeStreams }

func (panickyStreams) PortForward(ctx context.Context, name string, uid string, port int32, stream io.ReadWriteCloser) error {
	panic("port-forward bug")
}

// TestPanicsBecome500: a provider that panics gets the client a 500 saying so on both
// ports (the daemon goes on serving); a panic after the answer started cuts the
// connection (http.ErrAbortHandler) rather than leave a truncated answer that looks
// whole; and a port-forward panic, which upstream runs on a goroutine of its own, is
// returned as the session's error instead of ending the process.
func TestPanicsBecome500(t *testing.T) {
	boom := func() error { panic("check bug") }
	s, err := New(Config{
		Pods:                    PodsFunc(func() []*v1.Pod { panic("pods bug") }),
		Node:                    NodeFunc(func() *v1.Node { return nil }),
		Lease:                   LeaseFunc(func() *coordinationv1.Lease { return nil }),
		Events:                  EventsFunc(func() []v1.Event { return nil }),
		Registry:                metrics.NewRegistry(""),
		HealthChecks:            []HealthCheck{{Name: "boom", Check: boom}},
		Streaming:               &panickyStreams{},
		Logs:                    halfLogs{},
		SecureDebuggingHandlers: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		handler http.Handler
		target  string
	}{
		{"read-only port", s.Handler(), "/pods"},
		{"read-only port, health check", s.Handler(), "/healthz/boom"},
		{"secure port", s.SecureHandler(), "/pods"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tt.handler.ServeHTTP(rec, httptest.NewRequest("GET", tt.target, nil))
			if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), panicMessage) {
				t.Errorf("GET %s: %d %q, want 500 with %q", tt.target, rec.Code, rec.Body.String(), panicMessage)
			}
		})
	}

	t.Run("panic after the answer started", func(t *testing.T) {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler (net/http then cuts the connection)", p)
			}
		}()
		s.SecureHandler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/containerLogs/default/web/app", nil))
		t.Error("the handler returned normally")
	})

	t.Run("port-forward on its own goroutine", func(t *testing.T) {
		err := s.cfg.Streaming.PortForward(context.Background(), "web_default", "u1", 80, nil)
		if err == nil || !strings.Contains(err.Error(), "port-forward session panicked") {
			t.Errorf("PortForward = %v, want the panic as an error", err)
		}
	})
}

// halfLogs writes a line and then panics.
type halfLogs struct{}

func (halfLogs) ContainerLogs(ctx context.Context, namespace, pod, container string, opts LogOptions, w io.Writer) error {
	_, _ = io.WriteString(w, "a line\n")
	panic("logs bug")
}

// hijackRecorder is a recorder that can be hijacked, as a server's connection can: the
// SPDY and WebSocket upgrades get a connection whose client has already left.
type hijackRecorder struct{ *httptest.ResponseRecorder }

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	server, client := net.Pipe()
	client.Close()
	return server, bufio.NewReadWriter(bufio.NewReader(server), bufio.NewWriter(server)), nil
}

// fuzzHandlers are the handlers FuzzHandlers drives: the read-only port with every
// debugging handler, and the secure port with the streaming ones (no Auth: every
// request reaches a route).
func fuzzHandlers(t testing.TB) (readOnly, secure http.Handler, faults *fakeFaults) {
	f := newFixture(t, true, ConfigzFunc(func() any { return map[string]string{"a": "b"} }))
	f.node, f.lease = &v1.Node{}, &coordinationv1.Lease{}
	s := secureServer(t, &fakeStreams{}, true, nil, 0)
	// An upgraded session whose client left waits this long for its streams.
	s.cfg.Limits.StreamCreationTimeout = 10 * time.Millisecond
	return f.handler, s.SecureHandler(), f.faults
}

// FuzzHandlers sends arbitrary methods, paths, queries, headers and bodies to both ports'
// handlers, in process, as net/http would deliver them (what http.ReadRequest refuses
// never reaches a handler). Any panic, recovered into a 500 or not, fails. Other 5xx
// are legitimate (a failing health check, exec that cannot hijack a recorder).
//
//	go test -run='^$' -fuzz=FuzzHandlers -fuzztime=60s ./pkg/server/
func FuzzHandlers(f *testing.F) {
	// Seeds are in testdata/fuzz/FuzzHandlers. The handlers are built once: they are
	// safe for concurrent use and keep no per-request state but the faults.
	readOnly, secure, faults := fuzzHandlers(f)
	f.Fuzz(func(t *testing.T, method, path, query, header string, body []byte) {
		target := path
		if query != "" {
			target += "?" + query
		}
		if header != "" && !strings.HasSuffix(header, "\r\n") {
			header += "\r\n"
		}
		raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: localhost\r\n%sContent-Length: %d\r\n\r\n", method, target, header, len(body))
		for _, h := range []http.Handler{readOnly, secure} {
			req, err := http.ReadRequest(bufio.NewReader(io.MultiReader(strings.NewReader(raw), bytes.NewReader(body))))
			if err != nil {
				return
			}
			rec := &hijackRecorder{ResponseRecorder: httptest.NewRecorder()}
			func() {
				defer func() {
					// http.ErrAbortHandler too: recoverPanics raises it for a handler
					// that panicked after its answer started.
					if p := recover(); p != nil {
						t.Fatalf("%s %q: panic %v", method, target, p)
					}
				}()
				h.ServeHTTP(rec, req)
			}()
			if strings.Contains(rec.Body.String(), panicMessage) {
				t.Fatalf("%s %q: a handler panicked: %d %s", method, target, rec.Code, rec.Body.String())
			}
		}
		faults.ClearFaults()
	})
}
