package agnhost

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/programs/netclients"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// netexecFlags are netexec's flags, with upstream's names and defaults.
type netexecFlags struct {
	httpPort, udpPort, sctpPort int
	certFile, keyFile           string
	override, udpAddresses      string
	delayShutdown               int
}

// newNetexec is `agnhost netexec`, the server of most of the networking and probing
// specs: an HTTP server with upstream's endpoints on --http-port and a UDP server on
// --udp-port. SIGTERM makes /readyz answer 503 and ends the process with 0 after
// --delay-shutdown seconds, as upstream. TLS is not simulated (--tls-cert-file serves
// plain HTTP once the files exist), nor SCTP (--sctp-port only makes /healthz ready, as
// upstream's SCTP server would). /exit, /shutdown, /shell and /upload answer 501: a
// request cannot act on the server's process or run commands in its container.
func newNetexec(r *run) *cobra.Command {
	f := &netexecFlags{}
	cmd := &cobra.Command{
		Use:   "netexec",
		Short: "Creates HTTP(S), UDP, and (optionally) SCTP servers with various endpoints",
		Long: `Starts a HTTP(S) server on given port with the following endpoints:

- /: Returns the request's timestamp.
- /clientip: Returns the request's IP address.
- /header: Returns the request's header value corresponding to the key provided or the entire
  header marshalled as json, if no form value (key) is provided.
- /dial: Creates a given number of requests to the given host and port using the given protocol,
  and returns a JSON with the fields "responses" and "errors".
- /echo: Returns the given "msg" ("/echo?msg=echoed_msg"), with the optional status "code".
- /exit: Closes the server with the given code and graceful shutdown.
- /healthz: Returns "200 OK" if the server is healthy, "412 Status Precondition Failed" otherwise.
- /readyz: Returns "200 OK" if the server is ready to receive traffic, "503" once it is shutting down.
- /hostname, /hostName: Returns the server's hostname.
- /redirect: Returns a redirect response to the given "location", with the optional status "code".
- /shell: Executes the given "shellCommand" or "cmd".
- /shutdown: Closes the server with the exit code 0.
- /upload: Accepts a file to be uploaded, writing it in the "/uploads" folder on the host.

It will also start a UDP server on the indicated UDP port and addresses that responds to the
following commands: "hostname", "echo <msg>", "clientip".
`,
		Args: cobra.MaximumNArgs(0),
		Run: func(cmd *cobra.Command, args []string) {
			r.p.Exit(netexec(r.p, f))
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.httpPort, "http-port", 8080, "HTTP Listen Port")
	fl.StringVar(&f.certFile, "tls-cert-file", "", "File containing an x509 certificate for HTTPS. (CA cert, if any, concatenated after server cert)")
	fl.StringVar(&f.keyFile, "tls-private-key-file", "", "File containing an x509 private key matching --tls-cert-file")
	fl.IntVar(&f.udpPort, "udp-port", 8081, "UDP Listen Port")
	fl.IntVar(&f.sctpPort, "sctp-port", -1, "SCTP Listen Port")
	fl.StringVar(&f.override, "http-override", "", "Override the HTTP handler to always respond as if it were a GET with this path & params")
	fl.StringVar(&f.udpAddresses, "udp-listen-addresses", "", "A comma separated list of ip addresses the udp servers listen from")
	fl.IntVar(&f.delayShutdown, "delay-shutdown", 0, "Number of seconds to delay shutdown when receiving SIGTERM.")
	return cmd
}

// netexecServer is what netexec's handlers know: captured when it starts, or atomic.
type netexecServer struct {
	hostname string
	started  time.Time
	network  *simnet.Network
	ns       *simnet.Namespace
	fs       *vfs.View
	podIP    string
	peers    *peers
	// ready is upstream's serverReady: the UDP (or SCTP) server runs.
	ready atomic.Bool
	// terminating is set once SIGTERM came: /readyz answers 503.
	terminating atomic.Bool
	// log writes a line to the server's stderr from a handler (Proc.Detached), as
	// upstream's handlers log each request with log.Printf.
	log func(at time.Time, line string)
}

// logf logs a handler's line as Go's log package does, at the request's time.
func (s *netexecServer) logf(req *simnet.Request, format string, a ...any) {
	if s.log == nil {
		return
	}
	at := req.Now
	if at.IsZero() {
		at = s.started
	}
	s.log(at, at.UTC().Format("2006/01/02 15:04:05")+" "+fmt.Sprintf(format, a...))
}

func netexec(p *shell.Proc, f *netexecFlags) int {
	p.Trap(shell.SIGTERM, true)
	network, ns := p.NetworkNamespace()
	s := &netexecServer{hostname: p.Hostname(), started: p.Now(), network: network, ns: ns, fs: p.FS(), podIP: p.PodIP(), peers: newPeers(p.PodIP()), log: p.Detached(2)}
	addrs, err := parseAddresses(f.udpAddresses)
	if err != nil {
		goFatal(p, "%v", err)
	}
	h := s.routes()
	if f.override != "" {
		inner := h
		h = &mux{root: func(req *simnet.Request) *simnet.Response {
			o := *req
			o.Method, o.Target, o.Body = http.MethodGet, f.override, nil
			return inner.route(&o)
		}}
	}
	goLog(p, "Started HTTP server on port %d", f.httpPort)
	if f.udpPort != -1 {
		if err := s.listenUDP(p, addrs, f.udpPort); err != nil {
			goFatal(p, "Error occurred: %s:%v", err.detail, err.err)
		}
	}
	if f.sctpPort != -1 {
		goLog(p, "Started SCTP server")
		s.ready.Store(true)
	}
	for _, file := range []string{f.certFile, f.keyFile} {
		if f.certFile == "" {
			break
		}
		if _, err := p.FS().ReadFile(p.Abs(file)); err != nil {
			goFatal(p, "open %s: %v", file, goErrno(err))
		}
	}
	if err := p.Listen("tcp", f.httpPort, h); err != nil {
		goFatal(p, "%v", err)
	}
	for {
		if p.Sleep(idleWake) || !slices.Contains(p.Pending(), shell.SIGTERM) {
			continue
		}
		s.terminating.Store(true)
		if f.delayShutdown > 0 {
			goLog(p, "Sleeping %d seconds before terminating...", f.delayShutdown)
			sleepFull(p, time.Duration(f.delayShutdown)*time.Second)
		}
		return 0
	}
}

// udpError is a failure of upstream's startUDPServer: what it was doing and why.
type udpError struct {
	detail string
	err    error
}

// listenUDP starts the UDP server on each address (the namespace has one listener per
// port, which answers on all of them) and logs as upstream's goroutines do.
func (s *netexecServer) listenUDP(p *shell.Proc, addrs []string, port int) *udpError {
	var local []string
	if s.ns != nil {
		local = s.ns.IPs()
	}
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if a != "" && err == nil && !ip.IsUnspecified() && !ip.IsLoopback() && !slices.Contains(local, ip.String()) {
			hp := netip.AddrPortFrom(ip, uint16(port)).String()
			return &udpError{"failed to create listener for UDP address " + hp, fmt.Errorf("listen udp %s: bind: cannot assign requested address", hp)}
		}
	}
	if err := p.Listen("udp", port, simnetDatagram(s.udp)); err != nil {
		return &udpError{fmt.Sprintf("failed to create listener for UDP address :%d", port), err}
	}
	for _, a := range addrs {
		goLog(p, "Started UDP server on port %s %d", a, port)
	}
	s.ready.Store(true)
	return nil
}

// parseAddresses is upstream's: "" is every address; else valid IPs, deduplicated and
// sorted.
func parseAddresses(list string) ([]string, error) {
	if list == "" {
		return []string{""}, nil
	}
	var out []string
	for _, a := range strings.Split(list, ",") {
		if _, err := netip.ParseAddr(a); err != nil {
			return nil, fmt.Errorf("parseAddress: invalid address %s", a)
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out, nil
}

// routes is upstream's addRoutes.
func (s *netexecServer) routes() *mux {
	notSimulated := func(what string) handlerFunc {
		return func(*simnet.Request) *simnet.Response {
			return httpError(http.StatusNotImplemented, "netexec "+what+" is not simulated by minikubelet: "+
				map[string]string{
					"/exit":     "a request cannot end the server's process",
					"/shutdown": "a request cannot end the server's process",
					"/shell":    "a request cannot run commands in the container",
					"/upload":   "uploads are not kept",
				}[what])
		}
	}
	hostname := func(*simnet.Request) *simnet.Response { return text(s.hostname) }
	// logged logs what upstream's handler logs for the request, then answers it.
	logged := func(h handlerFunc, line func(req *simnet.Request) string) handlerFunc {
		return func(req *simnet.Request) *simnet.Response {
			s.logf(req, "%s", line(req))
			return h(req)
		}
	}
	fixed := func(line string) func(*simnet.Request) string { return func(*simnet.Request) string { return line } }
	return &mux{
		root: logged(s.now, fixed("GET /")),
		routes: map[string]handlerFunc{
			"/clientip": logged(func(req *simnet.Request) *simnet.Response { return text(s.peers.addr(req.From)) }, fixed("GET /clientip")),
			"/header": logged(header, func(req *simnet.Request) string {
				if key := formValue(req, "key"); key != "" {
					return "GET /header?key=" + key
				}
				return "GET /header"
			}),
			"/dial": logged(s.dial, func(req *simnet.Request) string {
				return fmt.Sprintf("GET /dial?host=%s&protocol=%s&port=%s&request=%s&tries=%s", formValue(req, "host"), formValue(req, "protocol"), formValue(req, "port"), formValue(req, "request"), formValue(req, "tries"))
			}),
			"/echo": logged(echo, func(req *simnet.Request) string {
				return fmt.Sprintf("GET /echo?msg=%s&code=%s", formValue(req, "msg"), formValue(req, "code"))
			}),
			"/exit":     notSimulated("/exit"),
			"/healthz":  logged(s.healthz, fixed("GET /healthz")),
			"/readyz":   logged(s.readyz, fixed("GET /readyz")),
			"/hostname": logged(hostname, fixed("GET /hostname")),
			"/redirect": logged(redirectHandler, func(req *simnet.Request) string {
				return fmt.Sprintf("%s /redirect?msg=%s&code=%s", req.Method, formValue(req, "location"), formValue(req, "code"))
			}),
			"/shell":    notSimulated("/shell"),
			"/upload":   notSimulated("/upload"),
			"/hostName": logged(hostname, fixed("GET /hostName")),
			"/shutdown": notSimulated("/shutdown"),
		},
	}
}

// now is "/": the request's time as Go prints the current time, with its monotonic reading.
func (s *netexecServer) now(req *simnet.Request) *simnet.Response {
	t := req.Now
	if t.IsZero() {
		t = s.started
	}
	m := since(req, s.started)
	return text(fmt.Sprintf("NOW: %s m=+%d.%09d", t.UTC().Format("2006-01-02 15:04:05.999999999 -0700 MST"), m/time.Second, m%time.Second))
}

func echo(req *simnet.Request) *simnet.Response {
	msg, codeString := formValue(req, "msg"), formValue(req, "code")
	resp := text(msg)
	if codeString != "" {
		code, err := strconv.Atoi(codeString)
		if err != nil {
			return text(fmt.Sprintf("argument 'code' must be an integer or empty, got %q\n", codeString))
		}
		if code < 100 || code > 999 {
			return nil // Go's server panics on such a code: the connection just closes
		}
		resp.Status = code
	}
	return resp
}

func header(req *simnet.Request) *simnet.Response {
	if key := formValue(req, "key"); key != "" {
		return text(req.Header.Get(key))
	}
	h := req.Header
	if h == nil {
		h = http.Header{}
	}
	data, _ := json.Marshal(h)
	return text(string(data))
}

func (s *netexecServer) healthz(*simnet.Request) *simnet.Response {
	if s.ready.Load() {
		return &simnet.Response{Status: http.StatusOK}
	}
	return &simnet.Response{Status: http.StatusPreconditionFailed}
}

func (s *netexecServer) readyz(*simnet.Request) *simnet.Response {
	switch {
	case s.terminating.Load():
		return &simnet.Response{Status: http.StatusServiceUnavailable, Body: []byte("shutting down")}
	case s.ready.Load():
		return text("ok")
	}
	return &simnet.Response{Status: http.StatusPreconditionFailed}
}

func redirectHandler(req *simnet.Request) *simnet.Response {
	location, codeString := formValue(req, "location"), formValue(req, "code")
	code := http.StatusFound
	if codeString != "" {
		var err error
		if code, err = strconv.Atoi(codeString); err != nil {
			return text(fmt.Sprintf("argument 'code' must be an integer or empty, got %q\n", codeString))
		}
	}
	return redirect(req, location, code)
}

// dial is "/dial": it sends request to host:port tries times from the pod, over HTTP or
// UDP, and reports what came back as upstream's JSON.
func (s *netexecServer) dial(req *simnet.Request) *simnet.Response {
	q := req.Query()
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	host, port, request, protocol, tryParam := get("host"), get("port"), get("request"), get("protocol"), get("tries")
	tries := 1
	if tryParam != "" {
		n, err := strconv.Atoi(tryParam)
		if err != nil {
			return httpError(http.StatusBadRequest, fmt.Sprintf("tries parameter is invalid. %v", err))
		}
		tries = n
	}
	if request == "" {
		return httpError(http.StatusBadRequest, "request parameter not specified. <nil>")
	}
	proto := strings.ToLower(protocol)
	switch proto {
	case "", "http":
		proto = "tcp"
	case "udp", "sctp":
	default:
		return httpError(http.StatusBadRequest, "unsupported protocol. "+protocol)
	}
	ip, portNum, err := s.resolveAddr(proto, host, port)
	if err != nil {
		return httpError(http.StatusBadRequest, fmt.Sprintf("host and/or port param are invalid. %v", err))
	}
	addr := joinHostPort(ip, portNum)
	var responses, errs []string
	var response string
	for i := 0; i < tries; i++ {
		var err error
		switch proto {
		case "tcp":
			response, err = s.dialHTTP(req.Now, request, ip, portNum, addr)
		case "udp":
			response, err = s.dialUDP(req.Now, request, ip, portNum, addr)
		default:
			response, err = "", fmt.Errorf("sctp dial failed. err:sctp is not simulated by minikubelet")
		}
		if err != nil {
			errs = append(errs, err.Error())
		} else {
			responses = append(responses, response)
		}
	}
	output := map[string][]string{}
	if len(response) > 0 {
		output["responses"] = responses
	}
	if len(errs) > 0 {
		output["errors"] = errs
	}
	data, _ := json.Marshal(output)
	return text(string(data))
}

// resolveAddr is net.ResolveTCPAddr (or UDP) from the pod: the host as netclients resolves
// names, an empty host being the pod itself.
func (s *netexecServer) resolveAddr(proto, host, port string) (string, int, error) {
	n := 0
	if port != "" {
		var err error
		if n, err = strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			if err == nil {
				return "", 0, fmt.Errorf("address %s: invalid port", joinHostPort(host, n))
			}
			return "", 0, fmt.Errorf("lookup %s/%s: unknown port", proto, port)
		}
	}
	if host == "" {
		return "127.0.0.1", n, nil
	}
	ip, ok := netclients.Resolve(s.fs, s.hostname, s.podIP, host)
	if !ok {
		return "", 0, fmt.Errorf("lookup %s on %s: no such host", host, nameserver(s.fs))
	}
	return ip, n, nil
}

// nameserver is where Go's resolver would have asked: the first nameserver of
// /etc/resolv.conf.
func nameserver(fsys *vfs.View) string {
	if data, err := fsys.ReadFile("/etc/resolv.conf"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "nameserver" {
				return joinHostPort(f[1], 53)
			}
		}
	}
	return "127.0.0.1:53"
}

// dialHTTP is upstream's: a GET of http://addr/request with Go's client (which follows
// up to 10 redirects), the body whatever the status.
func (s *netexecServer) dialHTTP(now time.Time, request, ip string, port int, addr string) (string, error) {
	u, err := url.Parse("http://" + addr + "/" + request)
	if err != nil {
		return "", fmt.Errorf("parse %q: %v", "http://"+addr+"/"+request, err)
	}
	for redirects := 0; ; redirects++ {
		inner := &simnet.Request{Method: http.MethodGet, Target: u.RequestURI(), Host: u.Host, Header: http.Header{}, Now: now}
		inner.Header.Set("User-Agent", "Go-http-client/1.1")
		inner.Header.Set("Accept-Encoding", "gzip")
		if s.network == nil {
			return "", fmt.Errorf("Get %q: dial tcp %s: connect: network is unreachable", u, addr)
		}
		resp, err := s.network.HTTP(s.ns, ip, port, inner)
		if err != nil {
			return "", fmt.Errorf("Get %q: %v", u, err)
		}
		loc := resp.Header.Get("Location")
		if loc == "" || resp.Status != 301 && resp.Status != 302 && resp.Status != 303 && resp.Status != 307 && resp.Status != 308 {
			return string(resp.Body), nil
		}
		ref, err := url.Parse(loc)
		if err != nil {
			return "", fmt.Errorf("Get %q: failed to parse Location header %q: %v", u, loc, err)
		}
		u = u.ResolveReference(ref)
		if redirects >= 9 {
			return "", fmt.Errorf("Get %q: stopped after 10 redirects", u)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return "", fmt.Errorf("Get %q: unsupported protocol scheme %q", u, u.Scheme)
		}
		port = 80
		if u.Scheme == "https" {
			port = 443 // TLS is not simulated: the same request, on HTTPS's port
		}
		if ps := u.Port(); ps != "" {
			port, _ = strconv.Atoi(ps)
		}
		var ok bool
		if ip, ok = netclients.Resolve(s.fs, s.hostname, s.podIP, u.Hostname()); !ok {
			return "", fmt.Errorf("Get %q: dial tcp: lookup %s on %s: no such host", u, u.Hostname(), nameserver(s.fs))
		}
		addr = joinHostPort(ip, port)
	}
}

// dialUDP is upstream's: one datagram, one read of the answer (which times out when none
// comes: the simulated network loses what nobody listens for).
func (s *netexecServer) dialUDP(now time.Time, request, ip string, port int, addr string) (string, error) {
	var reply []byte
	if s.network != nil {
		reply, _ = s.network.Exchange(s.ns, "udp", ip, port, []byte(request), now)
	}
	if reply == nil {
		local := s.peers.addr(s.podIP)
		return "", fmt.Errorf("reading from udp connection failed. err:'read udp %s->%s: i/o timeout'", local, addr)
	}
	if len(reply) == 0 {
		return "", fmt.Errorf("reading from udp connection failed. err:'<nil>'")
	}
	return string(reply), nil
}

// udp answers netexec's UDP commands.
func (s *netexecServer) udp(b []byte, _ time.Time) []byte {
	received := strings.ToLower(strings.TrimSpace(string(b)))
	switch {
	case received == "hostname":
		return []byte(s.hostname)
	case strings.HasPrefix(received, "echo "):
		_, msg, _ := strings.Cut(received, " ")
		return []byte(msg)
	case received == "clientip":
		// simnet's Datagram does not say who sent it: the address is the gateway's, as
		// for a request from the node.
		return []byte(s.peers.addr(""))
	}
	return nil
}

// simnetDatagram makes a Datagram function a handler of a UDP port (HTTP never reaches
// one).
type simnetDatagram func(b []byte, now time.Time) []byte

func (d simnetDatagram) HTTP(*simnet.Request) *simnet.Response   { return nil }
func (d simnetDatagram) Datagram(b []byte, now time.Time) []byte { return d(b, now) }

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
