package programs

import (
	"testing"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// TestIP: changing links needs a privileged container, as CAP_NET_ADMIN does; anyone may
// look.
func TestIP(t *testing.T) {
	runCases(t, []tc{
		{name: "privileged adds a link", argv: []string{"ip", "link", "add", "dummy1", "type", "dummy"}, id: shell.Identity{Privileged: true}},
		{name: "privileged deletes it", argv: []string{"ip", "link", "del", "dummy1"}, id: shell.Identity{Privileged: true}},
		{name: "unprivileged is refused", argv: []string{"ip", "link", "add", "dummy1", "type", "dummy"},
			stderr: "ip: RTNETLINK answers: Operation not permitted\n", status: 2},
		{name: "links without a network", argv: []string{"ip", "link"},
			stdout: "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue qlen 1000\n    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"},
		{name: "an unknown object", argv: []string{"ip", "tunnel"}, stderr: "ip: unknown object tunnel\n", status: 1},
	})
}
