package programs

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// runNetstat is busybox's netstat over the pod's simulated network namespace (which its
// containers share): what listens there (the servers of pkg/programs/servers, agnhost,
// nc -l) shows as listening sockets on 0.0.0.0 (-l, -a); the simulated network's
// exchanges are instantaneous, so no connection is ever established. -p names the
// process of the container's own pid namespace that listens, "-" for another
// container's. -r prints the routing table of the pod's eth0. Unix and raw sockets:
// none.
func runNetstat(c *cmd) int {
	o, _ := c.getopt("laentuwxrWp", nil)
	listening, connected := false, true
	if o.Has('l') {
		listening, connected = true, false
	}
	if o.Has('a') {
		listening, connected = true, true
	}
	numeric := o.Has('n')
	if o.Has('r') {
		c.netstatRoutes(numeric)
		return 0
	}
	tcp, udp, raw, unix := o.Has('t'), o.Has('u'), o.Has('w'), o.Has('x')
	if !tcp && !udp && !raw && !unix {
		tcp, udp, raw, unix = true, true, true, true
	}
	which := "(w/o servers)"
	switch {
	case listening && connected:
		which = "(servers and established)"
	case listening:
		which = "(only servers)"
	}
	banner := ""
	if o.Has('p') {
		banner = "PID/Program name    "
	}
	width := 23
	if o.Has('W') {
		width = 51
	}
	if tcp || udp || raw {
		c.printf("Active Internet connections %s\nProto Recv-Q Send-Q %-*s %-*s State       %s\n", which, width, "Local Address", width, "Foreign Address", banner)
	}
	_, ns := c.p.NetworkNamespace()
	if ns != nil && listening {
		owners := map[string]string{}
		for _, q := range c.p.Procs() {
			for _, l := range q.Listening {
				owners[l.Proto+"/"+strconv.Itoa(l.Port)] = strconv.Itoa(q.PID) + "/" + path.Base(firstArg(q.Argv))
			}
		}
		services := c.services(numeric)
		for _, l := range ns.Listeners() {
			if l.Proto == "tcp" && !tcp || l.Proto == "udp" && !udp || l.Proto != "tcp" && l.Proto != "udp" {
				continue
			}
			port := strconv.Itoa(l.Port)
			if name, ok := services[port+"/"+l.Proto]; ok {
				port = name
			}
			state := "LISTEN"
			if l.Proto == "udp" {
				state = ""
			}
			line := fmt.Sprintf("%s   %6d %6d %-*s %-*s %-12s", l.Proto, 0, 0, width, "0.0.0.0:"+port, width, "0.0.0.0:*", state)
			if o.Has('p') {
				owner, ok := owners[l.Proto+"/"+strconv.Itoa(l.Port)]
				if !ok {
					owner = "-"
				}
				if len(owner) > 20 {
					owner = owner[:20]
				}
				line += owner
			}
			c.write(line + "\n")
		}
	}
	if unix {
		c.printf("Active UNIX domain sockets %s\nProto RefCnt Flags       Type       State         I-Node %sPath\n", which, banner)
	}
	return 0
}

// services reads the port names of /etc/services ("8080/tcp" → "http-alt"), the first
// name of a port winning, as getservbyport finds it; none with -n.
func (c *cmd) services(numeric bool) map[string]string {
	out := map[string]string{}
	if numeric {
		return out
	}
	data, err := c.fs().ReadFile("/etc/services")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if _, ok := out[f[1]]; !ok {
			out[f[1]] = f[0]
		}
	}
	return out
}

// netstatRoutes is netstat -r (busybox's bb_displayroutes): the routes `ip route` shows,
// a default one through the pod network's gateway and the pod network itself.
func (c *cmd) netstatRoutes(numeric bool) {
	c.write("Kernel IP routing table\nDestination     Gateway         Genmask         Flags   MSS Window  irtt Iface\n")
	parts := strings.Split(c.p.PodIP(), ".")
	if len(parts) != 4 {
		return
	}
	network := parts[0] + "." + parts[1] + ".0.0"
	dflt, any := "default", "*"
	if numeric {
		dflt, any = "0.0.0.0", "0.0.0.0"
	}
	route := func(dest, gw, mask, flags string) {
		c.printf("%-15.15s %-15.15s %-16s%-6s%5d %-5d %6d %s\n", dest, gw, mask, flags, 0, 0, 0, "eth0")
	}
	route(dflt, parts[0]+"."+parts[1]+".0.1", "0.0.0.0", "UG")
	route(network, any, "255.255.0.0", "U")
}
