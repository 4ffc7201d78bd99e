package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runtime/fault"
)

// PodsProvider returns the pods the kubelet manages, with their current status.
type PodsProvider interface{ GetPods() []*v1.Pod }

// PodListEncoder is a PodsProvider that also has each pod's JSON at hand (the kubelet
// keeps each pod's encoding until it changes): /pods then writes those instead of encoding
// GetPods' list, byte for byte the same answer.
type PodListEncoder interface {
	PodsProvider
	PodListItems() [][]byte
}

// NodeProvider returns the last reported node, or nil before registration.
type NodeProvider interface{ GetNode() *v1.Node }

// LeaseProvider returns the node lease, or nil before the first renewal.
type LeaseProvider interface {
	GetLease() *coordinationv1.Lease
}

// EventsProvider returns the recorded events, oldest first (events.Store).
type EventsProvider interface{ List() []v1.Event }

// ConfigzProvider returns the effective configuration as any JSON-encodable value.
type ConfigzProvider interface{ Configz() any }

// FaultManager is the runtime's fault-injection API (*fake.Runtime); it logs the changes
// itself, so the handlers do not.
type FaultManager interface {
	// AddFault stores a validated spec and returns it with its assigned ID.
	AddFault(fault.Spec) (fault.Spec, error)
	Faults() []fault.Spec
	RemoveFault(id string) error
	ClearFaults()
}

// Function adapters for the providers.
type (
	PodsFunc    func() []*v1.Pod
	NodeFunc    func() *v1.Node
	LeaseFunc   func() *coordinationv1.Lease
	EventsFunc  func() []v1.Event
	ConfigzFunc func() any
)

func (f PodsFunc) GetPods() []*v1.Pod               { return f() }
func (f NodeFunc) GetNode() *v1.Node                { return f() }
func (f LeaseFunc) GetLease() *coordinationv1.Lease { return f() }
func (f EventsFunc) List() []v1.Event               { return f() }
func (f ConfigzFunc) Configz() any                  { return f() }

var _ PodsProvider = PodsFunc(nil)
var _ NodeProvider = NodeFunc(nil)
var _ LeaseProvider = LeaseFunc(nil)
var _ EventsProvider = EventsFunc(nil)
var _ ConfigzProvider = ConfigzFunc(nil)

// HealthCheck is one named check of /healthz, also served at /healthz/<Name>. Check
// returns nil when healthy; it must be quick.
type HealthCheck struct {
	Name  string
	Check func() error
}

// HealthyCheck adapts a Healthy() (bool, error) function (the PLEG's) to a HealthCheck.
func HealthyCheck(name string, healthy func() (bool, error)) HealthCheck {
	return HealthCheck{Name: name, Check: func() error {
		if ok, err := healthy(); !ok {
			if err == nil {
				err = errors.New("not healthy")
			}
			return err
		}
		return nil
	}}
}

// SyncLoopHealthCheck is the kubelet's "syncloop" check: it fails when the sync loop was
// last entered longer ago than max(2 x syncFrequency, 5m) (never before the first entry).
func SyncLoopHealthCheck(clk clock.PassiveClock, syncFrequency time.Duration, latestLoopEntry func() time.Time) HealthCheck {
	return HealthCheck{Name: "syncloop", Check: func() error {
		d := 2 * syncFrequency
		if d < 5*time.Minute {
			d = 5 * time.Minute
		}
		if entered := latestLoopEntry(); !entered.IsZero() && clk.Now().After(entered.Add(d)) {
			return errors.New("sync Loop took longer than expected")
		}
		return nil
	}}
}

// Defaults of Config.
const (
	DefaultShutdownGracePeriod = 5 * time.Second
	// DefaultMaxStreams is Config.MaxStreams' default.
	DefaultMaxStreams = 64
)

// Config configures a Server.
type Config struct {
	// Pods, Node, Lease, Events and Registry are required.
	Pods     PodsProvider
	Node     NodeProvider
	Lease    LeaseProvider
	Events   EventsProvider
	Registry *metrics.Registry
	// ProbeRegistry, when set, is served on /metrics/probes (the prober's metrics, as the
	// kubelet serves them apart from /metrics).
	ProbeRegistry *metrics.Registry
	// StateRegistry, when set, is served on /metrics/state (kube-state-metrics' names for
	// the node's conditions and its containers, standalone mode). Unset, the path answers
	// 404 saying so.
	StateRegistry *metrics.Registry
	// ResourceRegistry, when set, is served on /metrics/resource (the resource metrics).
	ResourceRegistry *metrics.Registry
	// CadvisorRegistry, when set, is served on /metrics/cadvisor (cAdvisor's container series).
	CadvisorRegistry *metrics.Registry
	// Stats, when set, serves /stats/summary.
	Stats StatsProvider
	// Logs serves /containerLogs/{namespace}/{pod}/{container}, a debugging handler as in
	// the kubelet: only with EnableDebuggingHandlers.
	Logs LogsProvider
	// Streaming serves /exec, /attach and /portForward on the secure port (with
	// SecureDebuggingHandlers).
	Streaming StreamingProvider
	// Auth, when set, guards the secure port: SecureHandler is Auth.Wrap of its routes.
	Auth Authenticator
	// SecureDebuggingHandlers serves /containerLogs, /exec, /attach and /portForward on
	// the secure port, as the kubelet's enableDebuggingHandlers does; without it they
	// answer 405 "Debug endpoints are disabled.".
	SecureDebuggingHandlers bool
	// MaxStreams bounds the exec, attach and port-forward sessions open at once; more
	// are refused with 429. Default 64.
	MaxStreams int
	// Configz is optional (GET /configz answers 404 without it).
	Configz ConfigzProvider
	// HealthChecks are run by /healthz after the built-in "ping", in order. Names must be
	// unique, non-empty and URL-path safe.
	HealthChecks []HealthCheck
	// EnableProfiling serves net/http/pprof at /debug/pprof/ on the secure port, as the
	// kubelet's enableProfilingHandler, and on the read-only port when the debugging
	// handlers are on there too.
	EnableProfiling bool
	// EnableDebuggingHandlers turns on /debug/faults; Faults is then required.
	EnableDebuggingHandlers bool
	Faults                  FaultManager
	// Clock times the shutdown grace period; default the real clock.
	Clock clock.Clock
	// ShutdownGracePeriod is how long in-flight requests may finish after ctx ends.
	// Default 5s.
	ShutdownGracePeriod time.Duration
	// Limits bound what one client may hold of either port; zero fields take
	// DefaultLimits' values.
	Limits Limits
}

// Limits are the servers' timeouts and size bounds.
type Limits struct {
	// ReadHeaderTimeout is how long a client has to send a request's header; a client
	// that trickles it is disconnected (slowloris).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included, and WriteTimeout
	// writing its answer. Exec, attach and port-forward escape both (net/http clears a
	// hijacked connection's deadlines) and followed logs lift them (holdOpen): those run
	// for hours and have the streaming idle timeout instead.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header (net/http answers 431 beyond it, with 4 KB
	// of slack).
	MaxHeaderBytes int
	// MaxBodyBytes bounds every request body, on every route: a larger one is answered
	// 413 naming the limit, before the handler reads past it.
	MaxBodyBytes int64
	// StreamCreationTimeout is how long an upgraded exec, attach or port-forward session
	// waits for its client's streams (upstream's 30 s); the session holds one of
	// MaxStreams meanwhile.
	StreamCreationTimeout time.Duration
}

// DefaultLimits are the servers' limits unless Config.Limits sets them. Request bodies
// (one fault spec) are small, so a minute to read one is generous; a 10,000-pod /pods is
// 25 MB, well within the two minutes to write an answer.
var DefaultLimits = Limits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       time.Minute,
	WriteTimeout:      2 * time.Minute,
	IdleTimeout:       2 * time.Minute,
	MaxHeaderBytes:    64 << 10,
	MaxBodyBytes:      1 << 20,

	StreamCreationTimeout: StreamCreationTimeout,
}

// withDefaults fills l's zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	return Limits{
		ReadHeaderTimeout:     positiveOr(l.ReadHeaderTimeout, d.ReadHeaderTimeout),
		ReadTimeout:           positiveOr(l.ReadTimeout, d.ReadTimeout),
		WriteTimeout:          positiveOr(l.WriteTimeout, d.WriteTimeout),
		IdleTimeout:           positiveOr(l.IdleTimeout, d.IdleTimeout),
		MaxHeaderBytes:        positiveOr(l.MaxHeaderBytes, d.MaxHeaderBytes),
		MaxBodyBytes:          positiveOr(l.MaxBodyBytes, d.MaxBodyBytes),
		StreamCreationTimeout: positiveOr(l.StreamCreationTimeout, d.StreamCreationTimeout),
	}
}

// positiveOr is v when it is set (positive), else def.
func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Server serves the HTTP API. Its handler is safe for concurrent use.
type Server struct {
	cfg           Config
	checks        []HealthCheck
	handler       http.Handler
	secureHandler http.Handler
	streams       chan struct{} // a token per open stream
}

// Authenticator guards the secure port (auth.Auth).
type Authenticator interface {
	Wrap(next http.Handler) http.Handler
}

// New validates cfg and builds the handler.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Pods == nil:
		return nil, errors.New("server: Config.Pods is required")
	case cfg.Node == nil:
		return nil, errors.New("server: Config.Node is required")
	case cfg.Lease == nil:
		return nil, errors.New("server: Config.Lease is required")
	case cfg.Events == nil:
		return nil, errors.New("server: Config.Events is required")
	case cfg.Registry == nil:
		return nil, errors.New("server: Config.Registry is required")
	case cfg.EnableDebuggingHandlers && cfg.Faults == nil:
		return nil, errors.New("server: Config.Faults is required when debugging handlers are enabled")
	case cfg.SecureDebuggingHandlers && (cfg.Streaming == nil || cfg.Logs == nil):
		return nil, errors.New("server: Config.Streaming and Config.Logs are required with the secure debugging handlers")
	case cfg.ShutdownGracePeriod < 0:
		return nil, fmt.Errorf("server: Config.ShutdownGracePeriod must not be negative, got %v", cfg.ShutdownGracePeriod)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.ShutdownGracePeriod == 0 {
		cfg.ShutdownGracePeriod = DefaultShutdownGracePeriod
	}
	cfg.Limits = cfg.Limits.withDefaults()
	checks := []HealthCheck{{Name: "ping", Check: func() error { return nil }}}
	seen := map[string]bool{"ping": true}
	for _, c := range cfg.HealthChecks {
		if c.Name == "" || strings.ContainsAny(c.Name, "/?#{} ") || c.Check == nil {
			return nil, fmt.Errorf("server: health check %q needs a path-safe name and a Check func", c.Name)
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("server: health check %q registered twice", c.Name)
		}
		seen[c.Name] = true
		checks = append(checks, c)
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.Streaming != nil {
		cfg.Streaming = safeStreaming{cfg.Streaming}
	}
	s := &Server{cfg: cfg, checks: checks, streams: make(chan struct{}, cfg.MaxStreams)}
	s.handler = recoverPanics(&lazyHandler{build: func() http.Handler { return s.routes(false) }})
	s.secureHandler = recoverPanics(logRequests(&lazyHandler{build: func() http.Handler {
		secure := s.routes(true)
		if cfg.Auth != nil {
			secure = cfg.Auth.Wrap(secure)
		}
		return secure
	}}))
	return s, nil
}

// lazyHandler builds its routes on the first request. A node's two muxes hold about 44 KB
// of patterns and closures, and most of a thousand nodes in one process are never asked
// anything (44 MB at 1,000 nodes; docs/scale.md); the first request builds them.
type lazyHandler struct {
	once  sync.Once
	build func() http.Handler
	h     http.Handler
}

func (l *lazyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.once.Do(func() { l.h = l.build() })
	l.h.ServeHTTP(w, r)
}

// Handler is the read-only port's http.Handler.
func (s *Server) Handler() http.Handler { return s.handler }

// SecureHandler is the secure port's http.Handler: authenticated and authorized when
// Config.Auth is set.
func (s *Server) SecureHandler() http.Handler { return s.secureHandler }

// Listen binds addr ("127.0.0.1:0" picks a free port).
func (s *Server) Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve binds addr, logs `Serving HTTP address="HOST:PORT"` with the bound address and
// serves until ctx ends; then in-flight requests get ShutdownGracePeriod to finish.
// Returns nil after a shutdown, or the error that stopped serving.
func (s *Server) Serve(ctx context.Context, addr string) error {
	ln, err := s.Listen(addr)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Serving HTTP", "address", ln.Addr().String())
	return s.ServeListener(ctx, ln)
}

// ServeListener serves the read-only port on ln (which it closes) until ctx ends; see Serve.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, s.handler, nil)
}

// CertSource is the serving certificate at a TLS handshake: a fixed one (StaticCert), or
// the serving certificate manager's current one (serverTLSBootstrap), which may be none yet.
type CertSource func() (*tls.Certificate, error)

// StaticCert is a CertSource of one certificate.
func StaticCert(c *tls.Certificate) CertSource {
	return func() (*tls.Certificate, error) { return c, nil }
}

// ServeSecureListener serves the secure port on ln (which it closes) with TLS and the
// certificate of cert at each handshake, until ctx ends. Client certificates are asked for,
// not required, so that bearer tokens and anonymous requests reach the authenticator.
func (s *Server) ServeSecureListener(ctx context.Context, ln net.Listener, cert CertSource) error {
	return s.serve(ctx, ln, s.secureHandler, &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert() },
		ClientAuth:     tls.RequestClientCert,
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"http/1.1"}, // the SPDY upgrade of exec and port-forward needs HTTP/1.1
	})
}

func (s *Server) serve(ctx context.Context, ln net.Listener, handler http.Handler, tlsConfig *tls.Config) error {
	logger := klog.FromContext(ctx)
	l := s.cfg.Limits
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          httpErrorLog(logger),
		BaseContext:       func(net.Listener) context.Context { return klog.NewContext(context.Background(), logger) },
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	// Serve runs on this goroutine and the shutdown only once ctx ends: a node has two
	// servers, and a goroutine each waiting for ctx was 2,000 more stacks at 1,000 nodes.
	stopped := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(stopped)
		shutdownCtx, cancel := context.WithCancel(context.Background())
		timer := s.cfg.Clock.NewTimer(s.cfg.ShutdownGracePeriod)
		graceDone := make(chan struct{})
		go func() {
			defer close(graceDone)
			select {
			case <-timer.C():
				cancel()
			case <-shutdownCtx.Done():
			}
		}()
		err := srv.Shutdown(shutdownCtx)
		cancel()
		timer.Stop()
		<-graceDone
		if err != nil {
			logger.Info("HTTP requests still running after the grace period; closing them", "err", err)
			_ = srv.Close()
		}
	})
	err := srv.Serve(ln)
	if stop() {
		return fmt.Errorf("serving HTTP on %s: %w", ln.Addr(), err)
	}
	<-stopped
	logger.V(2).Info("Stopped serving HTTP", "address", ln.Addr().String())
	return nil
}

// routes builds the mux. Each path gets a method-less fallback so a wrong method answers
// 405 in JSON rather than net/http's plain text.
func (s *Server) routes(secure bool) http.Handler {
	mux := http.NewServeMux()
	route := func(path string, methods map[string]http.HandlerFunc) {
		allowed := make([]string, 0, len(methods)+1)
		for m, h := range methods {
			mux.HandleFunc(m+" "+path, h)
			allowed = append(allowed, m)
			if m == http.MethodGet {
				allowed = append(allowed, http.MethodHead)
			}
		}
		sort.Strings(allowed)
		allow := strings.Join(allowed, ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
		})
	}
	get := func(h http.HandlerFunc) map[string]http.HandlerFunc {
		return map[string]http.HandlerFunc{http.MethodGet: h}
	}

	route("/healthz", get(s.healthz))
	for _, c := range s.checks {
		route("/healthz/"+c.Name, get(checkHandler(c)))
	}
	route("/metrics", get(promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{EnableOpenMetrics: true}).ServeHTTP))
	if s.cfg.ProbeRegistry != nil {
		route("/metrics/probes", get(promhttp.HandlerFor(s.cfg.ProbeRegistry, promhttp.HandlerOpts{EnableOpenMetrics: true}).ServeHTTP))
	}
	if s.cfg.StateRegistry != nil {
		route("/metrics/state", get(promhttp.HandlerFor(s.cfg.StateRegistry, promhttp.HandlerOpts{EnableOpenMetrics: true}).ServeHTTP))
	} else {
		route("/metrics/state", get(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "/metrics/state is served in standalone mode only; in cluster mode kube-state-metrics reads the node and its pods from the API")
		}))
	}
	if s.cfg.CadvisorRegistry != nil {
		route("/metrics/cadvisor", get(promhttp.HandlerFor(s.cfg.CadvisorRegistry, promhttp.HandlerOpts{EnableOpenMetrics: true}).ServeHTTP))
	}
	if s.cfg.ResourceRegistry != nil {
		route("/metrics/resource", get(promhttp.HandlerFor(s.cfg.ResourceRegistry, promhttp.HandlerOpts{EnableOpenMetrics: true}).ServeHTTP))
	}
	if s.cfg.Stats != nil {
		route("/stats/summary", get(s.statsSummary))
	}
	route("/pods", get(s.pods))
	route("/node", get(s.node))
	route("/lease", get(s.lease))
	route("/events", get(s.events))
	route("/configz", get(s.configz))
	switch {
	case secure && s.cfg.SecureDebuggingHandlers:
		route("/containerLogs/{namespace}/{pod}/{container}", get(s.containerLogs))
		getPost := func(h http.HandlerFunc) map[string]http.HandlerFunc {
			return map[string]http.HandlerFunc{http.MethodGet: h, http.MethodPost: h}
		}
		route("/exec/{namespace}/{pod}/{container}", getPost(s.exec))
		route("/exec/{namespace}/{pod}/{uid}/{container}", getPost(s.exec))
		route("/attach/{namespace}/{pod}/{container}", getPost(s.attach))
		route("/attach/{namespace}/{pod}/{uid}/{container}", getPost(s.attach))
		route("/portForward/{namespace}/{pod}", getPost(s.portForward))
		route("/portForward/{namespace}/{pod}/{uid}", getPost(s.portForward))
	case secure:
		// As the kubelet with enableDebuggingHandlers false.
		for _, p := range []string{"/containerLogs/", "/exec/", "/attach/", "/portForward/", "/run/", "/runningpods/"} {
			mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "Debug endpoints are disabled.", http.StatusMethodNotAllowed)
			})
		}
	case s.cfg.EnableDebuggingHandlers && s.cfg.Logs != nil:
		// The read-only port serves logs too (the kubelet's does not), for the CLI.
		route("/containerLogs/{namespace}/{pod}/{container}", get(s.containerLogs))
	}
	if s.cfg.EnableProfiling && (secure || s.cfg.EnableDebuggingHandlers) {
		// As the kubelet's: the index serves the named profiles (heap, goroutine ...).
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if s.cfg.EnableDebuggingHandlers {
		route("/debug/faults", map[string]http.HandlerFunc{
			http.MethodGet:    s.listFaults,
			http.MethodPost:   s.addFault,
			http.MethodDelete: s.clearFaults,
		})
		route("/debug/faults/{id}", map[string]http.HandlerFunc{
			http.MethodGet:    s.getFault,
			http.MethodDelete: s.removeFault,
		})
	} else {
		mux.HandleFunc("/debug/", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "debugging handlers are disabled; start the daemon with --enable-debugging-handlers (or enableDebuggingHandlers: true)")
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s", r.URL.Path))
	})
	h := s.limitBodies(mux)
	if secure {
		return h
	}
	return logRequests(h)
}

// limitBodies bounds every request body to Limits.MaxBodyBytes: a declared length beyond
// it is answered 413 at once; a chunked body is cut there (http.MaxBytesReader), and the
// handler that reads it answers 413 (bodyError).
func (s *Server) limitBodies(next http.Handler) http.Handler {
	limit := s.cfg.Limits.MaxBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusRequestEntityTooLarge, tooLarge(limit))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		next.ServeHTTP(w, r)
	})
}

// tooLarge is the 413 message: it names the limit.
func tooLarge(limit int64) string {
	return fmt.Sprintf("request body too large: the limit is %d bytes", limit)
}

// bodyError answers an error from reading or decoding a request body: 413 when the body
// went past the limit, else 400 with the error.
func bodyError(w http.ResponseWriter, err error) {
	var tl *http.MaxBytesError
	if errors.As(err, &tl) {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge(tl.Limit))
		return
	}
	writeError(w, http.StatusBadRequest, err.Error())
}

// holdOpen lifts the server's read and write deadlines for a long-lived answer that is
// not hijacked (a followed log), so that ReadTimeout and WriteTimeout bound ordinary
// requests only. A read deadline left in place would also end the request's context,
// through net/http's background read.
func holdOpen(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
}

// httpErrorLog sends net/http's own complaints (TLS handshakes, a recovered panic) to
// the logger at V(2) rather than to stderr.
func httpErrorLog(logger klog.Logger) *log.Logger {
	return log.New(logWriter{logger}, "", 0)
}

type logWriter struct{ logger klog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.logger.V(2).Info("HTTP server", "msg", strings.TrimSpace(string(p)))
	return len(p), nil
}

// panicMessage is the 500 answer of a handler that panicked.
const panicMessage = "internal error: the handler panicked (logged by the daemon)"

// recoverPanics turns a handler's panic into a logged 500, or, when the answer had
// started, into a cut connection (http.ErrAbortHandler), so that no input takes the
// daemon down or leaves a client with half an answer that looks whole. net/http would
// recover too, but only by closing the connection with nothing said or logged usefully.
func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			klog.FromContext(r.Context()).Error(nil, "HTTP handler panicked", "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			switch {
			case rec.hijacked:
				// The connection is the session's now; it ends with the session.
			case rec.wrote:
				panic(http.ErrAbortHandler)
			default:
				writeError(w, http.StatusInternalServerError, panicMessage)
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// safeStreaming recovers the streaming provider's panics into errors: upstream's
// port-forward handler calls PortForward on a goroutine of its own, out of reach of
// recoverPanics, where a panic would end the process.
type safeStreaming struct{ StreamingProvider }

func (s safeStreaming) ExecInContainer(ctx context.Context, name string, uid string, container string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, timeout time.Duration) (err error) {
	defer recoverSession(ctx, "exec", &err)
	return s.StreamingProvider.ExecInContainer(ctx, name, uid, container, cmd, in, out, errOut, tty, resize, timeout)
}

func (s safeStreaming) AttachContainer(ctx context.Context, name string, uid string, container string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) (err error) {
	defer recoverSession(ctx, "attach", &err)
	return s.StreamingProvider.AttachContainer(ctx, name, uid, container, in, out, errOut, tty, resize)
}

func (s safeStreaming) PortForward(ctx context.Context, name string, uid string, port int32, stream io.ReadWriteCloser) (err error) {
	defer recoverSession(ctx, "port-forward", &err)
	return s.StreamingProvider.PortForward(ctx, name, uid, port, stream)
}

// recoverSession, deferred, logs a session's panic and returns it as the session's error.
func recoverSession(ctx context.Context, what string, err *error) {
	if p := recover(); p != nil {
		klog.FromContext(ctx).Error(nil, "Streaming session panicked", "session", what, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		*err = fmt.Errorf("internal error: the %s session panicked (logged by the daemon)", what)
	}
}

// statusRecorder remembers the status code for the request log, and whether the answer
// started, for recoverPanics.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	wrote    bool
	hijacked bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if code >= 200 {
		r.wrote = true
	}
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (holdOpen).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush passes flushes through, so that followed logs stream.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack passes the connection through, for the SPDY and WebSocket upgrades of exec,
// attach and port-forward.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the response writer cannot be hijacked")
	}
	conn, rw, err := h.Hijack()
	if err == nil {
		r.status = http.StatusSwitchingProtocols
		r.hijacked = true
	}
	return conn, rw, err
}

func logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		klog.FromContext(r.Context()).V(4).Info("HTTP request", "method", r.Method, "path", r.URL.Path, "status", rec.status)
	})
}

// healthz runs every check, as the apiserver healthz handler: "ok" when all pass
// (?verbose lists them), else 500 with one line per check and "healthz check failed".
// Unlike upstream, a failing check shows its reason: the simulator has no auth boundary
// and the reason is the point of looking.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	var out bytes.Buffer
	failed := false
	for _, c := range s.checks {
		if err := c.Check(); err != nil {
			failed = true
			fmt.Fprintf(&out, "[-]%s failed: %v\n", c.Name, err)
		} else {
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%shealthz check failed\n", out.String())
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%shealthz check passed\n", out.String())
		return
	}
	fmt.Fprint(w, "ok")
}

func checkHandler(c HealthCheck) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if err := c.Check(); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "internal server error: %v\n", err)
			return
		}
		fmt.Fprint(w, "ok")
	}
}

// LogOptions are the query parameters of /containerLogs, as v1.PodLogOptions has them.
type LogOptions struct {
	Follow, Previous, Timestamps bool
	TailLines, SinceSeconds      *int64
	SinceTime                    *time.Time
	LimitBytes                   *int64
}

// LogsProvider writes a container's log.
type LogsProvider interface {
	ContainerLogs(ctx context.Context, namespace, pod, container string, opts LogOptions, w io.Writer) error
}

// StatusError is an error a provider answers with a status code (404 for an unknown pod).
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string { return e.Message }

// parseLogOptions reads the query as the kubelet's PodLogOptions validation does: a bad value
// names the parameter.
func parseLogOptions(q url.Values) (LogOptions, error) {
	var o LogOptions
	boolean := func(name string, dst *bool) error {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%s: Invalid value: %q: not a boolean", name, v)
			}
			*dst = b
		}
		return nil
	}
	integer := func(name string, min int64, what string) (*int64, error) {
		v := q.Get(name)
		if v == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min {
			return nil, fmt.Errorf("%s: Invalid value: %q: %s", name, v, what)
		}
		return &n, nil
	}
	var err error
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"follow", &o.Follow}, {"previous", &o.Previous}, {"timestamps", &o.Timestamps}} {
		if err := boolean(b.name, b.dst); err != nil {
			return o, err
		}
	}
	if o.TailLines, err = integer("tailLines", 0, "must be greater than or equal to 0"); err != nil {
		return o, err
	}
	if o.SinceSeconds, err = integer("sinceSeconds", 1, "must be greater than 0"); err != nil {
		return o, err
	}
	if o.LimitBytes, err = integer("limitBytes", 1, "must be greater than 0"); err != nil {
		return o, err
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, fmt.Errorf("sinceTime: Invalid value: %q: not an RFC 3339 time", v)
		}
		o.SinceTime = &t
	}
	if o.SinceSeconds != nil && o.SinceTime != nil {
		return o, errors.New("at most one of `sinceTime` or `sinceSeconds` may be specified")
	}
	return o, nil
}

func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	opts, err := parseLogOptions(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if opts.Follow {
		holdOpen(w)
	}
	// Errors found before the first line have their status; the log is plain text.
	pw := &pendingWriter{w: w}
	err = s.cfg.Logs.ContainerLogs(r.Context(), r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"), opts, pw)
	var se *StatusError
	switch {
	case err == nil:
		pw.start()
	case pw.started:
		klog.FromContext(r.Context()).Error(err, "Streaming container logs failed")
	case errors.As(err, &se):
		writeError(w, se.Code, se.Message)
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// pendingWriter sends the 200 and the text/plain header with the first byte, so that an
// error before any line can still answer with its own status.
type pendingWriter struct {
	w       http.ResponseWriter
	started bool
}

func (p *pendingWriter) start() {
	if !p.started {
		p.started = true
		p.w.Header().Set("Content-Type", "text/plain")
		p.w.WriteHeader(http.StatusOK)
	}
}

func (p *pendingWriter) Write(b []byte) (int, error) {
	p.start()
	return p.w.Write(b)
}

func (p *pendingWriter) Flush() {
	p.start()
	if f, ok := p.w.(http.Flusher); ok {
		f.Flush()
	}
}

// StatsProvider computes the /stats/summary document.
type StatsProvider interface {
	Summary(ctx context.Context) (*statsapi.Summary, error)
}

// statsSummary serves the summary; ?only_cpu_and_memory=true keeps what the metrics server
// reads (the node's and the pods' CPU and memory), as upstream.
func (s *Server) statsSummary(w http.ResponseWriter, r *http.Request) {
	only := false
	if v := r.URL.Query().Get("only_cpu_and_memory"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query parameter only_cpu_and_memory: %q is not a boolean", v))
			return
		}
		only = b
	}
	sum, err := s.cfg.Stats.Summary(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Internal Error: "+err.Error())
		return
	}
	if only {
		n := sum.Node
		sum.Node = statsapi.NodeStats{NodeName: n.NodeName, StartTime: n.StartTime, CPU: n.CPU, Memory: n.Memory}
		for i, p := range sum.Pods {
			sum.Pods[i] = statsapi.PodStats{PodRef: p.PodRef, StartTime: p.StartTime, Containers: p.Containers, CPU: p.CPU, Memory: p.Memory}
		}
	}
	writeJSON(w, http.StatusOK, sum)
}

// podListPrefix and podListSuffix wrap the items of a v1.PodList as encoding/json writes it.
const (
	podListPrefix = `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[`
	podListSuffix = "]}\n"
)

func (s *Server) pods(w http.ResponseWriter, r *http.Request) {
	if enc, ok := s.cfg.Pods.(PodListEncoder); ok {
		items := enc.PodListItems()
		size := len(podListPrefix) + len(podListSuffix)
		for _, item := range items {
			size += len(item) + 1
		}
		if len(items) > 0 {
			size-- // no comma after the last
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// With a length, no chunked framing; and the items go out in large writes, not in
		// the response's 4 KB buffer: 10,000 pods are 25 MB.
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		buf := podListBuffers.Get().(*[]byte)
		out := append((*buf)[:0], podListPrefix...)
		for i, item := range items {
			if len(out)+len(item)+1 > cap(out) {
				if _, err := w.Write(out); err != nil {
					break // the client left
				}
				out = out[:0]
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, item...)
		}
		out = append(out, podListSuffix...)
		_, _ = w.Write(out)
		*buf = out[:0]
		podListBuffers.Put(buf)
		return
	}
	pods := s.cfg.Pods.GetPods()
	list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: make([]v1.Pod, 0, len(pods))}
	for _, p := range pods {
		if p != nil {
			list.Items = append(list.Items, *p)
		}
	}
	writeJSON(w, http.StatusOK, &list)
}

func (s *Server) node(w http.ResponseWriter, r *http.Request) {
	node := s.cfg.Node.GetNode()
	if node == nil {
		writeError(w, http.StatusServiceUnavailable, "the node is not registered yet")
		return
	}
	writeJSON(w, http.StatusOK, node)
}

func (s *Server) lease(w http.ResponseWriter, r *http.Request) {
	lease := s.cfg.Lease.GetLease()
	if lease == nil {
		writeError(w, http.StatusServiceUnavailable, "the node lease has not been created yet")
		return
	}
	writeJSON(w, http.StatusOK, lease)
}

// events answers the recorded events, newest last; ?limit=N keeps the newest N.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	items := s.cfg.Events.List()
	if raw := r.URL.Query().Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid limit %q: must be a positive integer", raw))
			return
		}
		if n < len(items) {
			items = items[len(items)-n:]
		}
	}
	if items == nil {
		items = []v1.Event{}
	}
	writeJSON(w, http.StatusOK, &v1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}, Items: items})
}

func (s *Server) configz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Configz == nil {
		writeError(w, http.StatusNotFound, "configz is not available")
		return
	}
	writeJSON(w, http.StatusOK, s.cfg.Configz.Configz())
}

// FaultList is the body of GET /debug/faults.
type FaultList struct {
	Items []fault.Spec `json:"items"`
}

func (s *Server) listFaults(w http.ResponseWriter, r *http.Request) {
	items := s.cfg.Faults.Faults()
	if items == nil {
		items = []fault.Spec{}
	}
	writeJSON(w, http.StatusOK, FaultList{Items: items})
}

func (s *Server) findFault(id string) (fault.Spec, bool) {
	for _, f := range s.cfg.Faults.Faults() {
		if f.ID == id {
			return f, true
		}
	}
	return fault.Spec{}, false
}

func (s *Server) getFault(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f, ok := s.findFault(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no fault with id %q", id))
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// DecodeFault parses one fault spec strictly: unknown fields, trailing data and invalid
// specs are errors that say what is wrong. It reads body to its end: bound it.
func DecodeFault(body io.Reader) (fault.Spec, error) {
	var spec fault.Spec
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		if errors.Is(err, io.EOF) {
			return spec, errors.New("invalid fault: empty body, want one fault as JSON")
		}
		return spec, fmt.Errorf("invalid fault JSON: %w", err)
	}
	// The rest is read to its end, not peeked at (dec.More): a read error there, such as
	// the body limit, must not be taken for the end of the body.
	rest, err := io.ReadAll(io.MultiReader(dec.Buffered(), body))
	if err != nil {
		return spec, fmt.Errorf("reading the fault body: %w", err)
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return spec, errors.New("invalid fault JSON: trailing data after the fault object (send one fault per request)")
	}
	if err := spec.Validate(); err != nil {
		return spec, fmt.Errorf("invalid fault: %w", err)
	}
	return spec, nil
}

func (s *Server) addFault(w http.ResponseWriter, r *http.Request) {
	// The body is bounded by limitBodies.
	spec, err := DecodeFault(r.Body)
	if err != nil {
		bodyError(w, err)
		return
	}
	stored, err := s.cfg.Faults.AddFault(spec)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("adding fault: %v", err))
		return
	}
	w.Header().Set("Location", "/debug/faults/"+stored.ID)
	writeJSON(w, http.StatusCreated, stored)
}

// ClearResult is the body of DELETE /debug/faults.
type ClearResult struct {
	Cleared int `json:"cleared"`
}

func (s *Server) clearFaults(w http.ResponseWriter, r *http.Request) {
	n := len(s.cfg.Faults.Faults())
	s.cfg.Faults.ClearFaults()
	writeJSON(w, http.StatusOK, ClearResult{Cleared: n})
}

func (s *Server) removeFault(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f, ok := s.findFault(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no fault with id %q", id))
		return
	}
	if err := s.cfg.Faults.RemoveFault(id); err != nil {
		// it was listed a moment ago: it retired (count reached) in between
		writeError(w, http.StatusNotFound, fmt.Sprintf("removing fault %q: %v", id, err))
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorBody{Error: msg})
}

// podListBuffers hold /pods' writes (256 KB each: a grown one is put back at its size).
var podListBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		data, _ = json.Marshal(ErrorBody{Error: fmt.Sprintf("encoding the response: %v", err)})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(data, '\n'))
}
