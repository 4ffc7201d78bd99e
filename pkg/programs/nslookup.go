package programs

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/programs/netclients"
)

// nslookupTypes are busybox nslookup's query types, in the order it asks them.
var nslookupTypes = []string{"SOA", "NS", "A", "AAAA", "CNAME", "MX", "TXT", "SRV", "PTR", "ANY"}

// xatouRange is busybox's xatou_range: an unsigned number in lo..hi, or it dies.
func (c *cmd) xatouRange(s string, lo, hi uint64) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		c.die("invalid number '%s'", s)
	}
	if n < lo || n > hi {
		c.die("number %s is not in %d..%d range", s, lo, hi)
	}
	return n
}

type dnsQuery struct {
	name  string
	qtype string
}

// runNslookup is busybox 1.36's nslookup (FEATURE_NSLOOKUP_BIG): it asks the nameservers
// of /etc/resolv.conf (or the one given; 127.0.0.1 without any) for HOST's A and AAAA
// records (a name without a dot: under each domain of the search list; an address: its
// PTR record) over the simulated network, where the cluster DNS answers: each reply is
// printed as it comes, an unknown name as "** server can't find NAME: NXDOMAIN", which
// makes the status 1. A server that does not answer is waited for -timeout seconds (5).
func runNslookup(c *cmd) int {
	args := c.args
	var types []string
	timeout := uint64(5)
	for {
		if len(args) == 0 {
			c.showUsage(1)
		}
		if !strings.HasPrefix(args[0], "-") {
			break
		}
		name, val, _ := strings.Cut(args[0][1:], "=")
		args = args[1:]
		switch name {
		case "type", "querytype":
			found := false
			for _, t := range nslookupTypes {
				if strings.EqualFold(t, val) {
					types = append(types, t)
					found = true
				}
			}
			if !found {
				c.die("invalid query type \"%s\"", val)
			}
		case "port":
			c.xatouRange(val, 1, 0xffff)
		case "retry":
			c.xatouRange(val, 1, 1<<31-1)
		case "debug":
		case "t", "timeout":
			timeout = c.xatouRange(val, 1, (1<<31-1)/1000)
		default:
			c.showUsage(1)
		}
	}
	host := args[0]
	var servers []string
	rc := netclients.ReadResolvConf(c.fs(), c.p.Hostname())
	if len(args) > 1 {
		if len(args) > 2 {
			c.showUsage(1)
		}
		servers = []string{args[1]}
	} else {
		servers = rc.Servers
		if len(servers) == 0 {
			servers = []string{"127.0.0.1"}
		}
	}
	// The servers' addresses are resolved first, as busybox does adding them.
	addrs := make([]string, len(servers))
	for i, s := range servers {
		ip, ok := netclients.Resolve(c.fs(), c.p.Hostname(), c.p.PodIP(), s)
		if !ok {
			if ip, ok = netclients.ResolveDNS(c.p, s); !ok {
				c.die("bad address '%s'", s)
			}
		}
		addrs[i] = ip
	}
	search := rc.Search
	withSearch := func(qtype string, queries []dnsQuery) []dnsQuery {
		if qtype == "PTR" || len(search) == 0 || strings.Contains(host, ".") {
			return append(queries, dnsQuery{host, qtype})
		}
		for _, d := range search {
			queries = append(queries, dnsQuery{host + "." + d, qtype})
		}
		return queries
	}
	var queries []dnsQuery
	if len(types) == 0 {
		if ptr, ok := reverseName(host); ok {
			queries = []dnsQuery{{ptr, "PTR"}}
		} else {
			queries = withSearch("AAAA", withSearch("A", nil))
		}
	} else {
		for _, t := range nslookupTypes {
			for _, u := range types {
				if t == u {
					queries = withSearch(t, queries)
					break
				}
			}
		}
	}
	network, ns := c.p.NetworkNamespace()
	status := 0
	for i, server := range servers {
		addr := addrs[i]
		answered := network != nil
		if answered {
			_, answered = network.QueryDNS(ns, addr, "", false)
		}
		if !answered {
			local := strings.HasPrefix(addr, "127.") || addr == "::1"
			if local && (ns == nil || !ns.Listening("udp", 53)) {
				// The kernel refuses a datagram to a closed local port at once.
				c.errorf("write to '%s': Connection refused", server)
			} else {
				c.sleep(time.Duration(timeout) * time.Second)
			}
			if i == len(servers)-1 {
				c.write(";; connection timed out; no servers could be reached\n\n")
				return 1
			}
			continue
		}
		c.printf("Server:\t\t%s\nAddress:\t%s\n\n", server, joinHostPort(addr, 53))
		for _, q := range queries {
			a, _ := network.QueryDNS(ns, addr, q.name, q.qtype == "PTR")
			if !a.Found {
				c.printf("** server can't find %s: NXDOMAIN\n\n", q.name)
				status = 1
				continue
			}
			// The cluster DNS is authoritative for what it knows: no "Non-authoritative
			// answer:". It has A records only: other types have no data.
			switch q.qtype {
			case "A", "ANY":
				for _, ip := range a.Addrs {
					c.printf("Name:\t%s\nAddress: %s\n", q.name, ip)
				}
			case "PTR":
				for _, n := range a.Names {
					c.printf("%s\tname = %s\n", q.name, n)
				}
			}
			c.write("\n")
		}
		break
	}
	return status
}

// reverseName is the in-addr.arpa (or ip6.arpa) name of an address, as busybox's
// make_ptr; false when s is not an address.
func reverseName(s string) (string, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", false
	}
	if a.Is4() || a.Is4In6() {
		b := a.Unmap().As4()
		return strconv.Itoa(int(b[3])) + "." + strconv.Itoa(int(b[2])) + "." + strconv.Itoa(int(b[1])) + "." + strconv.Itoa(int(b[0])) + ".in-addr.arpa", true
	}
	b := a.As16()
	const hex = "0123456789abcdef"
	var sb strings.Builder
	for i := 15; i >= 0; i-- {
		sb.WriteByte(hex[b[i]&0xf])
		sb.WriteByte('.')
		sb.WriteByte(hex[b[i]>>4])
		sb.WriteByte('.')
	}
	return sb.String() + "ip6.arpa", true
}

// joinHostPort is ip:port, an IPv6 address in brackets.
func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
