package simnet

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Everything here happens in memory: a request to a pod IP is a function call into the
// handler its program registered, never a socket. Pod IPs are simulated and must not be
// dialled for real (they would leave the machine).

// Request is an HTTP request as a simulated server sees it.
type Request struct {
	Method string
	// Target is the request target: path and query ("/dial?host=...").
	Target string
	Host   string
	Header http.Header
	Body   []byte
	// Now is the caller's clock: servers whose answers change with time (agnhost
	// liveness) read it instead of a clock of their own.
	Now time.Time
	// From is the caller's IP ("" from the node).
	From string
}

// Path is the target without its query.
func (r *Request) Path() string {
	p, _, _ := strings.Cut(r.Target, "?")
	return p
}

// Query is the target's query, parsed as a Go server parses it (net/http's
// URL.Query): a pair that does not parse is left out.
func (r *Request) Query() url.Values {
	_, q, _ := strings.Cut(r.Target, "?")
	v, _ := url.ParseQuery(q)
	return v
}

// Response is a simulated server's answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Handler is what a simulated server does with what reaches its port. HTTP answers an
// HTTP request (TCP listeners); Datagram answers a raw payload (UDP, or a TCP client that
// sends bytes and reads the reply, as nc does) with nil for no reply.
type Handler interface {
	HTTP(req *Request) *Response
	Datagram(payload []byte, now time.Time) []byte
}

// Errors of a connection, worded as Go's net package words them on Linux.
var (
	ErrRefused = errors.New("connect: connection refused")
	ErrNoRoute = errors.New("connect: no route to host")
	ErrInUse   = errors.New("bind: address already in use")
)

// Network is a set of hosts reachable by IP: the pods of one or several simulated nodes.
// Safe for concurrent use.
type Network struct {
	mu    sync.RWMutex
	hosts map[string]*Namespace
	dns   dnsZone
}

// New is an empty network.
func New() *Network { return &Network{hosts: map[string]*Namespace{}} }

// Namespace is a network namespace: the IPs and listening ports a pod's containers share.
type Namespace struct {
	net *Network
	ips []string

	mu sync.RWMutex
	// listeners are what listens, sorted by protocol then port: a pod has a few, and a
	// map of them was 260 bytes of each of 10,000 pods.
	listeners []bound
	// opaque counts the containers whose programs the simulator does not know: such a
	// pod is taken to serve whatever is asked of it (probes pass), as before programs
	// were simulated.
	opaque int
}

type key struct {
	proto string
	port  int
}

func (a key) compare(b key) int {
	if c := strings.Compare(a.proto, b.proto); c != 0 {
		return c
	}
	return cmp.Compare(a.port, b.port)
}

type bound struct {
	key
	l *listener
}

// find is where k is or goes in ns.listeners, and whether it is there (under ns.mu).
func (ns *Namespace) find(k key) (int, bool) {
	return slices.BinarySearchFunc(ns.listeners, k, func(b bound, k key) int { return b.key.compare(k) })
}

// listener wraps a handler so that closing compares pointers (a handler may be a value
// that cannot be compared).
type listener struct{ h Handler }

// NewNamespace is a namespace with ips, reachable on n.
func (n *Network) NewNamespace(ips ...string) *Namespace {
	ns := &Namespace{net: n, ips: ips}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ip := range ips {
		n.hosts[ip] = ns
	}
	return ns
}

// Close takes the namespace off the network.
func (ns *Namespace) Close() {
	ns.net.mu.Lock()
	defer ns.net.mu.Unlock()
	for _, ip := range ns.ips {
		if ns.net.hosts[ip] == ns {
			delete(ns.net.hosts, ip)
		}
	}
}

// IPs are the namespace's addresses.
func (ns *Namespace) IPs() []string { return ns.ips }

// Listen makes h answer on proto ("tcp" or "udp") port. close stops it.
func (ns *Namespace) Listen(proto string, port int, h Handler) (close func(), err error) {
	k := key{proto, port}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	i, ok := ns.find(k)
	if ok {
		return nil, fmt.Errorf("listen %s :%d: %w", proto, port, ErrInUse)
	}
	l := &listener{h}
	ns.listeners = slices.Insert(ns.listeners, i, bound{k, l})
	return func() {
		ns.mu.Lock()
		defer ns.mu.Unlock()
		if i, ok := ns.find(k); ok && ns.listeners[i].l == l {
			ns.listeners = slices.Delete(ns.listeners, i, i+1)
		}
	}, nil
}

// SetOpaque counts a container whose program is not simulated in (true) or out (false).
func (ns *Namespace) SetOpaque(on bool) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if on {
		ns.opaque++
	} else if ns.opaque > 0 {
		ns.opaque--
	}
}

// Listening reports whether something answers on proto port.
func (ns *Namespace) Listening(proto string, port int) bool {
	_, ok := ns.handler(proto, port)
	return ok
}

func (ns *Namespace) handler(proto string, port int) (Handler, bool) {
	ns.mu.RLock()
	defer ns.mu.RUnlock()
	i, ok := ns.find(key{proto, port})
	if !ok {
		if ns.opaque > 0 {
			return opaqueHandler{}, true
		}
		return nil, false
	}
	return ns.listeners[i].l.h, true
}

// opaqueHandler answers for a program the simulator does not know: 200 to any request.
type opaqueHandler struct{}

func (opaqueHandler) HTTP(*Request) *Response           { return &Response{Status: http.StatusOK} }
func (opaqueHandler) Datagram([]byte, time.Time) []byte { return nil }

// resolve finds the namespace that answers host from ns (localhost is ns itself).
func (n *Network) resolve(from *Namespace, host string) (*Namespace, bool) {
	if from != nil && (host == "localhost" || host == "127.0.0.1" || host == "::1" || host == "") {
		return from, true
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	ns, ok := n.hosts[host]
	return ns, ok
}

// Connect reports whether a TCP connection to host:port from ns (nil: the node) would be
// accepted, with the error a client sees when not.
func (n *Network) Connect(from *Namespace, host string, port int) error {
	ns, ok := n.resolve(from, host)
	if !ok {
		return dialError("tcp", host, port, ErrNoRoute)
	}
	if !ns.Listening("tcp", port) {
		return dialError("tcp", host, port, ErrRefused)
	}
	return nil
}

func dialError(proto, host string, port int, err error) error {
	return fmt.Errorf("dial %s %s: %w", proto, joinHostPort(host, port), err)
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// HTTP sends req to host:port from ns (nil: the node) and returns the answer.
func (n *Network) HTTP(from *Namespace, host string, port int, req *Request) (*Response, error) {
	ns, ok := n.resolve(from, host)
	if !ok {
		return nil, dialError("tcp", host, port, ErrNoRoute)
	}
	h, ok := ns.handler("tcp", port)
	if !ok {
		return nil, dialError("tcp", host, port, ErrRefused)
	}
	if req.Host == "" {
		req.Host = joinHostPort(host, port)
	}
	if from != nil && len(from.ips) > 0 && req.From == "" {
		req.From = from.ips[0]
	}
	resp := h.HTTP(req)
	if resp == nil {
		return nil, fmt.Errorf("read %s: connection reset by peer", joinHostPort(host, port))
	}
	if resp.Status == 0 {
		resp.Status = http.StatusOK
	}
	return resp, nil
}

// Exchange sends payload to host:port over proto from ns and returns the reply (nil: none).
// A UDP datagram to a port nobody listens on is lost (no error, no reply), as over a
// network; a TCP one is refused.
func (n *Network) Exchange(from *Namespace, proto, host string, port int, payload []byte, now time.Time) ([]byte, error) {
	ns, ok := n.resolve(from, host)
	if !ok {
		if proto == "udp" {
			return nil, nil
		}
		return nil, dialError(proto, host, port, ErrNoRoute)
	}
	h, ok := ns.handler(proto, port)
	if !ok {
		if proto == "udp" {
			return nil, nil
		}
		return nil, dialError(proto, host, port, ErrRefused)
	}
	return h.Datagram(payload, now), nil
}

// The cluster's DNS, as the simulated network answers it: the addresses its server
// answers at (a cluster's kube-dns Service), and the A records of the names it knows
// (Services' fully qualified names). Nothing leaves the machine: a name it does not know
// does not exist (NXDOMAIN), as no upstream resolver is reachable.
type dnsZone struct {
	servers map[string]bool
	records map[string][]string // by lower-case name, without the final dot
	onMiss  func(name string)
}

// OnDNSMiss sets what is told of a name the DNS was asked and did not know (outside the
// network's lock, on the asking goroutine: it must not block): the feed of the records
// looks again, as a DNS server watching Services would have seen a new one.
func (n *Network) OnDNSMiss(f func(name string)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dns.onMiss = f
}

// SetDNSServers makes the cluster DNS answer at ips (replacing those set before).
func (n *Network) SetDNSServers(ips ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dns.servers = map[string]bool{}
	for _, ip := range ips {
		n.dns.servers[ip] = true
	}
}

// SetRecord makes the cluster DNS answer name (fully qualified, "my-svc.default.svc.
// cluster.local") with ips; no ips removes it.
func (n *Network) SetRecord(name string, ips ...string) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.dns.records == nil {
		n.dns.records = map[string][]string{}
	}
	if len(ips) == 0 {
		delete(n.dns.records, name)
		return
	}
	n.dns.records[name] = append([]string(nil), ips...)
}

// DNSAnswer is what a DNS server answered a query.
type DNSAnswer struct {
	// Found is false for NXDOMAIN.
	Found bool
	// Addrs are the A records (IPv4 addresses) of the name; a PTR query's names are in Names.
	Addrs []string
	Names []string
}

// QueryDNS asks the DNS server at server (an IP) from ns about name: its A records, or
// with ptr, the names whose records hold the address name is the reverse of
// ("10.0.96.10.in-addr.arpa"). ok is false when nothing answers DNS at server (the query
// is lost).
func (n *Network) QueryDNS(from *Namespace, server, name string, ptr bool) (a DNSAnswer, ok bool) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if !ptr {
		n.mu.RLock()
		isServer := n.dns.servers[server]
		ips, found := n.dns.records[name]
		miss := n.dns.onMiss
		n.mu.RUnlock()
		if !isServer {
			return DNSAnswer{}, false
		}
		if !found && miss != nil && name != "" {
			miss(name)
		}
		return DNSAnswer{Found: found, Addrs: append([]string(nil), ips...)}, true
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	if !n.dns.servers[server] {
		return DNSAnswer{}, false
	}
	ip, isReverse := reverseIP(name)
	if !isReverse {
		return DNSAnswer{}, true
	}
	for rname, ips := range n.dns.records {
		for _, addr := range ips {
			if addr == ip {
				a.Names = append(a.Names, rname)
			}
		}
	}
	sort.Strings(a.Names)
	a.Found = len(a.Names) > 0
	return a, true
}

// reverseIP is the IPv4 address an in-addr.arpa name stands for.
func reverseIP(name string) (string, bool) {
	rest, ok := strings.CutSuffix(name, ".in-addr.arpa")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 4 {
		return "", false
	}
	slices.Reverse(parts)
	return strings.Join(parts, "."), true
}

// Reachable reports whether ip answers on the network from ns (a ping's echo request):
// ns's own addresses and localhost, every pod's, the cluster DNS's, and the addresses the
// DNS gives Services.
func (n *Network) Reachable(from *Namespace, ip string) bool {
	if strings.HasPrefix(ip, "127.") {
		return from != nil
	}
	if _, ok := n.resolve(from, ip); ok {
		return true
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.dns.servers[ip] {
		return true
	}
	for _, ips := range n.dns.records {
		if slices.Contains(ips, ip) {
			return true
		}
	}
	return false
}

// Port is a protocol and port something listens on.
type Port struct {
	Proto string
	Port  int
}

// Listeners lists what listens in the namespace, by protocol then port.
func (ns *Namespace) Listeners() []Port {
	ns.mu.RLock()
	out := make([]Port, 0, len(ns.listeners))
	for _, b := range ns.listeners { // sorted already
		out = append(out, Port{b.proto, b.port})
	}
	ns.mu.RUnlock()
	return out
}
