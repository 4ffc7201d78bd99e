package kubelet

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/minikubelet/minikubelet/pkg/auth"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/server"
	"github.com/minikubelet/minikubelet/pkg/servingcert"
)

// The kubelet's exec, attach and port-forward, on the simulated runtime: the pod and
// container are resolved as the kubelet's server resolves them, and the session runs in
// the HTTP server's goroutine (never a loop's).

// StreamTarget finds the pod and container of a session (server.StreamingProvider), with
// upstream's answers for those it does not know.
func (k *Kubelet) StreamTarget(namespace, podName, uid, container string) (string, types.UID, error) {
	pod := k.podByName(namespace, podName)
	if pod == nil || (uid != "" && string(pod.UID) != uid) {
		return "", "", &server.StatusError{Code: http.StatusNotFound, Message: "pod does not exist"}
	}
	if container != "" && !hasContainer(pod, container) {
		return "", "", &server.StatusError{Code: http.StatusNotFound, Message: fmt.Sprintf("container not found (%q)", container)}
	}
	return podFullName(pod), pod.UID, nil
}

// podFullName is the kubelet's name_namespace.
func podFullName(pod *v1.Pod) string { return pod.Name + "_" + pod.Namespace }

// runningContainer is the ID of the newest running instance of a pod's container.
func (k *Kubelet) runningContainer(ctx context.Context, uid types.UID, name string) (string, error) {
	cs, err := k.rt.ListContainers(ctx, &cri.ContainerFilter{LabelSelector: map[string]string{
		cri.PodUIDLabel: string(uid), cri.ContainerNameLabel: name,
	}})
	if err != nil {
		return "", err
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].CreatedAt > cs[j].CreatedAt })
	for _, c := range cs {
		if c.State == cri.ContainerRunning {
			return c.ID, nil
		}
	}
	if len(cs) > 0 {
		return "", fmt.Errorf("container not running (%s)", cs[0].ID)
	}
	return "", fmt.Errorf("container not found (%q)", name)
}

// drainResizes reads terminal resizes (the simulated commands have no terminal size)
// until ctx ends, so that the stream's resize reader never blocks.
func drainResizes(ctx context.Context, resize <-chan remotecommand.TerminalSize) {
	if resize == nil {
		return
	}
	go func() {
		for {
			select {
			case _, ok := <-resize:
				if !ok {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
}

// ExecInContainer runs cmd in the container's newest running instance through the
// simulated command table (remotecommand.Executor). A non-zero exit is a
// utilexec.CodeExitError, which the streaming server reports as the exit code kubectl
// shows.
func (k *Kubelet) ExecInContainer(ctx context.Context, name string, uid string, container string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	drainResizes(ctx, resize)
	id, err := k.runningContainer(ctx, types.UID(uid), container)
	if err != nil {
		return err
	}
	// A stream the client did not ask for is a nil WriteCloser: keep it a nil Writer (not a
	// non-nil interface holding nil), which the runtime reads as "none".
	var stdout, stderr io.Writer
	if out != nil {
		stdout = out
	}
	if errOut != nil {
		stderr = errOut
	}
	code, err := k.runtime.Exec(ctx, id, cmd, in, stdout, stderr)
	if err != nil {
		return err
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return nil
}

// AttachContainer attaches to the container's output (remotecommand.Attacher): the
// lines it writes to its log from now on, until it exits or the client leaves. What is
// sent to its stdin is read and dropped: the simulated process reads nothing.
func (k *Kubelet) AttachContainer(ctx context.Context, name string, uid string, container string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	drainResizes(ctx, resize)
	pod, ok := k.podByUID(types.UID(uid))
	if !ok {
		return fmt.Errorf("pod %q does not exist", name)
	}
	if _, err := k.runningContainer(ctx, types.UID(uid), container); err != nil {
		return err
	}
	if in != nil {
		go func() { _, _ = io.Copy(io.Discard, in) }()
	}
	if out == nil {
		return nil
	}
	now := k.clock.Now()
	return k.ContainerLogs(ctx, pod.Namespace, pod.Name, container, server.LogOptions{Follow: true, SinceTime: &now}, out)
}

// PortForward connects a port-forward stream to a port of the pod
// (portforward.PortForwarder). A port a running container declares answers as a small
// HTTP server naming the pod, container and port; any other port refuses the
// connection, as an empty port in the pod's network namespace does.
func (k *Kubelet) PortForward(ctx context.Context, name string, uid string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	pod, ok := k.podByUID(types.UID(uid))
	if !ok {
		return fmt.Errorf("pod %q does not exist", name)
	}
	container := ""
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, p := range c.Ports {
			if p.ContainerPort == port && (p.Protocol == "" || p.Protocol == v1.ProtocolTCP) {
				if _, err := k.runningContainer(ctx, types.UID(uid), c.Name); err == nil {
					container = c.Name
				}
			}
		}
	}
	if container == "" {
		return fmt.Errorf("failed to connect to localhost:%d inside namespace %q, IPv4: dial tcp4 127.0.0.1:%d: connect: connection refused IPv6 dial tcp6 [::1]:%d: connect: connection refused ", port, pod.Namespace+"/"+pod.Name, port, port)
	}
	return serveHTTP(stream, fmt.Sprintf("minikubelet: pod %s/%s container %s port %d", pod.Namespace, pod.Name, container, port))
}

// maxForwardedRequests bounds the requests of one forwarded connection, and
// maxForwardedRequestBytes what one of them may send (header and body): http.ReadRequest
// itself would read a header line of any length.
const (
	maxForwardedRequests     = 1000
	maxForwardedRequestBytes = 64<<10 + 1<<20
)

// serveHTTP answers HTTP/1.1 requests on conn with 200 and a body that names the
// request, until the client closes or asks to. A request past
// maxForwardedRequestBytes closes the connection.
func serveHTTP(conn io.ReadWriter, banner string) error {
	budget := &budgetReader{r: conn}
	br := bufio.NewReader(budget)
	for i := 0; i < maxForwardedRequests; i++ {
		budget.left = maxForwardedRequestBytes
		req, err := http.ReadRequest(br)
		if err != nil {
			return nil // the client closed, sent too much, or spoke something else than HTTP
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return nil
		}
		req.Body.Close()
		body := fmt.Sprintf("%s: %s %s\n", banner, req.Method, req.URL.RequestURI())
		closing := req.Close || strings.EqualFold(req.Header.Get("Connection"), "close")
		header := "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
		if closing {
			header += "Connection: close\r\n"
		}
		if _, err := fmt.Fprintf(conn, "%sContent-Length: %d\r\n\r\n%s", header, len(body), body); err != nil || closing {
			return nil
		}
	}
	return nil
}

// budgetReader reads from r until left bytes have been read, then fails.
type budgetReader struct {
	r    io.Reader
	left int64
}

var errRequestTooLarge = errors.New("forwarded request too large")

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errRequestTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// buildSecurePort adds the secure port's parts to the server's configuration: the
// delegating authenticator and authorizer (TokenReview and SubjectAccessReview through
// the API client), the serving certificate, and the debugging handlers (logs, exec,
// attach, port-forward) unless enableDebuggingHandlers is explicitly false.
func (k *Kubelet) buildSecurePort(scfg *server.Config) error {
	kc := &k.cfg.Kubelet
	a, err := auth.New(auth.Config{
		NodeName:         k.nodeName,
		Authentication:   kc.Authentication,
		Authorization:    kc.Authorization,
		Client:           k.kubeClient,
		FineGrainedAuthz: k.gate.Enabled(features.KubeletFineGrainedAuthz),
	})
	if err != nil {
		return fmt.Errorf("secure port: %w", err)
	}
	if kc.ServerTLSBootstrap && k.gate.Enabled(features.RotateKubeletServerCertificate) && k.kubeClient != nil {
		// As the kubelet: a kubernetes.io/kubelet-serving certificate from the API server,
		// none until a CSR of the node's is approved and signed (the handshake fails then).
		m, err := servingcert.NewManager(servingcert.ManagerConfig{Client: k.kubeClient, NodeName: k.nodeName,
			IPs: []net.IP{net.ParseIP(k.hostIP)}, CertDir: k.cfg.CertDir, Registry: k.registry,
			Prefix: k.registry.Prefix(), Clock: k.clock})
		if err != nil {
			return fmt.Errorf("secure port: %w", err)
		}
		k.servingCertManager = m
		k.servingCert = func() (*tls.Certificate, error) {
			if c := m.Current(); c != nil {
				return c, nil
			}
			return nil, errors.New("no serving certificate available for the kubelet")
		}
	} else {
		sc := servingcert.Config{
			CertFile: kc.TLSCertFile,
			KeyFile:  kc.TLSPrivateKeyFile,
			CertDir:  k.cfg.CertDir,
			Host:     k.nodeName,
			IPs:      []net.IP{net.ParseIP(k.hostIP)},
		}
		if k.deferServingCert {
			get, err := servingcert.Deferred(sc)
			if err != nil {
				return fmt.Errorf("secure port: %w", err)
			}
			k.servingCert = get
		} else {
			cert, _, err := servingcert.Load(sc)
			if err != nil {
				return fmt.Errorf("secure port: %w", err)
			}
			k.servingCert = server.StaticCert(cert)
		}
	}
	scfg.Auth = a
	scfg.Streaming = k
	scfg.SecureDebuggingHandlers = kc.EnableDebuggingHandlers == nil || *kc.EnableDebuggingHandlers
	return nil
}
