package agnhost

import (
	"net/http"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// grpcHealthPath is prober.GRPCHealthPath: where the simulated gRPC health service
// answers (kept here so that agnhost does not depend on the prober).
const grpcHealthPath = "/grpc.health.v1.Health/Check"

// newGrpcHealthChecking is `agnhost grpc-health-checking`, the server of the gRPC probe
// specs: grpc.health.v1.Health/Check on --port (5000) answers SERVING for --service, then
// NOT_SERVING once --delay-unhealthy-sec have passed (never when negative), or as
// /make-serving and /make-not-serving on --http-port (8080) last said. gRPC is simulated
// as the prober asks it: a POST to prober.GRPCHealthPath whose body is the service and
// whose answer's body is the status; the health check answers on the HTTP port too.
func newGrpcHealthChecking(r *run) *cobra.Command {
	var port, httpPort, delayUnhealthySec int
	var service string
	cmd := &cobra.Command{
		Use:   "grpc-health-checking",
		Short: "Starts a simple grpc health checking endpoint",
		Long:  "Starts a simple grpc health checking endpoint with --port to serve on and --service to check status for. The endpoint returns SERVING for the first --delay-unhealthy-sec, and NOT_SERVING after this. NOT_FOUND will be returned for the requests for non-configured service name. Probe can be forced to be set NOT_SERVING by calling /make-not-serving http endpoint.",
		Args:  cobra.MaximumNArgs(0),
		Run: func(cmd *cobra.Command, args []string) {
			p := r.p
			h := &healthChecker{started: p.Now(), service: service, delayUnhealthySec: delayUnhealthySec}
			goLog(p, "Http server starting to listen on :%d", httpPort)
			if err := p.Listen("tcp", httpPort, h.httpServer()); err != nil {
				goFatal(p, "%v", err)
			}
			if err := p.Listen("tcp", port, &mux{routes: map[string]handlerFunc{grpcHealthPath: h.check}, root: func(*simnet.Request) *simnet.Response {
				return nil // a gRPC server hangs up on what is not gRPC
			}}); err != nil {
				goFatal(p, "Error while starting the listening service %v", err)
			}
			goLog(p, "gRPC server starting to listen on :%d", port)
			untilKilled(p)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&port, "port", 5000, "Port number.")
	fl.IntVar(&httpPort, "http-port", 8080, "Port number for the /make-serving and /make-not-serving.")
	fl.IntVar(&delayUnhealthySec, "delay-unhealthy-sec", -1, "Number of seconds to delay before start reporting NOT_SERVING, negative value indicates never.")
	fl.StringVar(&service, "service", "", "Service name to register the health check for.")
	return cmd
}

// healthChecker is the health service's state. Safe for concurrent use.
type healthChecker struct {
	started           time.Time
	service           string
	delayUnhealthySec int

	mu             sync.Mutex
	forceUnhealthy *bool // set by /make-serving and /make-not-serving
}

// check is Health/Check: the status of the service the request's body names.
func (h *healthChecker) check(req *simnet.Request) *simnet.Response {
	if string(req.Body) != h.service {
		return &simnet.Response{Status: http.StatusNotFound, Body: []byte("rpc error: code = NotFound desc = unknown service")}
	}
	h.mu.Lock()
	force := h.forceUnhealthy
	h.mu.Unlock()
	d := since(req, h.started)
	if force != nil && *force || h.delayUnhealthySec >= 0 && d.Seconds() >= float64(h.delayUnhealthySec) {
		return &simnet.Response{Status: http.StatusOK, Body: []byte("NOT_SERVING")}
	}
	return &simnet.Response{Status: http.StatusOK, Body: []byte("SERVING")}
}

// httpServer is the server on --http-port.
func (h *healthChecker) httpServer() *mux {
	set := func(unhealthy bool) handlerFunc {
		return func(req *simnet.Request) *simnet.Response {
			h.mu.Lock()
			h.forceUnhealthy = &unhealthy
			h.mu.Unlock()
			return text(since(req, h.started).String())
		}
	}
	return &mux{routes: map[string]handlerFunc{
		"/make-not-serving": set(true),
		"/make-serving":     set(false),
		grpcHealthPath:      h.check,
	}}
}
