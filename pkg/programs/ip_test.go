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

// TestSysctl: sysctl reads the pod's /proc/sys (dots or slashes), and writing it needs a
// writable /proc/sys.
func TestSysctl(t *testing.T) {
	files := map[string]string{"/proc/sys/kernel/shm_rmid_forced": "1\n", "/proc/sys/net/ipv4/ip_local_port_range": "32768\t60999\n"}
	runCases(t, []tc{
		{name: "dotted", argv: []string{"sysctl", "kernel.shm_rmid_forced"}, files: files, stdout: "kernel.shm_rmid_forced = 1\n"},
		{name: "slashed", argv: []string{"sysctl", "kernel/shm_rmid_forced"}, files: files, stdout: "kernel.shm_rmid_forced = 1\n"},
		{name: "value only", argv: []string{"sysctl", "-n", "net.ipv4.ip_local_port_range"}, files: files, stdout: "32768\t60999\n"},
		{name: "unknown", argv: []string{"sysctl", "kernel.nope"}, files: files, stderr: "sysctl: error: 'kernel.nope' is an unknown key\n", status: 1},
		{name: "write", argv: []string{"sysctl", "-w", "kernel.shm_rmid_forced=0"}, files: files, stdout: "kernel.shm_rmid_forced = 0\n",
			check: fileIs("/proc/sys/kernel/shm_rmid_forced", "0\n")},
	})
}

// TestHexdump: the canonical table e2e's binary ConfigMap spec reads back.
func TestHexdump(t *testing.T) {
	runCases(t, []tc{
		{name: "canonical", argv: []string{"hexdump", "-C", "/d"}, files: map[string]string{"/d": "\xde\xca\xfe\xba\xd0\xfe\xff"},
			stdout: "00000000  de ca fe ba d0 fe ff                              |.......|\n00000007\n"},
		{name: "words", argv: []string{"hexdump", "/d"}, files: map[string]string{"/d": "abc"}, stdout: "0000000 6261 0063\n0000003\n"},
		{name: "missing", argv: []string{"hexdump", "-C", "/nope"}, stderr: "hexdump: /nope: No such file or directory\n", stdout: "00000000\n", status: 1},
	})
}
