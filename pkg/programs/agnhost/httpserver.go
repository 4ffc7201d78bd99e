package agnhost

import (
	"fmt"
	"html"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// agnhost's servers are Go net/http servers. Their simulated handlers run synchronously in
// the caller's goroutine (a prober, another pod's process): they never block, never touch
// the process (its output included: the per-request log lines upstream prints are left
// out), read only what was captured when the server started or is guarded, and take the
// time from the request.

// handlerFunc answers one request; nil closes the connection without an answer.
type handlerFunc func(req *simnet.Request) *simnet.Response

// mux is a Go server's http.ServeMux: handlers by exact path, root (the "/" pattern) for
// any other; a path that is not clean is redirected to its clean form, an unknown one is
// "404 page not found". It adds what Go's server adds to every answer: Date,
// Content-Length and a sniffed Content-Type.
type mux struct {
	routes map[string]handlerFunc
	root   handlerFunc
}

var _ simnet.Handler = (*mux)(nil)

// HTTP implements simnet.Handler.
func (m *mux) HTTP(req *simnet.Request) *simnet.Response {
	resp := m.route(req)
	if resp == nil {
		return nil
	}
	return finish(req, resp)
}

func (m *mux) route(req *simnet.Request) *simnet.Response {
	p := req.Path()
	if clean := cleanPath(p); clean != p {
		loc := clean
		if _, q, ok := strings.Cut(req.Target, "?"); ok {
			loc += "?" + q
		}
		return redirect(req, loc, http.StatusMovedPermanently)
	}
	if h, ok := m.routes[p]; ok {
		return h(req)
	}
	if m.root != nil {
		return m.root(req)
	}
	return httpError(http.StatusNotFound, "404 page not found")
}

// Datagram implements simnet.Handler: bytes that are no HTTP request get Go's answer to a
// malformed one; a connection that sends nothing is closed without one.
func (m *mux) Datagram(b []byte, _ time.Time) []byte {
	if len(b) == 0 {
		return nil
	}
	return []byte("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request")
}

// finish adds what Go's server adds to an answer.
func finish(req *simnet.Request, resp *simnet.Response) *simnet.Response {
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	if resp.Status == 0 {
		resp.Status = http.StatusOK
	}
	h := resp.Header
	if _, ok := h["Content-Type"]; !ok && len(resp.Body) > 0 {
		h.Set("Content-Type", http.DetectContentType(resp.Body))
	}
	if !req.Now.IsZero() && h.Get("Date") == "" {
		h.Set("Date", req.Now.UTC().Format(http.TimeFormat))
	}
	if h.Get("Content-Length") == "" {
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	if req.Method == http.MethodHead {
		resp.Body = nil
	}
	return resp
}

// text is a 200 answer with body.
func text(body string) *simnet.Response {
	return &simnet.Response{Status: http.StatusOK, Header: http.Header{}, Body: []byte(body)}
}

// httpError is Go's http.Error: the message and a newline, as plain text.
func httpError(status int, msg string) *simnet.Response {
	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	return &simnet.Response{Status: status, Header: h, Body: []byte(msg + "\n")}
}

// redirect is Go's http.Redirect: a relative location is made absolute against the
// request's path, and a GET gets a small HTML body.
func redirect(req *simnet.Request, loc string, code int) *simnet.Response {
	if u, err := url.Parse(loc); err == nil && u.Scheme == "" && u.Host == "" {
		old := req.Path()
		if old == "" {
			old = "/"
		}
		if loc == "" || loc[0] != '/' {
			dir, _ := path.Split(old)
			loc = dir + loc
		}
		query := ""
		if i := strings.IndexByte(loc, '?'); i >= 0 {
			loc, query = loc[:i], loc[i:]
		}
		trailing := strings.HasSuffix(loc, "/")
		loc = path.Clean(loc)
		if trailing && !strings.HasSuffix(loc, "/") {
			loc += "/"
		}
		loc += query
	}
	h := http.Header{}
	h.Set("Location", loc)
	var body []byte
	if req.Method == "" || req.Method == http.MethodGet || req.Method == http.MethodHead {
		h.Set("Content-Type", "text/html; charset=utf-8")
		body = []byte("<a href=\"" + html.EscapeString(loc) + "\">" + http.StatusText(code) + "</a>.\n\n")
	}
	return &simnet.Response{Status: code, Header: h, Body: body}
}

// cleanPath is Go's ServeMux cleanPath: the canonical path, a trailing slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			return p
		}
		np += "/"
	}
	return np
}

// formValue is Go's Request.FormValue: a urlencoded body's value first, then the query's.
func formValue(req *simnet.Request, key string) string {
	if req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
		if ct := req.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
			if v, err := url.ParseQuery(string(req.Body)); err == nil && len(v[key]) > 0 {
				return v[key][0]
			}
		}
	}
	if v := req.Query()[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// peers hands out the source ports of the connections a server sees: the simulated
// network has no ports of its own on the client side, so they are made up, from Linux's
// ephemeral range.
type peers struct {
	gateway string // who the node's own requests come from
	next    atomic.Uint32
}

func newPeers(podIP string) *peers {
	return &peers{gateway: gatewayOf(podIP)}
}

// addr is a request's remote address as Go's server gives it (RemoteAddr: "ip:port"). A
// request from the node (a probe: no From) comes from the pod network's gateway, as a
// connection from the host to a bridged pod does.
func (ps *peers) addr(from string) string {
	if from == "" {
		from = ps.gateway
	}
	port := 32768 + int(ps.next.Add(1)-1)%28232
	ap, err := netip.ParseAddr(from)
	if err != nil {
		return from + ":" + strconv.Itoa(port)
	}
	return netip.AddrPortFrom(ap, uint16(port)).String()
}

// gatewayOf is the gateway of a bridged pod network: the first address of the pod's /24
// (or /64).
func gatewayOf(podIP string) string {
	a, err := netip.ParseAddr(podIP)
	if err != nil {
		return "127.0.0.1"
	}
	b := a.AsSlice()
	if a.Is4() {
		b[3] = 1
	} else {
		clear(b[8:])
		b[15] = 1
	}
	g, _ := netip.AddrFromSlice(b)
	return g.String()
}

// goLog prints a line as Go's standard logger does: "2006/01/02 15:04:05 message".
func goLog(p *shell.Proc, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	fmt.Fprintf(p.Stderr(), "%s %s", p.Now().UTC().Format("2006/01/02 15:04:05"), msg)
}

// goFatal is log.Fatalf: the line, then exit 1.
func goFatal(p *shell.Proc, format string, a ...any) {
	goLog(p, format, a...)
	p.Exit(1)
}

// untilKilled waits until a signal the program does not handle ends it (a Go server
// without signal.Notify dies of SIGTERM: 143).
func untilKilled(p *shell.Proc) {
	for {
		p.Sleep(idleWake)
	}
}

// sleepFull sleeps d even if trapped signals wake the process meanwhile.
func sleepFull(p *shell.Proc, d time.Duration) {
	end := p.Now().Add(d)
	for p.Now().Before(end) {
		p.Sleep(end.Sub(p.Now()))
	}
}

// since is time.Since at the request's instant.
func since(req *simnet.Request, started time.Time) time.Duration {
	if req.Now.IsZero() {
		return 0
	}
	return req.Now.Sub(started)
}
