package server

import (
	"errors"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// StreamingProvider runs exec, attach and port-forward sessions for the secure port.
type StreamingProvider interface {
	// StreamTarget finds the pod (and its container, unless container is empty) a
	// session is for; uid, when not empty, must match. It returns the name the session
	// methods take and the pod's UID, or a *StatusError (404 for an unknown pod or
	// container, with upstream's messages).
	StreamTarget(namespace, pod, uid, container string) (name string, podUID types.UID, err error)
	remotecommand.Executor
	remotecommand.Attacher
	portforward.PortForwarder
}

// The kubelet's streaming timeouts: streamingConnectionIdleTimeout's default, and the
// time a client has to open its streams.
const (
	StreamIdleTimeout     = 4 * time.Hour
	StreamCreationTimeout = remotecommandconsts.DefaultStreamCreationTimeout
)

// acquireStream takes a session slot, or answers 429 when MaxStreams are open.
func (s *Server) acquireStream(w http.ResponseWriter) (release func(), ok bool) {
	select {
	case s.streams <- struct{}{}:
		return func() { <-s.streams }, true
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "too many exec, attach and port-forward sessions open")
		return nil, false
	}
}

// target resolves the request's pod and container, answering the error itself.
func (s *Server) target(w http.ResponseWriter, r *http.Request, container string) (string, types.UID, bool) {
	name, uid, err := s.cfg.Streaming.StreamTarget(r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid"), container)
	if err != nil {
		writeStatusError(w, err)
		return "", "", false
	}
	return name, uid, true
}

// exec is /exec/{namespace}/{pod}[/{uid}]/{container}?command=...&input=1&output=1..., as
// the kubelet serves it: SPDY (v1-v4) or WebSocket, the command's exit code in the
// status stream.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) { s.remoteCommand(w, r, true) }

// attach is /attach/{namespace}/{pod}[/{uid}]/{container}.
func (s *Server) attach(w http.ResponseWriter, r *http.Request) { s.remoteCommand(w, r, false) }

// remoteCommand serves an exec (with its command) or an attach session.
func (s *Server) remoteCommand(w http.ResponseWriter, r *http.Request, exec bool) {
	container := r.PathValue("container")
	name, uid, ok := s.target(w, r, container)
	if !ok {
		return
	}
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	cmd := r.URL.Query()["command"]
	if exec && len(cmd) == 0 {
		writeError(w, http.StatusBadRequest, "command: Required value: you must specify a command")
		return
	}
	release, ok := s.acquireStream(w)
	if !ok {
		return
	}
	defer release()
	// No holdOpen: the SPDY and WebSocket upgrades hijack the connection, and net/http
	// clears its deadlines then (TestLongLivedAnswersLiftDeadlines).
	if exec {
		remotecommand.ServeExec(w, r, s.cfg.Streaming, name, string(uid), container, cmd, opts,
			StreamIdleTimeout, s.cfg.Limits.StreamCreationTimeout, remotecommandconsts.SupportedStreamingProtocols)
		return
	}
	remotecommand.ServeAttach(w, r, s.cfg.Streaming, name, string(uid), container, opts,
		StreamIdleTimeout, s.cfg.Limits.StreamCreationTimeout, remotecommandconsts.SupportedStreamingProtocols)
}

// portForward is /portForward/{namespace}/{pod}[/{uid}] (SPDY, or WebSocket with ?port=).
func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	name, uid, ok := s.target(w, r, "")
	if !ok {
		return
	}
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	release, ok := s.acquireStream(w)
	if !ok {
		return
	}
	defer release()
	portforward.ServePortForward(w, r, s.cfg.Streaming, name, string(uid), opts,
		StreamIdleTimeout, s.cfg.Limits.StreamCreationTimeout, portforward.SupportedProtocols)
}

// writeStatusError answers err with its status code (*StatusError) or 500.
func writeStatusError(w http.ResponseWriter, err error) {
	var se *StatusError
	if errors.As(err, &se) {
		writeError(w, se.Code, se.Message)
		return
	}
	writeError(w, http.StatusInternalServerError, err.Error())
}
