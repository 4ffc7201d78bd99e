package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// limitsServer is a server with the secure debugging handlers (logs, exec) and the given
// limits, served without TLS on a loopback port (the handlers are the secure port's).
// It returns the base URL and the listener that records every connection's deadlines.
func limitsServer(t *testing.T, limits Limits, streams *fakeStreams, logs LogsProvider) (string, *recordingListener) {
	return limitsServerTLS(t, limits, streams, logs, false)
}

// limitsServerTLS is limitsServer, with TLS (as the secure port) when secure is set.
func limitsServerTLS(t *testing.T, limits Limits, streams *fakeStreams, logs LogsProvider, secure bool) (string, *recordingListener) {
	t.Helper()
	cfg := emptyNodeConfig()
	cfg.Streaming, cfg.Logs, cfg.SecureDebuggingHandlers, cfg.Limits = streams, logs, true, limits
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rl := &recordingListener{Listener: ln}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	scheme := "http://"
	if secure {
		// httptest's self-signed certificate, taken from a server never started.
		ts := httptest.NewUnstartedServer(nil)
		ts.StartTLS()
		cert := ts.TLS.Certificates[0]
		ts.Close()
		scheme = "https://"
		go func() { done <- s.ServeSecureListener(ctx, rl, StaticCert(&cert)) }()
	} else {
		go func() { done <- s.serve(ctx, rl, s.SecureHandler(), nil) }()
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return scheme + ln.Addr().String(), rl
}

// recordingListener remembers the deadlines the server last set on each connection.
type recordingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*recordingConn
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	rc := &recordingConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, rc)
	l.mu.Unlock()
	return rc, nil
}

// deadlines returns the last read and write deadlines of the only connection accepted.
func (l *recordingListener) deadlines(t *testing.T) (read, write time.Time) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) != 1 {
		t.Fatalf("%d connections accepted, want 1", len(l.conns))
	}
	c := l.conns[0]
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read, c.write
}

type recordingConn struct {
	net.Conn
	mu          sync.Mutex
	read, write time.Time
}

func (c *recordingConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.read, c.write = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *recordingConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.read = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *recordingConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.write = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// TestSlowHeaderIsCutOff: a client that starts a request and never finishes its header
// is disconnected after ReadHeaderTimeout (slowloris), while a whole request is answered.
func TestSlowHeaderIsCutOff(t *testing.T) {
	base, _ := limitsServer(t, Limits{ReadHeaderTimeout: 50 * time.Millisecond}, &fakeStreams{}, fakeLogs{})
	addr := strings.TrimPrefix(base, "http://")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	// The safety deadline is below the 10 s default: the test fails if the configured
	// timeout is not the one applied.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept a half-sent header open past 5s")
	}
	if len(got) != 0 {
		t.Errorf("the server answered a half-sent header: %q", got)
	}

	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a whole request: %d, want 200", resp.StatusCode)
	}
}

// TestOversizeHeaderGets431: a header beyond MaxHeaderBytes (plus net/http's 4 KB of
// slack) is refused with 431 before any handler runs; one within it is served.
func TestOversizeHeaderGets431(t *testing.T) {
	base, _ := limitsServer(t, Limits{MaxHeaderBytes: 1 << 10}, &fakeStreams{}, fakeLogs{})
	for _, tt := range []struct {
		name string
		size int
		want int
	}{
		{"within the limit", 512, http.StatusOK},
		{"beyond the limit", 16 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", base+"/healthz", nil)
			req.Header.Set("X-Big", strings.Repeat("a", tt.size))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%d-byte header: %d, want %d", tt.size, resp.StatusCode, tt.want)
			}
		})
	}
}

// blockingLogs writes one line, says so, and then holds the stream open until released,
// as a followed log of a quiet container.
type blockingLogs struct {
	started, release chan struct{}
}

func (b blockingLogs) ContainerLogs(ctx context.Context, namespace, pod, container string, opts LogOptions, w io.Writer) error {
	if _, err := io.WriteString(w, "a line\n"); err != nil {
		return err
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	close(b.started)
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return nil
}

// TestLongLivedAnswersLiftDeadlines: ReadTimeout and WriteTimeout apply to ordinary
// answers, and are lifted (zero deadlines) on a followed log and an exec session, so
// that the short timeouts never cut a legitimate stream. The deadlines are read off the
// connection rather than waited out.
func TestLongLivedAnswersLiftDeadlines(t *testing.T) {
	limits := Limits{ReadTimeout: time.Hour, WriteTimeout: time.Hour}
	exec := func(t *testing.T, base string, streams *fakeStreams, logs blockingLogs, check func()) {
		u, _ := url.Parse(base + "/exec/default/web/app?command=sleep&output=1")
		ex, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: base, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			done <- ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: io.Discard})
		}()
		<-streams.started
		check()
		close(streams.block)
		if err := <-done; err != nil {
			t.Errorf("exec: %v", err)
		}
		close(logs.release)
	}
	tests := []struct {
		name     string
		tls      bool
		longLive bool
		run      func(t *testing.T, base string, streams *fakeStreams, logs blockingLogs, check func())
	}{
		{"an ordinary GET keeps its deadlines", false, false, func(t *testing.T, base string, _ *fakeStreams, logs blockingLogs, check func()) {
			resp, err := http.Get(base + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			check()
			close(logs.release)
		}},
		{"a followed log", false, true, func(t *testing.T, base string, _ *fakeStreams, logs blockingLogs, check func()) {
			resp, err := http.Get(base + "/containerLogs/default/web/app?follow=true")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			if err != nil || line != "a line\n" {
				t.Fatalf("first followed line %q, %v", line, err)
			}
			<-logs.started
			check()
			close(logs.release)
		}},
		{"an exec session", false, true, exec},
		{"an exec session over TLS (the secure port)", true, true, exec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams := &fakeStreams{block: make(chan struct{}), started: make(chan struct{})}
			logs := blockingLogs{started: make(chan struct{}), release: make(chan struct{})}
			base, rl := limitsServerTLS(t, limits, streams, logs, tt.tls)
			tt.run(t, base, streams, logs, func() {
				read, write := rl.deadlines(t)
				if lifted := read.IsZero() && write.IsZero(); lifted != tt.longLive {
					t.Errorf("read deadline %v, write deadline %v; want lifted=%t", read, write, tt.longLive)
				}
			})
		})
	}
}

// TestProfilingRoutes: /debug/pprof/ is on the secure port (behind Auth) when profiling
// is on, and on the read-only port only when the debugging handlers are on there too.
func TestProfilingRoutes(t *testing.T) {
	build := func(profiling, debug bool, auth Authenticator) *Server {
		cfg := emptyNodeConfig()
		cfg.EnableProfiling, cfg.EnableDebuggingHandlers, cfg.Faults, cfg.Auth = profiling, debug, &fakeFaults{}, auth
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	on, off, onDebug, guarded := build(true, false, nil), build(false, true, nil), build(true, true, nil), build(true, false, denyAll{})
	for _, tt := range []struct {
		name    string
		handler http.Handler
		want    int
	}{
		{"secure port, profiling on", on.SecureHandler(), http.StatusOK},
		{"secure port, profiling off", off.SecureHandler(), http.StatusNotFound},
		{"secure port, unauthenticated", guarded.SecureHandler(), http.StatusUnauthorized},
		{"read-only port, profiling on, debugging off", on.Handler(), http.StatusNotFound},
		{"read-only port, profiling and debugging on", onDebug.Handler(), http.StatusOK},
		{"read-only port, profiling off", off.Handler(), http.StatusNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tt.handler.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/", nil))
			if rec.Code != tt.want {
				t.Errorf("GET /debug/pprof/: %d, want %d", rec.Code, tt.want)
			}
			if tt.want == http.StatusOK && !strings.Contains(rec.Body.String(), "goroutine") {
				t.Errorf("GET /debug/pprof/ is not pprof's index: %.200s", rec.Body.String())
			}
		})
	}
}
