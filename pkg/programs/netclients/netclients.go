package netclients

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Lookup returns the program an executable named name runs (the name its vfs file's
// Program carries), or nil.
func Lookup(name string) shell.Program {
	switch name {
	case "wget":
		return Wget
	case "nc", "netcat":
		return NC
	case "nc.openbsd":
		return NCOpenBSD
	case "curl":
		return Curl
	}
	return nil
}

// Names lists the programs of this package, sorted.
func Names() []string { return []string{"curl", "nc", "nc.openbsd", "wget"} }

// Applets lists the programs of this package that are busybox applets: an image that has
// busybox's applets has these too, where busybox installs them.
func Applets() []string { return []string{"nc", "wget"} }

// banner is the first line busybox prints before a usage text (as package programs'
// applets print it).
const banner = "BusyBox v1.36.1 (simulated) multi-call binary.\n"

// Resolve is the address host has for a container whose filesystem is fsys, whose host
// name is hostname and whose pod IP is podIP, as its C library finds it: an IP address
// stands for itself; a name is looked up in /etc/hosts (an IPv4 address first, as busybox
// prefers), and "localhost" and the host name resolve even without it (a pod's /etc/hosts
// names both). Any other name (a Service's) is the cluster DNS's (ResolveDNS). Safe for
// concurrent use (a vfs.View is), so servers' handlers call it too.
func Resolve(fsys *vfs.View, hostname, podIP, host string) (string, bool) {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(host); err == nil {
		return a.String(), true
	}
	if host == "" {
		return "", false
	}
	if fsys != nil {
		if data, err := fsys.ReadFile("/etc/hosts"); err == nil {
			var found []string
			for _, line := range strings.Split(string(data), "\n") {
				line, _, _ = strings.Cut(line, "#")
				f := strings.Fields(line)
				if len(f) < 2 {
					continue
				}
				if _, err := netip.ParseAddr(f[0]); err == nil && slices.ContainsFunc(f[1:], func(n string) bool { return strings.EqualFold(n, host) }) {
					found = append(found, f[0])
				}
			}
			for _, ip := range found {
				if !strings.Contains(ip, ":") {
					return ip, true
				}
			}
			if len(found) > 0 {
				return found[0], true
			}
		}
	}
	switch {
	case strings.EqualFold(host, "localhost"):
		return "127.0.0.1", true
	case hostname != "" && strings.EqualFold(host, hostname) && podIP != "":
		return podIP, true
	}
	return "", false
}

// resolve is Resolve for p's container, then the cluster DNS its /etc/resolv.conf names
// (a Service's name).
func resolve(p *shell.Proc, host string) (string, bool) {
	if ip, ok := Resolve(p.FS(), p.Hostname(), p.PodIP(), host); ok {
		return ip, true
	}
	return ResolveDNS(p, host)
}

// ResolveDNS resolves host through the cluster DNS named in p's /etc/resolv.conf (its
// search list, then host itself).
func ResolveDNS(p *shell.Proc, host string) (string, bool) {
	return lookupDNS(p, strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}

// joinHostPort is ip:port, an IPv6 address in brackets.
func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// failure is why a connection failed, as the kernel's errno.
type failure int

const (
	refused failure = iota + 1
	noRoute
	unreachable // the container has no network at all
	reset
)

// failureOf classifies an error of the simulated network.
func failureOf(err error) failure {
	switch {
	case errors.Is(err, simnet.ErrRefused):
		return refused
	case errors.Is(err, simnet.ErrNoRoute):
		return noRoute
	case strings.Contains(err.Error(), "network is unreachable"):
		return unreachable
	}
	return reset
}

// strerror is how C's strerror words f.
func (f failure) strerror() string {
	switch f {
	case refused:
		return "Connection refused"
	case noRoute:
		return "No route to host"
	case unreachable:
		return "Network is unreachable"
	}
	return "Connection reset by peer"
}

// statusLine is an HTTP/1.1 server's status line for status.
func statusLine(status int) string {
	return fmt.Sprintf("HTTP/1.1 %d %s", status, http.StatusText(status))
}

// headerLines are resp's header fields as a server sends them: sorted by name, with the
// Date and Content-Length every simulated server's real counterpart sends when it does not
// say.
func headerLines(resp *simnet.Response, now time.Time) []string {
	h := resp.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if h.Get("Date") == "" {
		h.Set("Date", now.UTC().Format(http.TimeFormat))
	}
	if h.Get("Content-Length") == "" && h.Get("Transfer-Encoding") == "" {
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var lines []string
	for _, k := range keys {
		for _, v := range h[k] {
			lines = append(lines, k+": "+v)
		}
	}
	return lines
}

// rawResponse is resp as the bytes an HTTP/1.1 server writes on its connection.
func rawResponse(resp *simnet.Response, now time.Time) []byte {
	var b bytes.Buffer
	b.WriteString(statusLine(resp.Status) + "\r\n")
	for _, l := range headerLines(resp, now) {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(resp.Body)
	return b.Bytes()
}

// parseRawRequest reads b as an HTTP/1.x request (what nc users pipe in: "GET /
// HTTP/1.0\r\n\r\n"), or false when it is not one: the simulated servers answer HTTP
// through their HTTP handler, other bytes through Datagram. net/http reads it, as a Go
// server would, so what a server refuses (a request cut off before its blank line, a
// malformed header) is no request; the body is what Content-Length or chunked encoding
// says, nothing when neither is given.
func parseRawRequest(b []byte) (*simnet.Request, bool) {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
	if err != nil || r.ProtoMajor != 1 {
		return nil, false
	}
	body, _ := io.ReadAll(r.Body) // what arrived of a body cut short
	req := &simnet.Request{Method: r.Method, Target: r.RequestURI, Host: r.Host, Header: r.Header, Body: body}
	if r.URL.IsAbs() { // an absolute target (to a proxy): its host is the request's
		req.Target = r.URL.RequestURI()
	}
	return req, true
}

// parseRawResponse reads b as an HTTP/1.x response ("HTTP/1.1 200 OK\r\n\r\nhello", what
// `nc -l` users pipe in), or false, by net/http as a client reads it: the body is what
// Content-Length says, else all that follows.
func parseRawResponse(b []byte) (*simnet.Response, bool) {
	r, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
	if err != nil || r.ProtoMajor != 1 {
		return nil, false
	}
	body, _ := io.ReadAll(r.Body) // what arrived of a body cut short
	return &simnet.Response{Status: r.StatusCode, Header: r.Header, Body: body}, true
}

// rawRequest is req as the bytes an HTTP/1.1 client writes (what `nc -l` prints).
func rawRequest(req *simnet.Request) []byte {
	var b bytes.Buffer
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, req.Target)
	if req.Host != "" {
		fmt.Fprintf(&b, "Host: %s\r\n", req.Host)
	}
	keys := make([]string, 0, len(req.Header))
	for k := range req.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	b.Write(req.Body)
	return b.Bytes()
}

// createFile writes data to name (relative to p's directory) as open(O_WRONLY|O_CREAT|
// O_TRUNC) does for p's user, failing with EEXIST when excl and it exists: the kernel's
// permission checks are made here, the filesystem makes none.
func createFile(p *shell.Proc, name string, data []byte, excl bool) error {
	fsys, file, id := p.FS(), p.Abs(name), p.Identity()
	info, err := fsys.Stat(file)
	switch {
	case err == nil && excl:
		return vfs.EEXIST
	case err == nil && info.Mode.IsDir():
		return vfs.EISDIR
	case err == nil && !access(id, info, 2):
		return vfs.EACCES
	case err != nil && vfs.ErrnoOf(err) != vfs.ENOENT:
		return err
	case err != nil:
		dir, derr := fsys.Stat(path.Dir(file))
		if derr != nil {
			return derr
		}
		if !dir.Mode.IsDir() {
			return vfs.ENOTDIR
		}
		if !access(id, dir, 3) {
			return vfs.EACCES
		}
	}
	gid := id.GID
	if err != nil {
		if dir, derr := fsys.Stat(path.Dir(file)); derr == nil && dir.Mode&fs.ModeSetgid != 0 {
			gid = dir.GID // a setgid directory's group, as the kernel gives it
		}
	}
	return fsys.WriteFile(file, data, 0o666&^p.Umask(), false, id.UID, gid)
}

// access is id.May, by the name the callers here use.
func access(id shell.Identity, info vfs.Info, want uint32) bool { return id.May(info, want) }

// idle waits until the process is killed, as a client blocked on a network that never
// answers: a finite sleep at a time, so that the simulation is never asked to jump to the
// far future.
func idle(p *shell.Proc) {
	for {
		p.Sleep(24 * time.Hour)
	}
}

// sleepFor sleeps d in full, even when a trapped signal wakes the process early.
func sleepFor(p *shell.Proc, d time.Duration) {
	end := p.Now().Add(d)
	for p.Now().Before(end) {
		p.Sleep(end.Sub(p.Now()))
	}
}
