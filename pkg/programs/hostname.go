package programs

import (
	"slices"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

func runHostname(c *cmd) int {
	o, args := c.getopt("dfisF:v", []getopt.Long{
		{Name: "domain", Key: 'd'}, {Name: "fqdn", Key: 'f'}, {Name: "file", Key: 'F'},
	})
	name := c.p.Hostname()
	switch {
	case o.Has('d') || o.Has('f') || o.Has('i'):
		// The full name and addresses come from resolving the name, which in a pod is
		// the kubelet's /etc/hosts.
		addrs, canonical := c.resolveHost(name)
		if len(addrs) == 0 && c.p.PodIP() != "" {
			addrs, canonical = []string{c.p.PodIP()}, name
		}
		if len(addrs) == 0 {
			c.die("%s: Unknown host", name)
		}
		short, domain, _ := strings.Cut(canonical, ".")
		switch {
		case o.Has('f'):
			c.write(canonical + "\n")
		case o.Has('s'):
			c.write(short + "\n")
		case o.Has('d'):
			if domain != "" {
				c.write(domain + "\n")
			}
		default:
			c.write(strings.Join(addrs, " ") + "\n")
		}
	case o.Has('s'):
		short, _, _ := strings.Cut(name, ".")
		c.write(short + "\n")
	case o.Has('F') || len(args) > 0:
		// A container has no CAP_SYS_ADMIN: the UTS namespace is the pod's.
		c.die("sethostname: Operation not permitted")
	default:
		c.write(name + "\n")
	}
	return 0
}

// hostsEntry is a line of /etc/hosts.
type hostsEntry struct {
	addr  string
	names []string
}

func (c *cmd) hosts() []hostsEntry {
	data, err := c.fs().ReadFile("/etc/hosts")
	if err != nil {
		return nil
	}
	var out []hostsEntry
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		out = append(out, hostsEntry{addr: f[0], names: f[1:]})
	}
	return out
}

// resolveHost looks name up in /etc/hosts as gethostbyname does (IPv4 only): the
// addresses of the first line that names it, and that line's canonical name.
func (c *cmd) resolveHost(name string) ([]string, string) {
	for _, h := range c.hosts() {
		if strings.Contains(h.addr, ":") || !slices.Contains(h.names, name) {
			continue
		}
		return []string{h.addr}, h.names[0]
	}
	return nil, ""
}
