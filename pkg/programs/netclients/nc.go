package netclients

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// The simulated network answers a connection as a request and a reply: nc sends what its
// stdin holds and prints the answer. Bytes that form an HTTP request go to the server's
// HTTP handler and its answer comes back as the raw HTTP response; anything else goes to
// its Datagram handler. A TCP server is taken to close the connection once it has
// answered (nc then exits); over UDP nc waits for more as the real one does, until its
// timeout or forever.

// ncUsage is busybox 1.36's nc usage (netcat 1.10 compatible, with -l and the extras).
const ncUsage = "[OPTIONS] HOST PORT  - connect\nnc [OPTIONS] -l -p PORT [HOST] [PORT]  - listen"

// nc is one run of either nc: what it was asked to do.
type nc struct {
	p        *shell.Proc
	udp      bool
	zero     bool
	verbose  int
	wait     time.Duration // -w: connect timeout and, over UDP, how long the net may stay idle
	quit     time.Duration // OpenBSD's -q: how long to wait after stdin's end (<0: forever)
	hasQuit  bool
	listen   bool
	keep     bool
	openBSD  bool
	hostArg  string
	portArgs []string
}

// NC is busybox 1.36's nc (netcat 1.10 compatible): `nc -z HOST PORT` reports by its exit
// status whether the port accepts connections, `echo x | nc [-u] [-w N] HOST PORT` sends
// its stdin and prints the answer, `nc -l -p PORT` answers the first connection with its
// stdin (read to its end first) and prints what it was sent. A UDP probe (-zu) always
// succeeds: the simulated network sends no ICMP unreachable. -e is not simulated.
func NC(p *shell.Proc) int {
	args := p.Args()[1:]
	for _, a := range args {
		// -e PROG, or -e ending a group of flags ("-lke"), as busybox finds it.
		if strings.HasPrefix(a, "-") && strings.HasSuffix(a, "e") && strings.Trim(a[1:len(a)-1], "nuvlkz") == "" {
			fmt.Fprintln(p.Stderr(), "nc: -e is not simulated (minikubelet)")
			return 1
		}
	}
	o, err := getopt.Parse(args, "np:s:ubvw:lki:o:z", nil)
	if err != nil || len(o.Operands) > 2 {
		return usageError(p, "nc", ncUsage, err)
	}
	n := &nc{p: p, udp: o.Has('u'), zero: o.Has('z'), verbose: o.Count('v'), listen: o.Has('l'), keep: o.Has('k') || o.Count('l') > 1}
	if w, ok := o.Last('w'); ok {
		secs, err := strconv.ParseUint(w, 10, 31)
		if err != nil {
			fmt.Fprintf(p.Stderr(), "nc: invalid number '%s'\n", w)
			return 1
		}
		n.wait = time.Duration(secs) * time.Second
	}
	proto := n.proto()
	if n.listen {
		port := 0
		if ps, ok := o.Last('p'); ok {
			if port, ok = lookupPort(p.FS(), ps, proto); !ok {
				fmt.Fprintf(p.Stderr(), "nc: bad port '%s'\n", ps)
				return 1
			}
		}
		return n.serve(port, func(port int) {
			if n.verbose > 0 {
				fmt.Fprintf(p.Stderr(), "listening on [::]:%d ...\n", port)
			}
		})
	}
	if len(o.Operands) == 0 {
		return usageError(p, "nc", ncUsage, nil)
	}
	host := o.Operands[0]
	port := 0
	if len(o.Operands) > 1 {
		var ok bool
		if port, ok = lookupPort(p.FS(), o.Operands[1], proto); !ok {
			fmt.Fprintf(p.Stderr(), "nc: bad port '%s'\n", o.Operands[1])
			return 1
		}
	}
	ip, ok := resolve(p, host)
	if !ok {
		fmt.Fprintf(p.Stderr(), "nc: bad address '%s'\n", host)
		return 1
	}
	dotted := joinHostPort(ip, port)
	if !n.udp {
		if err := p.Connect(ip, port); err != nil {
			f := failureOf(err)
			if n.verbose > 1 || n.verbose > 0 && f != refused {
				fmt.Fprintf(p.Stderr(), "nc: %s (%s): %s\n", host, dotted, f.strerror())
			}
			return 1
		}
	}
	if n.verbose > 0 {
		fmt.Fprintf(p.Stderr(), "%s (%s) open\n", host, dotted)
	}
	if n.zero {
		if n.udp {
			// udptest: a byte, a pause, another byte; only an ICMP error would fail it.
			p.Exchange("udp", ip, port, []byte{0})
			if n.wait > 0 {
				sleepFor(p, n.wait)
			}
			p.Exchange("udp", ip, port, []byte{0})
		}
		return 0
	}
	return n.transfer(ip, port)
}

func (n *nc) proto() string {
	if n.udp {
		return "udp"
	}
	return "tcp"
}

// transfer sends stdin to ip:port and prints the answers, then waits as nc does before
// it exits.
func (n *nc) transfer(ip string, port int) int {
	p := n.p
	if !n.udp {
		payload, _ := p.ReadAll()
		reply, err := n.exchange(ip, port, payload)
		if err != nil {
			if n.verbose > 1 {
				fmt.Fprintf(p.Stderr(), "nc: net read: %s\n", failureOf(err).strerror())
			}
			return 1
		}
		p.Stdout().Write(reply)
		return 0
	}
	// Over UDP each read of stdin is a datagram, sent as soon as it is read.
	buf := make([]byte, 8192)
	in := p.Stdin()
	for {
		k, err := in.Read(buf)
		if k > 0 {
			if reply, _ := p.Exchange("udp", ip, port, bytes.Clone(buf[:k])); len(reply) > 0 {
				p.Stdout().Write(reply)
			}
		}
		if err != nil {
			break
		}
	}
	n.afterEOF()
	return 0
}

// afterEOF waits, once stdin has ended, for what will never come over UDP: nc gives up
// after its timeout (busybox: two idle -w periods; OpenBSD: -q, else one idle -w) or
// waits forever.
func (n *nc) afterEOF() {
	switch {
	case n.openBSD && n.hasQuit && n.quit >= 0:
		sleepFor(n.p, n.quit)
	case n.openBSD && n.wait > 0:
		sleepFor(n.p, n.wait)
	case !n.openBSD && n.wait > 0:
		sleepFor(n.p, 2*n.wait)
	default:
		idle(n.p)
	}
}

// exchange sends payload over TCP: through the server's HTTP handler when it is an HTTP
// request, else as raw bytes.
func (n *nc) exchange(ip string, port int, payload []byte) ([]byte, error) {
	if req, ok := parseRawRequest(payload); ok {
		resp, err := n.p.HTTP(ip, port, req)
		if err != nil {
			return nil, err
		}
		return rawResponse(resp, n.p.Now()), nil
	}
	return n.p.Exchange("tcp", ip, port, payload)
}

// listenPoll is how often a listening nc looks for the connections its handler took:
// handlers run in their callers' goroutines and cannot wake the process.
const listenPoll = time.Second

// serve is nc -l: it reads its stdin to the end (the answer), listens on port, answers
// connections with it and prints what they sent; without -k it exits after the first.
func (n *nc) serve(port int, started func(port int)) int {
	p := n.p
	network, ns := p.NetworkNamespace()
	if network == nil || ns == nil {
		fmt.Fprintf(p.Stderr(), "nc: bind: Cannot assign requested address\n")
		return 1
	}
	reply, _ := p.ReadAll()
	l := &ncListener{reply: reply, keep: n.keep}
	closeFn, err := ns.Listen(n.proto(), port, l)
	if err != nil {
		if n.openBSD {
			fmt.Fprintf(p.Stderr(), "nc: Address in use\n")
		} else {
			fmt.Fprintf(p.Stderr(), "nc: bind: Address in use\n")
		}
		return 1
	}
	l.mu.Lock()
	l.close = closeFn // a connection may already be coming in
	l.mu.Unlock()
	defer closeFn()
	started(port)
	for {
		p.Sleep(listenPoll)
		got, served := l.take()
		for _, g := range got {
			p.Stdout().Write(g)
		}
		if served && !n.keep {
			if n.udp {
				n.afterEOF()
			}
			return 0
		}
	}
}

// ncListener is a listening nc's handler: it answers with what nc's stdin held and keeps
// what it is sent for the process to print. Safe for concurrent use.
type ncListener struct {
	reply []byte
	keep  bool
	close func()

	mu     sync.Mutex
	got    [][]byte
	served bool
}

func (l *ncListener) accept(sent []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.served && !l.keep {
		return false // the first connection was the only one: nc no longer listens
	}
	l.served = true
	l.got = append(l.got, sent)
	if !l.keep && l.close != nil {
		l.close()
	}
	return true
}

func (l *ncListener) take() ([][]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := l.got
	l.got = nil
	return got, l.served
}

// HTTP implements simnet.Handler: stdin answers if it holds an HTTP response; else the
// connection just closes.
func (l *ncListener) HTTP(req *simnet.Request) *simnet.Response {
	if !l.accept(rawRequest(req)) {
		return nil
	}
	if resp, ok := parseRawResponse(l.reply); ok {
		return resp
	}
	return nil
}

// Datagram implements simnet.Handler.
func (l *ncListener) Datagram(b []byte, _ time.Time) []byte {
	if !l.accept(bytes.Clone(b)) || len(l.reply) == 0 {
		return nil
	}
	return l.reply
}

// openBSDUsage is the usage Alpine's netcat-openbsd (Debian's patches) prints.
const openBSDUsage = "usage: nc [-46CDdFhklNnrStUuvZz] [-I length] [-i interval] [-M ttl]\n" +
	"\t  [-m minttl] [-O length] [-P proxy_username] [-p source_port]\n" +
	"\t  [-q seconds] [-s sourceaddr] [-T keyword] [-V rtable] [-W recvlimit]\n" +
	"\t  [-w timeout] [-X proxy_protocol] [-x proxy_address[:port]]\n" +
	"\t  [destination] [port]\n"

// openBSDOpts are its options; those followed by ':' take an argument.
const openBSDOpts = "46bCDdFhI:i:klM:m:NnO:P:p:q:rSs:T:tUuV:vW:w:X:x:Zz"

// NCOpenBSD is the OpenBSD netcat of Alpine's netcat-openbsd package, which agnhost's
// image has as /usr/bin/nc: `nc -z [-v] HOST PORT[-PORT]`, `echo x | nc [-u] [-w N] [-q
// N] HOST PORT`, `nc -l [-p] PORT`, with its messages ("Connection to HOST PORT port
// [tcp/http] succeeded!", "nc: connect to HOST port PORT (tcp) failed: Connection
// refused"). Options are read as musl's getopt does: they end at the first operand.
func NCOpenBSD(p *shell.Proc) int {
	args := p.Args()[1:]
	n := &nc{p: p, openBSD: true}
	var srcPort string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			k := strings.IndexByte(openBSDOpts, c)
			if k < 0 || c == ':' {
				fmt.Fprintf(p.Stderr(), "nc: unrecognized option: %c\n%s", c, openBSDUsage)
				return 1
			}
			if k+1 < len(openBSDOpts) && openBSDOpts[k+1] == ':' {
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						fmt.Fprintf(p.Stderr(), "nc: option requires an argument: %c\n%s", c, openBSDUsage)
						return 1
					}
					i++
					val = args[i]
				}
				switch c {
				case 'w':
					secs, err := strconv.Atoi(val)
					if err != nil || secs < 0 {
						fmt.Fprintf(p.Stderr(), "nc: timeout invalid: %s\n", val)
						return 1
					}
					n.wait = time.Duration(secs) * time.Second
				case 'q':
					secs, err := strconv.Atoi(val)
					if err != nil {
						fmt.Fprintf(p.Stderr(), "nc: quit timer invalid: %s\n", val)
						return 1
					}
					n.quit, n.hasQuit = time.Duration(secs)*time.Second, true
				case 'p':
					srcPort = val
				}
				break
			}
			switch c {
			case 'u':
				n.udp = true
			case 'z':
				n.zero = true
			case 'v':
				n.verbose++
			case 'l':
				n.listen = true
			case 'k':
				n.keep = true
			case 'h':
				fmt.Fprintf(p.Stderr(), "OpenBSD netcat (Debian patchlevel 1.219-1)\n%s", openBSDUsage)
				return 1
			}
		}
	}
	rest := args[i:]
	proto := n.proto()
	if n.listen {
		portStr := srcPort
		switch {
		case len(rest) == 1 && portStr == "":
			portStr = rest[0]
		case len(rest) == 2 && portStr == "":
			portStr = rest[1]
		case len(rest) > 2 || portStr == "" && len(rest) == 0:
			io.WriteString(p.Stderr(), openBSDUsage)
			return 1
		}
		port, ok := lookupPort(p.FS(), portStr, proto)
		if !ok {
			fmt.Fprintf(p.Stderr(), "nc: port number invalid: %s\n", portStr)
			return 1
		}
		return n.serve(port, func(port int) {
			if n.verbose > 0 {
				fmt.Fprintf(p.Stderr(), "Listening on 0.0.0.0 %d\n", port)
			}
		})
	}
	if len(rest) != 2 {
		io.WriteString(p.Stderr(), openBSDUsage)
		return 1
	}
	host := rest[0]
	ports, err := portRange(p.FS(), rest[1], proto)
	if err != nil {
		fmt.Fprintf(p.Stderr(), "nc: %v\n", err)
		return 1
	}
	ip, ok := resolve(p, host)
	if !ok {
		fmt.Fprintf(p.Stderr(), "nc: getaddrinfo for host \"%s\" port %s: Name does not resolve\n", host, rest[1])
		return 1
	}
	status := 1
	for _, port := range ports {
		if !n.udp {
			if err := p.Connect(ip, port); err != nil {
				if n.verbose > 0 {
					who := host
					if ip != host {
						who = fmt.Sprintf("%s (%s)", host, ip)
					}
					fmt.Fprintf(p.Stderr(), "nc: connect to %s port %d (%s) failed: %s\n", who, port, proto, failureOf(err).strerror())
				}
				continue
			}
		}
		status = 0
		if n.verbose > 0 {
			who := host
			if ip != host {
				who = fmt.Sprintf("%s (%s)", host, ip)
			}
			fmt.Fprintf(p.Stderr(), "Connection to %s %d port [%s/%s] succeeded!\n", who, port, proto, serviceName(p.FS(), port, proto))
		}
		if n.zero {
			continue
		}
		return n.transfer(ip, port)
	}
	return status
}

// portRange reads OpenBSD nc's port operand: a port, a service name or LOW-HIGH.
func portRange(fsys *vfs.View, s, proto string) ([]int, error) {
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
			return nil, errors.New("port range not valid")
		}
		var ports []int
		for i := a; i <= b; i++ {
			ports = append(ports, i)
		}
		return ports, nil
	}
	port, ok := lookupPort(fsys, s, proto)
	if !ok || port == 0 {
		return nil, fmt.Errorf("port number invalid: %s", s)
	}
	return []int{port}, nil
}

// wellKnown are the services of /etc/services the clients name when the image has no
// such file.
var wellKnown = map[int]string{
	21: "ftp", 22: "ssh", 23: "telnet", 25: "smtp", 53: "domain", 80: "http", 110: "pop3",
	143: "imap2", 443: "https", 3306: "mysql", 5432: "postgresql", 6379: "redis", 8080: "http-alt",
}

// services reads /etc/services: name by port and port by name, for proto.
func services(fsys *vfs.View, proto string) (map[int]string, map[string]int) {
	byPort, byName := map[int]string{}, map[string]int{}
	data, err := fsys.ReadFile("/etc/services")
	if err != nil {
		for port, name := range wellKnown {
			byPort[port], byName[name] = name, port
		}
		return byPort, byName
	}
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		num, pr, ok := strings.Cut(f[1], "/")
		port, err := strconv.Atoi(num)
		if !ok || err != nil || pr != proto {
			continue
		}
		if _, seen := byPort[port]; !seen {
			byPort[port] = f[0]
		}
		for _, name := range f {
			if name != f[1] {
				if _, seen := byName[name]; !seen {
					byName[name] = port
				}
			}
		}
	}
	return byPort, byName
}

// lookupPort is a port operand: a number, or a service name.
func lookupPort(fsys *vfs.View, s, proto string) (int, bool) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return int(n), n <= 65535
	}
	_, byName := services(fsys, proto)
	port, ok := byName[s]
	return port, ok
}

// serviceName is the service name of port, "*" when it has none.
func serviceName(fsys *vfs.View, port int, proto string) string {
	byPort, _ := services(fsys, proto)
	if name, ok := byPort[port]; ok {
		return name
	}
	return "*"
}
