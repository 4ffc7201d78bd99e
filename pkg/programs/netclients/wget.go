package netclients

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// wgetUsage is busybox 1.36's wget usage line (with long options, TLS and timeouts).
const wgetUsage = "[-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR]\n" +
	"\t[--post-data STR | --post-file FILE] [-Y on/off]\n" +
	"\t[--no-check-certificate] [-P DIR] [-U AGENT] [-T SEC] URL..."

// wgetLong are busybox wget's long options; the private keys stand for the options that
// have no short form. The ignored ones are accepted and do nothing, as in busybox.
var wgetLong = []getopt.Long{
	{Name: "continue", Key: 'c'}, {Name: "quiet", Key: 'q'}, {Name: "server-response", Key: 'S'},
	{Name: "output-document=", Key: 'O'}, {Name: "output-file=", Key: 'o'},
	{Name: "directory-prefix=", Key: 'P'}, {Name: "proxy=", Key: 'Y'},
	{Name: "user-agent=", Key: 'U'}, {Name: "timeout=", Key: 'T'}, {Name: "tries=", Key: 't'},
	{Name: "header=", Key: 0xff}, {Name: "post-data=", Key: 0xfe}, {Name: "spider", Key: 0xfd},
	{Name: "no-check-certificate", Key: 0xfc}, {Name: "post-file=", Key: 0xfb},
	{Name: "passive-ftp", Key: 0xf0}, {Name: "no-cache", Key: 0xf0}, {Name: "no-verbose", Key: 0xf0},
	{Name: "no-clobber", Key: 0xf0}, {Name: "no-host-directories", Key: 0xf0},
	{Name: "no-parent", Key: 0xf0},
}

// wget is one run of busybox wget: its options and where its messages go.
type wget struct {
	p       *shell.Proc
	quiet   bool
	headers bool // -S
	spider  bool
	cont    bool
	outName string // -O, "" when guessed from the URL
	toLog   bool   // -o FILE: messages go to the file, and no progress bar is drawn
	dir     string // -P
	agent   string
	extra   []string // --header lines
	post    []byte
	isPost  bool
	stderr  io.Writer
	out     []byte // what -O FILE collects over the URLs (the file stays open across them)
}

// wgetExit unwinds a wget that dies (bb_error_msg_and_die).
type wgetExit struct{}

// Wget is busybox 1.36's wget: it fetches each URL over the simulated network, printing
// what busybox prints (unless -q) on stderr: "Connecting to HOST (IP:PORT)", "saving to
// 'FILE'", the progress bar as it looks when stderr is no terminal, "'FILE' saved".
// https is fetched as http (TLS is not simulated), proxies are not used, ftp is not
// simulated. -T is accepted: nothing on the simulated network hangs.
func Wget(p *shell.Proc) int {
	o, err := getopt.Parse(p.Args()[1:], "cqSO:o:P:Y:U:T:t:n::", wgetLong)
	if err != nil || len(o.Operands) == 0 {
		return usageError(p, "wget", wgetUsage, err)
	}
	if t, ok := o.Last('T'); ok {
		// -T is accepted and checked: nothing on the simulated network hangs.
		if _, err := strconv.ParseUint(t, 10, 32); err != nil {
			fmt.Fprintf(p.Stderr(), "wget: invalid number '%s'\n", t)
			return 1
		}
	}
	w := &wget{p: p, stderr: p.Stderr(), agent: "Wget",
		quiet: o.Has('q'), headers: o.Has('S'), spider: o.Has(0xfd), cont: o.Has('c')}
	w.outName, _ = o.Last('O')
	w.dir, _ = o.Last('P')
	if ua, ok := o.Last('U'); ok {
		w.agent = ua
	}
	w.extra = o.Vals(0xff)
	if d, ok := o.Last(0xfe); ok {
		w.post, w.isPost = []byte(d), true
	}
	status := 0
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(wgetExit); !ok {
					panic(r)
				}
				status = 1
			}
		}()
		if log, ok := o.Last('o'); ok && log != "-" {
			if err := createFile(p, log, nil, false); err != nil {
				w.die("can't open '%s': %v", log, err)
			}
			w.toLog = true
			w.stderr = &appendFile{p: p, name: log}
		}
		if f, ok := o.Last(0xfb); ok {
			data, err := readInput(p, f)
			if err != nil {
				w.die("can't open '%s': %v", f, err)
			}
			w.post, w.isPost = data, true
		}
		if w.outName == "-" {
			w.cont = false
		}
		for _, u := range o.Operands {
			w.download(u)
		}
	}()
	return status
}

func (w *wget) errorf(format string, a ...any) {
	fmt.Fprintf(w.stderr, "wget: "+format+"\n", a...)
}

func (w *wget) die(format string, a ...any) {
	w.errorf(format, a...)
	panic(wgetExit{})
}

func (w *wget) say(format string, a ...any) {
	if !w.quiet {
		fmt.Fprintf(w.stderr, format, a...)
	}
}

// wgetURL is a URL as busybox's parse_url splits it: host keeps its ":port", path has no
// leading slash.
type wgetURL struct {
	scheme string
	host   string
	port   int
	path   string
}

func (w *wget) parseURL(raw string) wgetURL {
	u := wgetURL{scheme: "http", port: 80}
	rest := raw
	if scheme, after, ok := strings.Cut(raw, "://"); ok {
		switch scheme {
		case "http":
		case "https":
			u.scheme, u.port = "https", 443
		case "ftp":
			u.scheme, u.port = "ftp", 21
		default:
			w.die("not an http or ftp url: %s", raw)
		}
		rest = after
	}
	// As busybox does, a '?' or '#' right after the host is dropped like a '/'.
	u.host = rest
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		u.host, u.path = rest[:end], rest[end+1:]
	}
	if i := strings.LastIndexByte(u.host, '@'); i >= 0 {
		u.host = u.host[i+1:]
	}
	return u
}

// hostPort splits a wget host ("10.0.0.5:8080", "[::1]:80", "name") into the address to
// resolve and the port, dying on a bad port as busybox's str2sockaddr does.
func (w *wget) hostPort(host string, port int) (string, int) {
	h := host
	var portStr string
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i >= 0 {
			h, portStr = h[1:i], strings.TrimPrefix(h[i+1:], ":")
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.Count(h, ":") == 1 {
		h, portStr = h[:i], h[i+1:]
	}
	if portStr != "" {
		n, err := strconv.ParseUint(portStr, 10, 32)
		if err != nil || n > 65535 {
			w.die("bad port '%s'", portStr)
		}
		port = int(n)
	}
	return h, port
}

// download fetches one URL, following redirects, as busybox's download_one_url.
func (w *wget) download(raw string) {
	target := w.parseURL(raw)
	fname := w.outName
	if fname == "" {
		fname = path.Base("/" + target.path)
		if strings.HasSuffix(target.path, "/") || target.path == "" {
			fname = "index.html"
		}
		if w.dir != "" {
			fname = strings.TrimSuffix(w.dir, "/") + "/" + fname
		}
	}
	curfile := path.Base(fname)
	if fname == "-" {
		curfile = "-"
	}
	server := target
	announce := true // a redirect to a path on the same server reuses its address
	for redirects := 16; ; {
		if server.scheme == "ftp" {
			w.die("ftp is not simulated (minikubelet)")
		}
		host, port := w.hostPort(server.host, server.port)
		ip, ok := resolve(w.p, host)
		if !ok {
			w.die("bad address '%s'", server.host)
		}
		if announce {
			w.say("Connecting to %s (%s)\n", server.host, joinHostPort(ip, port))
		}
		announce = true
		req := &simnet.Request{Method: http.MethodGet, Target: "/" + target.path, Host: target.host, Header: http.Header{}}
		if w.isPost {
			req.Method, req.Body = http.MethodPost, w.post
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set("User-Agent", w.agent)
		req.Header.Set("Connection", "close")
		for _, h := range w.extra {
			if k, v, ok := strings.Cut(h, ":"); ok {
				if strings.EqualFold(strings.TrimSpace(k), "Host") {
					req.Host = strings.TrimSpace(v)
					continue
				}
				req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
			}
		}
		resp, err := w.p.HTTP(ip, port, req)
		if err != nil {
			if f := failureOf(err); f != reset {
				w.die("can't connect to remote host (%s): %s", ip, f.strerror())
			}
			w.die("error getting response: %s", reset.strerror())
		}
		if w.headers { // -S shows the answer even with -q
			fmt.Fprintf(w.stderr, "  %s\n", statusLine(resp.Status))
			for _, l := range headerLines(resp, w.p.Now()) {
				fmt.Fprintf(w.stderr, "  %s\n", l)
			}
			fmt.Fprintf(w.stderr, "  \n")
		}
		switch s := resp.Status; {
		case s >= 200 && s <= 204:
		case s == 300 || s == 301 || s == 302 || s == 303 || s == 307 || s == 308:
			loc := resp.Header.Get("Location")
			if loc == "" {
				break // no Location: the body is what there is
			}
			redirects--
			if redirects == 0 {
				w.die("too many redirections")
			}
			if strings.HasPrefix(loc, "/") {
				target.path, announce = loc[1:], false
			} else {
				target = w.parseURL(loc)
				server = target
			}
			continue
		default:
			w.die("server returned error: %s", statusLine(s))
		}
		if w.spider {
			w.say("remote file exists\n")
			return
		}
		w.save(fname, curfile, resp.Body)
		return
	}
}

// save writes a downloaded body where it goes, with busybox's messages and progress bar.
func (w *wget) save(fname, curfile string, body []byte) {
	if fname == "-" {
		w.say("writing to stdout\n")
	} else {
		if w.outName == "" && w.cont {
			if _, err := w.p.FS().Stat(w.p.Abs(fname)); err == nil {
				// The simulated servers ignore Range: the download starts over.
				w.errorf("restart failed")
			}
		}
		excl := w.outName == "" && !w.cont // a guessed name never overwrites
		if err := createFile(w.p, fname, w.out, excl); err != nil {
			w.die("can't open '%s': %v", fname, err)
		}
		w.say("saving to '%s'\n", fname)
	}
	if !w.quiet && !w.toLog && len(body) > 0 {
		fmt.Fprintf(w.stderr, "%-20.20s %3d%% |%s| %s  0:00:00 ETA\n", curfile, 100, strings.Repeat("*", 32), smartSize(int64(len(body))))
	}
	if fname == "-" {
		w.p.Stdout().Write(body)
		w.say("written to stdout\n")
		return
	}
	if w.outName != "" {
		w.out = append(w.out, body...) // -O FILE stays open across the URLs
		body = w.out
	}
	if err := createFile(w.p, fname, body, false); err != nil {
		w.die("write error: %v", err)
	}
	w.say("'%s' saved\n", fname)
}

// smartSize is busybox's smart_ulltoa5: a size in 5 characters ("  615", "1234k", "92.1M").
func smartSize(n int64) string {
	const scale = " kMGTPEZY"
	if n <= 99999 {
		return fmt.Sprintf("%5d", n)
	}
	v, idx := uint64(n)*10, 0
	for {
		v /= 1024
		idx++
		if v < 100000 {
			break
		}
	}
	u, tenth := v/10, v%10
	if u >= 100 {
		return fmt.Sprintf("%4d%c", u, scale[idx])
	}
	return fmt.Sprintf("%2d.%d%c", u, tenth, scale[idx])
}

// appendFile is a log file messages are appended to (wget -o).
type appendFile struct {
	p    *shell.Proc
	name string
}

func (a *appendFile) Write(b []byte) (int, error) {
	id := a.p.Identity()
	if err := a.p.FS().WriteFile(a.p.Abs(a.name), b, 0o666&^a.p.Umask(), true, id.UID, id.GID); err != nil {
		return 0, err
	}
	return len(b), nil
}

// readInput reads a file named on the command line, "-" being stdin.
func readInput(p *shell.Proc, name string) ([]byte, error) {
	if name == "-" {
		return p.ReadAll()
	}
	info, err := p.FS().Stat(p.Abs(name))
	if err == nil && !access(p.Identity(), info, 4) {
		return nil, fmt.Errorf("Permission denied")
	}
	data, err := p.FS().ReadFile(p.Abs(name))
	if err != nil {
		return nil, err
	}
	return bytes.Clone(data), nil
}
