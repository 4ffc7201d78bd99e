package servers

import (
	"fmt"
	"html"

	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Lookup returns the server program name runs, or nil.
func Lookup(name string) shell.Program {
	switch name {
	case "nginx":
		return Nginx
	case "httpd":
		return Httpd
	case "redis-server":
		return Redis
	case "pause":
		return Pause
	case "nnp":
		return NNP
	}
	return nil
}

// Names lists the programs of this package.
func Names() []string { return []string{"httpd", "nginx", "nnp", "pause", "redis-server"} }

// NNP is the nonewprivs test image's setuid-root nnp: it prints its effective user, which
// is root unless no_new_privs (allowPrivilegeEscalation: false) kept the caller's.
func NNP(p *shell.Proc) int {
	fmt.Fprintf(p.Stdout(), "Effective uid: %d\n", p.Identity().EUID)
	return 0
}

// Pause is the pause image's /pause: it waits until SIGINT or SIGTERM, says so, and
// exits 0, as pause.c's handler does.
func Pause(p *shell.Proc) int {
	p.Trap(shell.SIGINT, true)
	p.Trap(shell.SIGTERM, true)
	return pauseUntilSignal(p)
}

// pauseUntilSignal is pause's wait, as a continuation so that a waiting pause parks.
func pauseUntilSignal(p *shell.Proc) int {
	return p.SleepThen(shell.Forever, func(p *shell.Proc, slept bool) int {
		if !slept {
			for _, sig := range p.Pending() {
				name := "Interrupt"
				if sig == shell.SIGTERM {
					name = "Terminated"
				}
				fmt.Fprintf(p.Stderr(), "Shutting down, got signal: %s\n", name)
				return 0
			}
		}
		return pauseUntilSignal(p)
	})
}

// untilStopped waits for one of the signals a server stops on and returns its exit
// status: 0, as a server that shuts down gracefully.
func untilStopped(p *shell.Proc, sigs ...int) int {
	for _, s := range sigs {
		p.Trap(s, true)
	}
	return waitForStop(p)
}

// waitForStop is a server's wait, as a continuation so that a waiting server parks (its
// handlers answer in their callers' goroutines).
func waitForStop(p *shell.Proc) int {
	return p.SleepThen(shell.Forever, func(p *shell.Proc, slept bool) int {
		if !slept && len(p.Pending()) > 0 {
			return 0
		}
		return waitForStop(p)
	})
}

// StaticFiles serves the files under Root of a filesystem, as nginx and httpd serve
// their document roots: a directory's index.html, 404 for what is not there.
type StaticFiles struct {
	FS       *vfs.View
	Root     string
	Index    string
	NotFound func(path string) []byte
	Server   string
}

// HTTP implements simnet.Handler.
func (s StaticFiles) HTTP(req *simnet.Request) *simnet.Response {
	h := http.Header{}
	if s.Server != "" {
		h.Set("Server", s.Server)
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead && req.Method != "" {
		return &simnet.Response{Status: http.StatusMethodNotAllowed, Header: h}
	}
	p := path.Clean("/" + req.Path())
	file := path.Join(s.Root, p)
	info, err := s.FS.Stat(file)
	if err == nil && info.Mode.IsDir() {
		file = path.Join(file, s.Index)
		info, err = s.FS.Stat(file)
	}
	if err != nil || !info.Mode.IsRegular() {
		h.Set("Content-Type", "text/html")
		return &simnet.Response{Status: http.StatusNotFound, Header: h, Body: s.NotFound(p)}
	}
	if info.Mode.Perm()&0o004 == 0 {
		h.Set("Content-Type", "text/html")
		return &simnet.Response{Status: http.StatusForbidden, Header: h, Body: []byte("<html><body><h1>403 Forbidden</h1></body></html>\n")}
	}
	body, err := s.FS.ReadFile(file)
	if err != nil {
		return &simnet.Response{Status: http.StatusInternalServerError, Header: h}
	}
	h.Set("Content-Type", contentType(file))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if req.Method == http.MethodHead {
		body = nil
	}
	return &simnet.Response{Status: http.StatusOK, Header: h, Body: body}
}

// Datagram implements simnet.Handler: raw bytes to an HTTP server get no answer.
func (StaticFiles) Datagram([]byte, time.Time) []byte { return nil }

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html", ".htm":
		return "text/html"
	case ".css":
		return "text/css"
	case ".js":
		return "application/javascript"
	case ".json":
		return "application/json"
	case ".txt":
		return "text/plain"
	}
	return "application/octet-stream"
}

var (
	listenRe = regexp.MustCompile(`(?m)^\s*listen\s+(?:[^\s;:]+:)?(\d+)`)
	rootRe   = regexp.MustCompile(`(?m)^\s*root\s+([^\s;]+)\s*;`)
)

// Nginx is nginx: it serves the root of its server block (by default
// /usr/share/nginx/html on port 80, as the image's /etc/nginx/conf.d/default.conf says)
// until SIGTERM or SIGQUIT. Its configuration is read for listen and root only.
func Nginx(p *shell.Proc) int {
	version := "nginx/" + nginxVersion(p)
	args := p.Args()[1:]
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-v":
			fmt.Fprintln(p.Stderr(), "nginx version: "+version)
			return 0
		case "-t":
			fmt.Fprintln(p.Stderr(), "nginx: the configuration file /etc/nginx/nginx.conf syntax is ok")
			fmt.Fprintln(p.Stderr(), "nginx: configuration file /etc/nginx/nginx.conf test is successful")
			return 0
		case "-g", "-c", "-p", "-s", "-e":
			i++
		}
	}
	port, root := 80, "/usr/share/nginx/html"
	if conf, err := p.FS().ReadFile("/etc/nginx/conf.d/default.conf"); err == nil {
		if m := listenRe.FindSubmatch(conf); m != nil {
			port, _ = strconv.Atoi(string(m[1]))
		}
		if m := rootRe.FindSubmatch(conf); m != nil {
			root = string(m[1])
		}
	}
	// The 404 page is made when asked for: kept, it was 150 bytes of each of 10,000 servers.
	h := StaticFiles{FS: p.FS(), Root: root, Index: "index.html", Server: version, NotFound: func(string) []byte {
		return []byte("<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1></center>\r\n<hr><center>" + version + "</center>\r\n</body>\r\n</html>\r\n")
	}}
	if err := p.Listen("tcp", port, h); err != nil {
		fmt.Fprintf(p.Stderr(), "%s [emerg] 1#1: bind() to 0.0.0.0:%d failed (98: Address already in use)\n", logTime(p), port)
		return 1
	}
	return untilStopped(p, shell.SIGTERM, 3) // SIGQUIT: the image's STOPSIGNAL
}

// nginxVersion is the version the image's nginx was built as. The official images and
// their e2e mirrors set NGINX_VERSION to the package version they install, so the image's
// environment says it; without one it is the catalogue's nginx image's.
func nginxVersion(p *shell.Proc) string {
	if v := p.Getenv("NGINX_VERSION"); v != "" {
		return v
	}
	return defaultNginxVersion
}

const defaultNginxVersion = "1.25.4"

func logTime(p *shell.Proc) string { return p.Now().UTC().Format("2006/01/02 15:04:05") }

// Httpd is Apache httpd in the foreground: it serves /usr/local/apache2/htdocs on port 80
// (Listen and DocumentRoot of /usr/local/apache2/conf/httpd.conf when present).
func Httpd(p *shell.Proc) int {
	port, root := 80, "/usr/local/apache2/htdocs"
	if conf, err := p.FS().ReadFile("/usr/local/apache2/conf/httpd.conf"); err == nil {
		if m := regexp.MustCompile(`(?m)^\s*Listen\s+(?:[^\s:]+:)?(\d+)`).FindSubmatch(conf); m != nil {
			port, _ = strconv.Atoi(string(m[1]))
		}
		if m := regexp.MustCompile(`(?m)^\s*DocumentRoot\s+"?([^"\s]+)"?`).FindSubmatch(conf); m != nil {
			root = string(m[1])
		}
	}
	ip := p.PodIP()
	for i := 0; i < 2; i++ {
		fmt.Fprintf(p.Stderr(), "AH00558: httpd: Could not reliably determine the server's fully qualified domain name, using %s. Set the 'ServerName' directive globally to suppress this message\n", ip)
	}
	h := StaticFiles{FS: p.FS(), Root: root, Index: "index.html", Server: "Apache/2.4.58 (Unix)", NotFound: func(path string) []byte {
		return []byte("<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>404 Not Found</title>\n</head><body>\n<h1>Not Found</h1>\n<p>The requested URL " + html.EscapeString(path) + " was not found on this server.</p>\n</body></html>\n")
	}}
	if err := p.Listen("tcp", port, h); err != nil {
		fmt.Fprintf(p.Stderr(), "(98)Address already in use: AH00072: make_sock: could not bind to address 0.0.0.0:%d\nno listening sockets available, shutting down\n", port)
		return 1
	}
	fmt.Fprintf(p.Stderr(), "[%s] [mpm_event:notice] [pid 1:tid 1] AH00489: Apache/2.4.58 (Unix) configured -- resuming normal operations\n", p.Now().UTC().Format("Mon Jan 02 15:04:05.000000 2006"))
	fmt.Fprintf(p.Stderr(), "[%s] [core:notice] [pid 1:tid 1] AH00094: Command line: 'httpd -D FOREGROUND'\n", p.Now().UTC().Format("Mon Jan 02 15:04:05.000000 2006"))
	return untilStopped(p, shell.SIGTERM, 28) // SIGWINCH: the image's STOPSIGNAL
}

// redis answers PING and ECHO; other commands get an error, as a server the simulator
// knows only the liveness of.
type redis struct{}

func (redis) HTTP(*simnet.Request) *simnet.Response { return nil }

func (redis) Datagram(b []byte, _ time.Time) []byte {
	fields := strings.Fields(strings.TrimSpace(string(b)))
	if len(fields) == 0 {
		return nil
	}
	switch strings.ToUpper(fields[0]) {
	case "PING":
		return []byte("+PONG\r\n")
	case "ECHO":
		if len(fields) > 1 {
			return []byte("+" + strings.Join(fields[1:], " ") + "\r\n")
		}
	}
	return []byte("-ERR unknown command '" + fields[0] + "'\r\n")
}

// Redis is redis-server on port 6379 (or --port N).
func Redis(p *shell.Proc) int {
	port := 6379
	args := p.Args()[1:]
	for i := 0; i < len(args); i++ {
		if args[i] == "--port" && i+1 < len(args) {
			port, _ = strconv.Atoi(args[i+1])
		}
	}
	fmt.Fprintf(p.Stdout(), "1:C %s * oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo\n", p.Now().UTC().Format("02 Jan 2006 15:04:05.000"))
	if err := p.Listen("tcp", port, redis{}); err != nil {
		fmt.Fprintf(p.Stdout(), "1:M Warning: Could not create server TCP listening socket *:%d: bind: Address already in use\n", port)
		return 1
	}
	fmt.Fprintf(p.Stdout(), "1:M %s * Ready to accept connections tcp\n", p.Now().UTC().Format("02 Jan 2006 15:04:05.000"))
	return untilStopped(p, shell.SIGTERM)
}
