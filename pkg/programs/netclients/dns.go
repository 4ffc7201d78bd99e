package netclients

import (
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// ResolvConf is what a container's /etc/resolv.conf says (the kubelet writes a pod's):
// its nameservers, its search list and its ndots option.
type ResolvConf struct {
	Servers []string
	Search  []string
	Ndots   int
}

// ReadResolvConf reads /etc/resolv.conf as busybox's resolver reads it: "nameserver IP"
// lines, the last "search" (or a "domain" when there is none), "options ndots:N". Without
// a search list the host name's domain is searched.
func ReadResolvConf(fsys *vfs.View, hostname string) ResolvConf {
	rc := ResolvConf{Ndots: 1}
	var domain []string
	haveSearch := false
	if fsys != nil {
		if data, err := fsys.ReadFile("/etc/resolv.conf"); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				f := strings.Fields(line)
				if len(f) < 2 {
					continue
				}
				switch f[0] {
				case "nameserver":
					rc.Servers = append(rc.Servers, f[1])
				case "search":
					rc.Search, haveSearch = f[1:], true
				case "domain":
					domain = f[1:2]
				case "options":
					for _, o := range f[1:] {
						if v, ok := strings.CutPrefix(o, "ndots:"); ok {
							if n, err := strconv.Atoi(v); err == nil && n >= 0 {
								rc.Ndots = min(n, 15)
							}
						}
					}
				}
			}
		}
	}
	if !haveSearch {
		rc.Search = domain
	}
	if rc.Search == nil {
		if _, d, ok := strings.Cut(hostname, "."); ok && d != "" {
			rc.Search = []string{d}
		}
	}
	if len(rc.Search) == 1 && rc.Search[0] == "." {
		rc.Search = nil
	}
	return rc
}

// lookupDNS resolves host through the cluster DNS as the C library does: the search list
// first when host has fewer dots than ndots, then host itself; the first server that
// answers is asked. The first IPv4 address, or false.
func lookupDNS(p *shell.Proc, host string) (string, bool) {
	network, ns := p.NetworkNamespace()
	if network == nil || host == "" {
		return "", false
	}
	rc := ReadResolvConf(p.FS(), p.Hostname())
	var names []string
	if strings.HasSuffix(host, ".") {
		names = []string{host}
	} else {
		if strings.Count(host, ".") < rc.Ndots {
			for _, d := range rc.Search {
				names = append(names, host+"."+d)
			}
		}
		names = append(names, host)
	}
	servers := rc.Servers
	if len(servers) == 0 {
		servers = []string{"127.0.0.1"}
	}
	for _, server := range servers {
		answered := false
		for _, name := range names {
			a, ok := network.QueryDNS(ns, server, name, false)
			if !ok {
				break
			}
			answered = true
			if a.Found && len(a.Addrs) > 0 {
				return a.Addrs[0], true
			}
		}
		if answered {
			return "", false
		}
	}
	return "", false
}
