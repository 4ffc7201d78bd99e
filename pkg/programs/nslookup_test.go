package programs

import (
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// podResolvConf is what the kubelet writes for a pod of namespace default (ClusterFirst).
const podResolvConf = "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"

// clusterNet is a network with the cluster DNS at 10.96.0.10 knowing my-svc, and a pod
// (10.244.0.7) on it.
func clusterNet() (*simnet.Network, *simnet.Namespace) {
	n := simnet.New()
	n.SetDNSServers("10.96.0.10")
	n.SetRecord("my-svc.default.svc.cluster.local", "10.96.5.5")
	return n, n.NewNamespace("10.244.0.7")
}

func TestNslookup(t *testing.T) {
	n, ns := clusterNet()
	files := map[string]string{"/etc/resolv.conf": podResolvConf}
	head := "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n"
	nx := func(name string) string { return "** server can't find " + name + ": NXDOMAIN\n\n" }
	runCases(t, []tc{
		{name: "fully qualified", argv: []string{"nslookup", "my-svc.default.svc.cluster.local"}, files: files, network: n, ns: ns,
			stdout: head + "Name:\tmy-svc.default.svc.cluster.local\nAddress: 10.96.5.5\n\n\n"},
		// busybox asks under every search domain, and an NXDOMAIN for any makes it fail.
		{name: "search list", argv: []string{"nslookup", "my-svc"}, files: files, network: n, ns: ns,
			stdout: head + "Name:\tmy-svc.default.svc.cluster.local\nAddress: 10.96.5.5\n\n" +
				nx("my-svc.svc.cluster.local") + nx("my-svc.cluster.local") + "\n" +
				nx("my-svc.svc.cluster.local") + nx("my-svc.cluster.local"), status: 1},
		{name: "unknown", argv: []string{"nslookup", "nosuch.default.svc.cluster.local"}, files: files, network: n, ns: ns,
			stdout: head + nx("nosuch.default.svc.cluster.local") + nx("nosuch.default.svc.cluster.local"), status: 1},
		{name: "-type=a", argv: []string{"nslookup", "-type=a", "my-svc.default.svc.cluster.local"}, files: files, network: n, ns: ns,
			stdout: head + "Name:\tmy-svc.default.svc.cluster.local\nAddress: 10.96.5.5\n\n"},
		{name: "reverse", argv: []string{"nslookup", "10.96.5.5"}, files: files, network: n, ns: ns,
			stdout: head + "5.5.96.10.in-addr.arpa\tname = my-svc.default.svc.cluster.local\n\n"},
		{name: "server given", argv: []string{"nslookup", "-type=A", "my-svc.default.svc.cluster.local", "10.96.0.10"}, network: n, ns: ns,
			stdout: head + "Name:\tmy-svc.default.svc.cluster.local\nAddress: 10.96.5.5\n\n"},
		{name: "no server answers", argv: []string{"nslookup", "-timeout=2", "x.y", "10.1.2.3"}, network: n, ns: ns,
			stdout: ";; connection timed out; no servers could be reached\n\n", status: 1, elapsed: 2 * time.Second},
		{name: "no resolv.conf", argv: []string{"nslookup", "x.y"}, network: n, ns: ns,
			stdout: ";; connection timed out; no servers could be reached\n\n",
			stderr: "nslookup: write to '127.0.0.1': Connection refused\n", status: 1},
		{name: "no network", argv: []string{"nslookup", "x.y"}, files: files,
			stdout: ";; connection timed out; no servers could be reached\n\n", status: 1, elapsed: 5 * time.Second},
		{name: "bad server", argv: []string{"nslookup", "x.y", "nosuch"}, network: n, ns: ns, stderr: "nslookup: bad address 'nosuch'\n", status: 1},
		{name: "no host", argv: []string{"nslookup"}, stderr: usage("nslookup"), status: 1},
		{name: "bad option", argv: []string{"nslookup", "-bogus", "x"}, stderr: usage("nslookup"), status: 1},
		{name: "too many", argv: []string{"nslookup", "a", "b", "c"}, stderr: usage("nslookup"), status: 1},
		{name: "bad type", argv: []string{"nslookup", "-type=xx", "a"}, stderr: "nslookup: invalid query type \"xx\"\n", status: 1},
		{name: "bad port", argv: []string{"nslookup", "-port=0", "a"}, stderr: "nslookup: number 0 is not in 1..65535 range\n", status: 1},
		{name: "-t is the timeout", argv: []string{"nslookup", "-t=mx", "a"}, stderr: "nslookup: invalid number 'mx'\n", status: 1},
	})
}

// A pod waiting for its Service: until nslookup NAME; do sleep 1; done ends once the DNS
// knows the name.
func TestNslookupUntilTheServiceExists(t *testing.T) {
	n, ns := clusterNet()
	runCases(t, []tc{{
		name: "until", argv: []string{"sh", "-c", "until nslookup late.default.svc.cluster.local >/dev/null; do sleep 1; done; echo up"},
		setup:   withSh,
		files:   map[string]string{"/etc/resolv.conf": podResolvConf},
		network: n, ns: ns,
		steps: map[time.Duration]func(*vfs.View){
			3500 * time.Millisecond: func(*vfs.View) { n.SetRecord("late.default.svc.cluster.local", "10.96.7.7") },
		},
		stdout: "up\n", elapsed: 4 * time.Second,
	}})
}
