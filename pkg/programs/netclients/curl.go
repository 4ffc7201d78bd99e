package netclients

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// curlVersion is the curl the images ship (Alpine's 8.5.0: agnhost's); it is what the
// User-Agent says.
const curlVersion = "8.5.0"

// curlVersionText is what curl -V prints.
const curlVersionText = "curl " + curlVersion + " (x86_64-alpine-linux-musl) libcurl/" + curlVersion + " OpenSSL/3.1.4 zlib/1.3.1\n" +
	"Protocols: http https\nFeatures: IPv6 Largefile SSL\n"

// curlHelp is what curl -h prints (its "important" category).
const curlHelp = `Usage: curl [options...] <url>
 -d, --data <data>          HTTP POST data
 -f, --fail                 Fail fast with no output on HTTP errors
 -h, --help <category>      Get help for commands
 -i, --include              Include protocol response headers in the output
 -o, --output <file>        Write to file instead of stdout
 -O, --remote-name          Write output to a file named as the remote file
 -s, --silent               Silent mode
 -T, --upload-file <file>   Transfer local FILE to destination
 -u, --user <user:password> Server user and password
 -A, --user-agent <name>    Send User-Agent <name> to server
 -v, --verbose              Make the operation more talkative
 -V, --version              Show version number and quit

This is not the full help, this menu is stripped into categories.
Use "--help category" to get an overview of all categories.
For all options use the manual or "--help all".
`

// curlTry is curl's hint after a command-line error.
const curlTry = "curl: try 'curl --help' or 'curl --manual' for more information\n"

// curlOpt describes one of curl's options: its long name, its short letter (0: none), and
// whether it takes an argument.
type curlOpt struct {
	long  string
	short byte
	arg   bool
}

// curlOpts are the options the simulated curl knows. The TLS, proxy, cookie and
// protocol-version ones are accepted and do nothing: TLS is not simulated, nor are proxies
// or cookies, and every server speaks HTTP/1.1.
var curlOpts = []curlOpt{
	{"silent", 's', false}, {"show-error", 'S', false}, {"fail", 'f', false}, {"fail-with-body", 0, false},
	{"output", 'o', true}, {"remote-name", 'O', false}, {"head", 'I', false}, {"include", 'i', false},
	{"write-out", 'w', true}, {"header", 'H', true}, {"request", 'X', true}, {"data", 'd', true},
	{"data-ascii", 0, true}, {"data-raw", 0, true}, {"data-binary", 0, true}, {"data-urlencode", 0, true},
	{"get", 'G', false}, {"max-time", 'm', true}, {"connect-timeout", 0, true}, {"insecure", 'k', false},
	{"globoff", 'g', false}, {"disable", 'q', false}, {"location", 'L', false}, {"location-trusted", 0, false},
	{"max-redirs", 0, true}, {"verbose", 'v', false}, {"user-agent", 'A', true}, {"user", 'u', true},
	{"referer", 'e', true}, {"ipv4", '4', false}, {"ipv6", '6', false}, {"http1.0", '0', false},
	{"http1.1", 0, false}, {"http2", 0, false}, {"http2-prior-knowledge", 0, false}, {"compressed", 0, false},
	{"retry", 0, true}, {"retry-delay", 0, true}, {"retry-max-time", 0, true}, {"retry-connrefused", 0, false},
	{"retry-all-errors", 0, false}, {"noproxy", 0, true}, {"proxy", 'x', true}, {"resolve", 0, true},
	{"cacert", 0, true}, {"capath", 0, true}, {"cert", 'E', true}, {"key", 0, true}, {"no-buffer", 'N', false},
	{"progress-bar", '#', false}, {"no-progress-meter", 0, false}, {"dump-header", 'D', true},
	{"cookie", 'b', true}, {"cookie-jar", 'c', true}, {"tlsv1", '1', false}, {"tlsv1.2", 0, false},
	{"tlsv1.3", 0, false}, {"version", 'V', false}, {"help", 'h', false}, {"url", 0, true},
	{"keepalive-time", 0, true}, {"no-keepalive", 0, false}, {"tcp-nodelay", 0, false}, {"path-as-is", 0, false},
	{"create-dirs", 0, false}, {"stderr", 0, true}, {"output-dir", 0, true}, {"remote-header-name", 'J', false},
	{"expect100-timeout", 0, true}, {"local-port", 0, true}, {"interface", 0, true}, {"unix-socket", 0, true},
}

// curlConfig is a parsed curl command line.
type curlConfig struct {
	silent, showError, fail, failWithBody bool
	head, include, verbose, location, get bool
	remoteName, noMeter                   bool
	outputs                               []string
	writeOut                              *string
	headers                               []string
	method                                string
	data                                  []string // the pieces -d and friends give, joined by '&'
	hasData                               bool
	binary                                bool // --data-binary: no newline is stripped from @file
	maxRedirs                             int
	agent                                 *string
	user, referer, dumpHeader             string
	resolve                               map[string]string // host:port -> address
	retry                                 int
	retryDelay                            time.Duration
	retryConnRefused, retryAll            bool
	urls                                  []string
}

// Curl is curl 8: it fetches each URL over the simulated network with curl's options,
// output, exit codes and error messages ("curl: (7) Failed to connect to 10.88.0.5 port
// 81 after 0 ms: Couldn't connect to server"), and its progress meter on stderr as it
// looks when the output is no terminal (unless -s). https is fetched as http (TLS is not
// simulated), and no transfer takes time: timeouts never expire and the meter shows a
// transfer of a millisecond.
func Curl(p *shell.Proc) int {
	cfg, status := parseCurl(p)
	if status >= 0 {
		return status
	}
	if len(cfg.urls) == 0 {
		io.WriteString(p.Stderr(), "curl: no URL specified\n"+curlTry)
		return 2
	}
	result := 0
	for i, u := range cfg.urls {
		out := ""
		if i < len(cfg.outputs) {
			out = cfg.outputs[i]
		}
		if code := (&curlTransfer{p: p, cfg: cfg, rawURL: u, output: out}).run(); code != 0 {
			result = code
		}
	}
	return result
}

// parseCurl reads curl's command line; status is -1 unless curl ends there.
func parseCurl(p *shell.Proc) (*curlConfig, int) {
	cfg := &curlConfig{maxRedirs: 50, resolve: map[string]string{}}
	args := p.Args()[1:]
	bad := func(format string, a ...any) (*curlConfig, int) {
		fmt.Fprintf(p.Stderr(), "curl: "+format+"\n"+curlTry, a...)
		return nil, 2
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var opt *curlOpt
		var val string
		negated := false
		name := a
		switch {
		case strings.HasPrefix(a, "--") && len(a) > 2:
			n := a[2:]
			for j := range curlOpts {
				if curlOpts[j].long == n {
					opt = &curlOpts[j]
				}
			}
			if opt == nil && strings.HasPrefix(n, "no-") {
				for j := range curlOpts {
					if curlOpts[j].long == n[3:] && !curlOpts[j].arg {
						opt, negated = &curlOpts[j], true
					}
				}
			}
			if opt == nil {
				return bad("option %s: is unknown", a)
			}
			if opt.arg {
				if i+1 >= len(args) {
					return bad("option %s: requires parameter", a)
				}
				i++
				val = args[i]
			}
			if err := cfg.set(p, opt, val, !negated); err != "" {
				return bad("option %s: %s", name, err)
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				opt = nil
				for k := range curlOpts {
					if curlOpts[k].short == a[j] {
						opt = &curlOpts[k]
					}
				}
				name = "-" + string(a[j])
				if opt == nil {
					return bad("option %s: is unknown", name)
				}
				if opt.arg {
					val = a[j+1:]
					if val == "" {
						if i+1 >= len(args) {
							return bad("option %s: requires parameter", name)
						}
						i++
						val = args[i]
					}
					j = len(a)
				}
				if err := cfg.set(p, opt, val, true); err != "" {
					return bad("option %s: %s", name, err)
				}
				if opt.long == "version" || opt.long == "help" {
					break
				}
			}
		default:
			cfg.urls = append(cfg.urls, a)
		}
		if opt != nil && opt.long == "version" {
			io.WriteString(p.Stdout(), curlVersionText)
			return nil, 0
		}
		if opt != nil && opt.long == "help" {
			io.WriteString(p.Stdout(), curlHelp)
			return nil, 0
		}
	}
	return cfg, -1
}

// set applies one option; the error is curl's reason ("expected a proper numerical
// parameter").
func (c *curlConfig) set(p *shell.Proc, o *curlOpt, val string, on bool) string {
	number := func() (float64, bool) {
		f, err := strconv.ParseFloat(val, 64)
		return f, err == nil && f >= 0
	}
	switch o.long {
	case "silent":
		c.silent = on
	case "show-error":
		c.showError = on
	case "fail":
		c.fail = on
	case "fail-with-body":
		c.fail, c.failWithBody = on, on
	case "output":
		c.outputs = append(c.outputs, val)
	case "remote-name":
		c.remoteName = on
	case "head":
		c.head = on
	case "include":
		c.include = on
	case "write-out":
		if strings.HasPrefix(val, "@") {
			data, err := readInput(p, val[1:])
			if err != nil {
				fmt.Fprintf(p.Stderr(), "Warning: Failed to read %s\n", val[1:])
			}
			val = string(data)
		}
		c.writeOut = &val
	case "header":
		c.headers = append(c.headers, val)
	case "request":
		c.method = val
	case "data", "data-ascii", "data-raw", "data-binary", "data-urlencode":
		d := val
		switch {
		case o.long == "data-urlencode":
			d = urlencodeData(p, val)
		case o.long != "data-raw" && strings.HasPrefix(val, "@"):
			data, err := readInput(p, val[1:])
			if err != nil {
				fmt.Fprintf(p.Stderr(), "Warning: Couldn't read data from file \"%s\", this makes an empty \nWarning: POST.\n", val[1:])
			}
			if o.long != "data-binary" {
				data = bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r"), nil), []byte("\n"), nil)
			}
			d = string(data)
		}
		c.data, c.hasData = append(c.data, d), true
	case "get":
		c.get = on
	case "max-time", "connect-timeout", "retry-max-time", "expect100-timeout", "keepalive-time":
		if _, ok := number(); !ok {
			return "expected a proper numerical parameter"
		}
	case "retry":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return "expected a proper numerical parameter"
		}
		c.retry = n
	case "retry-delay":
		f, ok := number()
		if !ok {
			return "expected a proper numerical parameter"
		}
		c.retryDelay = time.Duration(f * float64(time.Second))
	case "retry-connrefused":
		c.retryConnRefused = on
	case "retry-all-errors":
		c.retryAll = on
	case "location", "location-trusted":
		c.location = on
	case "max-redirs":
		n, err := strconv.Atoi(val)
		if err != nil {
			return "expected a proper numerical parameter"
		}
		c.maxRedirs = n
	case "verbose":
		c.verbose = on
	case "user-agent":
		c.agent = &val
	case "user":
		c.user = val
	case "referer":
		c.referer = val
	case "resolve":
		f := strings.SplitN(val, ":", 3)
		if len(f) == 3 {
			c.resolve[strings.ToLower(f[0])+":"+f[1]] = strings.Trim(f[2], "[]")
		}
	case "no-progress-meter", "progress-bar":
		c.noMeter = on
	case "dump-header":
		c.dumpHeader = val
	case "url":
		c.urls = append(c.urls, val)
	}
	return ""
}

// urlencodeData is one --data-urlencode piece: "content", "=content", "name=content",
// "@file" or "name@file", with the content percent-encoded.
func urlencodeData(p *shell.Proc, val string) string {
	name, content := "", val
	if i := strings.IndexAny(val, "=@"); i >= 0 {
		name, content = val[:i], val[i+1:]
		if val[i] == '@' {
			data, _ := readInput(p, content)
			content = string(data)
		}
	}
	enc := url.QueryEscape(content)
	if name == "" {
		return enc
	}
	return name + "=" + enc
}

// curlTransfer is one URL's transfer, retries and redirects included.
type curlTransfer struct {
	p      *shell.Proc
	cfg    *curlConfig
	rawURL string
	output string

	// what --write-out reports
	effective, ip, scheme, method string
	port, redirects, code         int
	resp                          *simnet.Response
	exit                          int
	errmsg                        string
	uploaded                      int
}

// curlURL is a URL as curl parses it.
type curlURL struct {
	scheme, host, path, userinfo string
	port                         int
	explicitPort                 bool
}

func (u curlURL) String() string {
	h := u.host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if u.explicitPort {
		h += ":" + strconv.Itoa(u.port)
	}
	return u.scheme + "://" + h + u.path
}

// hostHeader is the Host curl sends: the port only when it is not the scheme's.
func (u curlURL) hostHeader() string {
	h := u.host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if u.explicitPort && !(u.scheme == "http" && u.port == 80 || u.scheme == "https" && u.port == 443) {
		h += ":" + strconv.Itoa(u.port)
	}
	return h
}

// parseCurlURL parses raw as curl does (no scheme is http); the error is curl's exit code
// and message.
func parseCurlURL(raw string) (curlURL, int, string) {
	u := curlURL{scheme: "http"}
	rest := raw
	if s, after, ok := strings.Cut(raw, "://"); ok {
		u.scheme, rest = strings.ToLower(s), after
	}
	switch u.scheme {
	case "http":
		u.port = 80
	case "https":
		u.port = 443
	default:
		return u, 1, fmt.Sprintf("Protocol \"%s\" not supported", u.scheme)
	}
	rest, _, _ = strings.Cut(rest, "#")
	authority, p := rest, "/"
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, p = rest[:i], rest[i:]
		if p[0] == '?' {
			p = "/" + p
		}
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		u.userinfo, authority = authority[:i], authority[i+1:]
	}
	host, portStr := authority, ""
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return u, 3, "URL rejected: Bad IPv6 address"
		}
		host, portStr = host[1:end], strings.TrimPrefix(host[end+1:], ":")
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host, portStr = host[:i], host[i+1:]
	}
	if host == "" {
		return u, 3, "URL rejected: No host part in the URL"
	}
	if portStr != "" {
		n, err := strconv.Atoi(portStr)
		if err != nil || n < 0 || n > 65535 {
			return u, 3, "URL rejected: Port number was not a decimal number between 0 and 65535"
		}
		u.port, u.explicitPort = n, true
	}
	u.host, u.path = strings.ToLower(host), p
	return u, 0, ""
}

// showErrors reports whether curl prints its error messages.
func (t *curlTransfer) showErrors() bool { return !t.cfg.silent || t.cfg.showError }

// meter reports whether curl draws its progress meter.
func (t *curlTransfer) meter() bool { return !t.cfg.silent && !t.cfg.noMeter }

func (t *curlTransfer) verbosef(format string, a ...any) {
	if t.cfg.verbose {
		fmt.Fprintf(t.p.Stderr(), format, a...)
	}
}

// run does the transfer with its retries and returns curl's exit code for it.
func (t *curlTransfer) run() int {
	delay := t.cfg.retryDelay
	for left := t.cfg.retry; ; left-- {
		code, retryable := t.once()
		if !retryable || left <= 0 {
			t.finish(code)
			return code
		}
		wait := delay
		if wait == 0 {
			wait = time.Second << (t.cfg.retry - left)
		}
		if !t.cfg.silent {
			why := ": HTTP error"
			if code == 7 {
				why = ": connection refused"
			}
			if t.cfg.retryAll {
				why = " (retrying all errors)"
			}
			fmt.Fprintf(t.p.Stderr(), "Warning: Problem %s. Will retry in %d seconds. %d retries left.\n", why, int(wait/time.Second), left)
		}
		sleepFor(t.p, wait)
	}
}

// finish writes what ends a transfer: the error message, then --write-out.
func (t *curlTransfer) finish(code int) {
	t.exit = code
	if code != 0 && t.showErrors() {
		fmt.Fprintf(t.p.Stderr(), "curl: (%d) %s\n", code, t.errmsg)
	}
	if t.cfg.writeOut != nil {
		t.writeOut(*t.cfg.writeOut)
	}
}

// once does one attempt: connect, send, follow redirects, write the answer. retryable
// says whether --retry applies to how it ended.
func (t *curlTransfer) once() (code int, retryable bool) {
	cfg := t.cfg
	t.redirects, t.code, t.resp, t.uploaded = 0, 0, nil, 0
	u, code, msg := parseCurlURL(t.rawURL)
	if code != 0 {
		t.errmsg = msg
		return code, false
	}
	if u.path == "" {
		u.path = "/"
	}
	method := http.MethodGet
	var body []byte
	if cfg.hasData {
		joined := strings.Join(cfg.data, "&")
		if cfg.get {
			sep := "?"
			if strings.Contains(u.path, "?") {
				sep = "&"
			}
			u.path += sep + joined
		} else {
			method, body = http.MethodPost, []byte(joined)
		}
	}
	if cfg.head {
		method = http.MethodHead
	}
	if cfg.method != "" {
		method = cfg.method
	}
	if t.meter() {
		io.WriteString(t.p.Stderr(), "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"+
			"                                 Dload  Upload   Total   Spent    Left  Speed\n")
		io.WriteString(t.p.Stderr(), meterLine(0, 0, 0, 0))
	}
	for {
		t.effective, t.scheme, t.method, t.port = u.String(), strings.ToUpper(u.scheme), method, u.port
		ip, ok := cfg.resolve[u.host+":"+strconv.Itoa(u.port)]
		if !ok {
			ip, ok = resolve(t.p, u.host)
		}
		if !ok {
			t.endMeter(false)
			t.verbosef("* Could not resolve host: %s\n* Closing connection\n", u.host)
			t.errmsg = "Could not resolve host: " + u.host
			return 6, false
		}
		t.ip = ip
		req := t.request(u, method, body)
		t.verbosef("*   Trying %s...\n", joinHostPort(ip, u.port))
		resp, err := t.p.HTTP(ip, u.port, req)
		if err != nil {
			t.endMeter(false)
			switch f := failureOf(err); f {
			case reset:
				t.verbosef("* Connected to %s (%s) port %d\n", u.host, ip, u.port)
				t.verbosef("* Recv failure: Connection reset by peer\n* Closing connection\n")
				t.errmsg = "Recv failure: Connection reset by peer"
				return 56, cfg.retryAll
			default:
				t.errmsg = fmt.Sprintf("Failed to connect to %s port %d after 0 ms: Couldn't connect to server", u.host, u.port)
				t.verbosef("* connect to %s port %d failed: %s\n* %s\n* Closing connection\n", ip, u.port, f.strerror(), t.errmsg)
				return 7, cfg.retryAll || cfg.retryConnRefused && f == refused
			}
		}
		t.resp, t.code = resp, resp.Status
		t.uploaded += len(req.Body)
		t.verbosef("* Connected to %s (%s) port %d\n", u.host, ip, u.port)
		t.verbose(req, resp)
		loc := resp.Header.Get("Location")
		if cfg.location && loc != "" && resp.Status >= 300 && resp.Status < 400 {
			if t.redirects >= cfg.maxRedirs && cfg.maxRedirs >= 0 {
				t.endMeter(false)
				t.errmsg = fmt.Sprintf("Maximum (%d) redirects followed", cfg.maxRedirs)
				return 47, false
			}
			t.redirects++
			next, code, msg := parseCurlURL(resolveReference(u, loc))
			if code != 0 {
				t.endMeter(false)
				t.errmsg = msg
				return code, false
			}
			t.verbosef("* Issue another request to this URL: '%s'\n", next.String())
			if resp.Status == 301 || resp.Status == 302 || resp.Status == 303 {
				if method == http.MethodPost && cfg.method == "" || resp.Status == 303 && method != http.MethodHead {
					method, body = http.MethodGet, nil
				}
			}
			u = next
			continue
		}
		break
	}
	resp := t.resp
	failed := cfg.fail && resp.Status >= 400
	if failed && !cfg.failWithBody {
		t.endMeter(false)
		t.errmsg = fmt.Sprintf("The requested URL returned error: %d", resp.Status)
		return 22, retryableStatus(resp.Status) || cfg.retryAll
	}
	if code, msg := t.write(resp, method == http.MethodHead); code != 0 {
		t.endMeter(false)
		t.errmsg = msg
		return code, false
	}
	t.endMeter(true)
	if failed {
		t.errmsg = fmt.Sprintf("The requested URL returned error: %d", resp.Status)
		return 22, retryableStatus(resp.Status) || cfg.retryAll
	}
	return 0, retryableStatus(resp.Status) && cfg.retry > 0
}

// retryableStatus is the HTTP answers --retry retries (curl's "transient" errors).
func retryableStatus(s int) bool {
	return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504
}

// request builds what curl sends.
func (t *curlTransfer) request(u curlURL, method string, body []byte) *simnet.Request {
	cfg := t.cfg
	req := &simnet.Request{Method: method, Target: u.path, Host: u.hostHeader(), Header: http.Header{}, Body: body}
	agent := "curl/" + curlVersion
	if cfg.agent != nil {
		agent = *cfg.agent
	}
	if agent != "" {
		req.Header.Set("User-Agent", agent)
	}
	req.Header.Set("Accept", "*/*")
	user := cfg.user
	if user == "" && u.userinfo != "" {
		user, _ = url.PathUnescape(u.userinfo)
	}
	if user != "" {
		if !strings.Contains(user, ":") {
			user += ":"
		}
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user)))
	}
	if cfg.referer != "" {
		req.Header.Set("Referer", cfg.referer)
	}
	if len(body) > 0 || method == http.MethodPost && cfg.hasData {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	for _, h := range cfg.headers {
		k, v, ok := strings.Cut(h, ":")
		switch {
		case ok && strings.TrimSpace(v) == "":
			// "Name:" removes a header curl would send.
			if strings.EqualFold(strings.TrimSpace(k), "Host") {
				req.Host = ""
			}
			req.Header.Del(strings.TrimSpace(k))
		case ok:
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if strings.EqualFold(k, "Host") {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		case strings.HasSuffix(h, ";"):
			req.Header.Set(strings.TrimSuffix(h, ";"), "")
		}
	}
	return req
}

// verbose prints -v's account of a request and its answer.
func (t *curlTransfer) verbose(req *simnet.Request, resp *simnet.Response) {
	if !t.cfg.verbose {
		return
	}
	w := t.p.Stderr()
	raw := rawRequest(req)
	head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
	for _, l := range strings.Split(string(head), "\r\n") {
		fmt.Fprintf(w, "> %s\r\n", l)
	}
	io.WriteString(w, "> \r\n")
	fmt.Fprintf(w, "< %s\r\n", statusLine(resp.Status))
	for _, l := range headerLines(resp, t.p.Now()) {
		fmt.Fprintf(w, "< %s\r\n", l)
	}
	io.WriteString(w, "< \r\n")
}

// write delivers the answer: its headers (-i, -I, -D) and body to stdout or the output
// file.
func (t *curlTransfer) write(resp *simnet.Response, head bool) (int, string) {
	var hdr bytes.Buffer
	hdr.WriteString(statusLine(resp.Status) + "\r\n")
	for _, l := range headerLines(resp, t.p.Now()) {
		hdr.WriteString(l + "\r\n")
	}
	hdr.WriteString("\r\n")
	if t.cfg.dumpHeader != "" {
		if t.cfg.dumpHeader == "-" {
			t.p.Stdout().Write(hdr.Bytes())
		} else if err := createFile(t.p, t.cfg.dumpHeader, hdr.Bytes(), false); err != nil {
			fmt.Fprintf(t.p.Stderr(), "Warning: Failed to open %s\n", t.cfg.dumpHeader)
		}
	}
	var out []byte
	if t.cfg.include || head {
		out = append(out, hdr.Bytes()...)
	}
	if !head {
		out = append(out, resp.Body...)
		if t.cfg.verbose && len(resp.Body) > 0 && t.meter() {
			fmt.Fprintf(t.p.Stderr(), "{ [%d bytes data]\n", len(resp.Body))
		}
	}
	name := t.output
	if name == "" && t.cfg.remoteName {
		u, _, _ := parseCurlURL(t.rawURL)
		p, _, _ := strings.Cut(u.path, "?")
		if name = p[strings.LastIndexByte(p, '/')+1:]; name == "" {
			return 23, "Remote file name has no length"
		}
	}
	if name == "" || name == "-" {
		t.p.Stdout().Write(out)
		return 0, ""
	}
	if err := createFile(t.p, name, out, false); err != nil {
		fmt.Fprintf(t.p.Stderr(), "Warning: Failed to open the file %s: %v\n", name, err)
		return 23, "Failure writing output to destination"
	}
	return 0, ""
}

// endMeter draws the meter's last line: the finished transfer, or nothing more after the
// zero line of a failed one.
func (t *curlTransfer) endMeter(done bool) {
	if !t.meter() {
		return
	}
	w := t.p.Stderr()
	if done && t.resp != nil {
		got := int64(len(t.resp.Body))
		total := got
		if t.method == http.MethodHead {
			got = 0
			if n, err := strconv.ParseInt(t.resp.Header.Get("Content-Length"), 10, 64); err == nil {
				total = n
			}
		}
		io.WriteString(w, meterLine(total, got, int64(t.uploaded), got*1000))
	}
	io.WriteString(w, "\n")
}

// meterLine is one line of curl's progress meter (progress_meter in lib/progress.c);
// speed is bytes per second.
func meterLine(total, got, sent, speed int64) string {
	pct := func(part, whole int64) int64 {
		if whole <= 0 {
			return 0
		}
		return part * 100 / whole
	}
	const never = "--:--:--"
	return fmt.Sprintf("\r%3d %s  %3d %s  %3d %s  %s  %s %s %s %s %s",
		pct(got, total), max5(total), pct(got, total), max5(got), pct(sent, sent), max5(sent),
		max5(speed), max5(0), never, never, never, max5(speed))
}

// max5 is curl's max5data: a size in 5 characters ("  612", " 597k", "12.3M").
func max5(n int64) string {
	const k, m = 1024, 1024 * 1024
	switch {
	case n < 100000:
		return fmt.Sprintf("%5d", n)
	case n < 10000*k:
		return fmt.Sprintf("%4dk", n/k)
	case n < 100*m:
		return fmt.Sprintf("%2d.%01dM", n/m, (n%m)/(m/10))
	case n < 10000*m:
		return fmt.Sprintf("%4dM", n/m)
	}
	return fmt.Sprintf("%4dG", n/(1024*m))
}

// resolveReference is a Location made absolute against the URL that answered it.
func resolveReference(base curlURL, loc string) string {
	b, err := url.Parse(base.String())
	if err != nil {
		return loc
	}
	r, err := url.Parse(loc)
	if err != nil {
		return loc
	}
	return b.ResolveReference(r).String()
}

// writeOut prints --write-out's format with the transfer's variables.
func (t *curlTransfer) writeOut(format string) {
	var w io.Writer = t.p.Stdout()
	var b strings.Builder
	flush := func() {
		io.WriteString(w, b.String())
		b.Reset()
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '%' && i+1 < len(format) && format[i+1] == '%':
			b.WriteByte('%')
			i++
		case c == '%' && strings.HasPrefix(format[i+1:], "{"):
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				b.WriteString(format[i:])
				i = len(format)
				continue
			}
			name := format[i+2 : i+end]
			i += end
			switch name {
			case "stdout":
				flush()
				w = t.p.Stdout()
				continue
			case "stderr":
				flush()
				w = t.p.Stderr()
				continue
			case "onerror":
				if t.exit == 0 {
					flush()
					return
				}
				continue
			}
			v, ok := t.variable(name)
			if !ok {
				if !t.cfg.silent {
					flush()
					fmt.Fprintf(t.p.Stderr(), "Warning: unknown --write-out variable: '%s'\n", name)
				}
				continue
			}
			b.WriteString(v)
		case c == '\\' && i+1 < len(format):
			switch format[i+1] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte('\\')
				b.WriteByte(format[i+1])
			}
			i++
		default:
			b.WriteByte(c)
		}
	}
	flush()
}

// variable is one --write-out variable's value.
func (t *curlTransfer) variable(name string) (string, bool) {
	var size, hsize int
	ctype, redirect, version := "", "", "0"
	if t.resp != nil {
		size = len(t.resp.Body)
		if t.method == http.MethodHead {
			size = 0
		}
		hsize = len(statusLine(t.resp.Status)) + 2 + 2
		for _, l := range headerLines(t.resp, t.p.Now()) {
			hsize += len(l) + 2
		}
		ctype = t.resp.Header.Get("Content-Type")
		if !t.cfg.location && t.resp.Status >= 300 && t.resp.Status < 400 {
			redirect = t.resp.Header.Get("Location")
		}
		version = "1.1"
	}
	if h, ok := strings.CutPrefix(name, "header{"); ok {
		if t.resp == nil {
			return "", true
		}
		return t.resp.Header.Get(strings.TrimSuffix(h, "}")), true
	}
	switch name {
	case "http_code", "response_code":
		return fmt.Sprintf("%03d", t.code), true
	case "http_connect":
		return "000", true
	case "http_version":
		return version, true
	case "size_download":
		return strconv.Itoa(size), true
	case "size_header":
		return strconv.Itoa(hsize), true
	case "size_upload", "size_request":
		return strconv.Itoa(t.uploaded), true
	case "url_effective":
		return t.effective, true
	case "url":
		return t.rawURL, true
	case "content_type":
		return ctype, true
	case "num_redirects":
		return strconv.Itoa(t.redirects), true
	case "redirect_url":
		return redirect, true
	case "remote_ip":
		return t.ip, true
	case "remote_port":
		if t.ip == "" {
			return "", true
		}
		return strconv.Itoa(t.port), true
	case "local_ip":
		return t.p.PodIP(), true
	case "scheme":
		return t.scheme, true
	case "method":
		return t.method, true
	case "exitcode":
		return strconv.Itoa(t.exit), true
	case "errormsg":
		if t.exit == 0 {
			return "", true
		}
		return t.errmsg, true
	case "num_connects":
		if t.resp == nil {
			return "0", true
		}
		return strconv.Itoa(t.redirects + 1), true
	case "speed_download":
		return strconv.Itoa(size * 1000), true
	case "speed_upload":
		return strconv.Itoa(t.uploaded * 1000), true
	case "time_total", "time_connect", "time_namelookup", "time_appconnect", "time_pretransfer",
		"time_starttransfer", "time_redirect":
		return "0.000000", true
	}
	return "", false
}
