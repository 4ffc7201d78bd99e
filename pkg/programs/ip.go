package programs

import (
	"strings"
)

// runIP is busybox's ip, the parts a pod uses: showing its interfaces, addresses and
// routes (lo, and eth0 with the pod's IP), and changing links, which needs a privileged
// container (CAP_NET_ADMIN): anyone else gets the kernel's refusal. A change leaves no
// trace, as the simulated network has no links to change.
func runIP(c *cmd) int {
	args := c.args
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		args = args[1:] // -4, -6, -o, -s: the output is the same here
	}
	if len(args) == 0 {
		c.showUsage(1)
	}
	object := args[0]
	verb := "show"
	if len(args) > 1 {
		verb = args[1]
	}
	switch {
	case prefixOf(object, "link") && isChange(verb), prefixOf(object, "address") && isChange(verb), prefixOf(object, "route") && isChange(verb):
		if !c.p.Identity().Privileged {
			c.errorf("RTNETLINK answers: Operation not permitted")
			return 2
		}
		return 0
	case prefixOf(object, "link"):
		c.write(ipLinks(c))
	case prefixOf(object, "address"):
		c.write(ipAddrs(c))
	case prefixOf(object, "route"):
		if parts := strings.Split(c.p.PodIP(), "."); len(parts) == 4 {
			net := parts[0] + "." + parts[1]
			c.printf("default via %s.0.1 dev eth0 \n%s.0.0/16 dev eth0 scope link  src %s \n", net, net, c.p.PodIP())
		}
	default:
		c.errorf("unknown object %s", object)
		return 1
	}
	return 0
}

func prefixOf(word, full string) bool { return word != "" && strings.HasPrefix(full, word) }

func isChange(verb string) bool {
	for _, v := range []string{"add", "delete", "set", "change", "replace", "flush"} {
		if prefixOf(verb, v) {
			return true
		}
	}
	return false
}

func ipLinks(c *cmd) string {
	s := "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue qlen 1000\n    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
	if c.p.PodIP() != "" {
		s += "2: eth0@if3: <BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> mtu 1500 qdisc noqueue \n    link/ether " + macOf(c.p.PodIP()) + " brd ff:ff:ff:ff:ff:ff\n"
	}
	return s
}

func ipAddrs(c *cmd) string {
	s := "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue qlen 1000\n    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n    inet 127.0.0.1/8 scope host lo\n       valid_lft forever preferred_lft forever\n"
	if ip := c.p.PodIP(); ip != "" {
		parts := strings.Split(ip, ".")
		brd := ip
		if len(parts) == 4 {
			brd = parts[0] + "." + parts[1] + ".255.255"
		}
		s += "2: eth0@if3: <BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> mtu 1500 qdisc noqueue \n    link/ether " + macOf(ip) + " brd ff:ff:ff:ff:ff:ff\n    inet " + ip + "/16 brd " + brd + " scope global eth0\n       valid_lft forever preferred_lft forever\n"
	}
	return s
}

// macOf is a stable MAC address for an IP, as a CNI plugin derives one.
func macOf(ip string) string {
	b := []byte{0x0a, 0x58, 0, 0, 0, 0}
	parts := strings.Split(ip, ".")
	for i := 0; i < 4 && i < len(parts); i++ {
		n := 0
		for _, ch := range parts[i] {
			n = n*10 + int(ch-'0')
		}
		b[2+i] = byte(n)
	}
	const hex = "0123456789abcdef"
	var out []string
	for _, x := range b {
		out = append(out, string([]byte{hex[x>>4], hex[x&15]}))
	}
	return strings.Join(out, ":")
}
