package programs

import (
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// ping answers on the simulated network only, on the machine's clock.
func TestPing(t *testing.T) {
	n, ns := clusterNet()
	n.NewNamespace("10.244.0.9") // another pod
	files := map[string]string{"/etc/resolv.conf": podResolvConf}
	stats := func(host string, sent, got int64, loss string) string {
		return "\n--- " + host + " ping statistics ---\n" + itoa(sent) + " packets transmitted, " + itoa(got) + " packets received, " + loss + " packet loss\n"
	}
	remote := "round-trip min/avg/max = 0.120/0.120/0.120 ms\n"
	runCases(t, []tc{
		{name: "localhost", argv: []string{"ping", "-c", "2", "localhost"}, network: n, ns: ns,
			stdout: "PING localhost (127.0.0.1): 56 data bytes\n" +
				"64 bytes from 127.0.0.1: seq=0 ttl=64 time=0.045 ms\n64 bytes from 127.0.0.1: seq=1 ttl=64 time=0.045 ms\n" +
				stats("localhost", 2, 2, "0%") + "round-trip min/avg/max = 0.045/0.045/0.045 ms\n",
			elapsed: time.Second + 45*time.Microsecond},
		{name: "another pod", argv: []string{"ping", "-c1", "10.244.0.9"}, network: n, ns: ns,
			stdout: "PING 10.244.0.9 (10.244.0.9): 56 data bytes\n64 bytes from 10.244.0.9: seq=0 ttl=64 time=0.120 ms\n" +
				stats("10.244.0.9", 1, 1, "0%") + remote, elapsed: 120 * time.Microsecond},
		{name: "a service by name", argv: []string{"ping", "-c1", "-q", "my-svc"}, files: files, network: n, ns: ns,
			stdout: "PING my-svc (10.96.5.5): 56 data bytes\n" + stats("my-svc", 1, 1, "0%") + remote, elapsed: 120 * time.Microsecond},
		{name: "unreachable", argv: []string{"ping", "-c", "2", "10.1.2.3"}, network: n, ns: ns,
			stdout: "PING 10.1.2.3 (10.1.2.3): 56 data bytes\n" + stats("10.1.2.3", 2, 0, "100%"), status: 1, elapsed: 11 * time.Second},
		{name: "unreachable -W", argv: []string{"ping", "-c1", "-W", "2", "10.1.2.3"}, network: n, ns: ns,
			stdout: "PING 10.1.2.3 (10.1.2.3): 56 data bytes\n" + stats("10.1.2.3", 1, 0, "100%"), status: 1, elapsed: 2 * time.Second},
		{name: "deadline", argv: []string{"ping", "-w", "3", "10.1.2.3"}, network: n, ns: ns,
			stdout: "PING 10.1.2.3 (10.1.2.3): 56 data bytes\n" + stats("10.1.2.3", 3, 0, "100%"), status: 1, elapsed: 3 * time.Second},
		{name: "deadline reached", argv: []string{"ping", "-q", "-w", "2", "-i", "0.5", "127.0.0.1"}, network: n, ns: ns,
			stdout:  "PING 127.0.0.1 (127.0.0.1): 56 data bytes\n" + stats("127.0.0.1", 4, 4, "0%") + "round-trip min/avg/max = 0.045/0.045/0.045 ms\n",
			elapsed: 2 * time.Second},
		{name: "no network", argv: []string{"ping", "-c1", "-W1", "127.0.0.1"},
			stdout: "PING 127.0.0.1 (127.0.0.1): 56 data bytes\n" + stats("127.0.0.1", 1, 0, "100%"), status: 1, elapsed: time.Second},
		{name: "interrupted", argv: []string{"ping", "-s", "100", "127.0.0.1"}, network: n, ns: ns, signals: map[time.Duration]int{1500 * time.Millisecond: shell.SIGINT},
			stdout: "PING 127.0.0.1 (127.0.0.1): 100 data bytes\n108 bytes from 127.0.0.1: seq=0 ttl=64 time=0.045 ms\n108 bytes from 127.0.0.1: seq=1 ttl=64 time=0.045 ms\n" +
				stats("127.0.0.1", 2, 2, "0%") + "round-trip min/avg/max = 0.045/0.045/0.045 ms\n", elapsed: 1500 * time.Millisecond},
		{name: "unknown host", argv: []string{"ping", "-c1", "nosuchhost.invalid"}, files: files, network: n, ns: ns,
			stderr: "ping: bad address 'nosuchhost.invalid'\n", status: 1},
		{name: "no host", argv: []string{"ping"}, stderr: usage("ping"), status: 1},
		{name: "-q and -v", argv: []string{"ping", "-q", "-v", "x"}, stderr: usage("ping"), status: 1},
		{name: "bad count", argv: []string{"ping", "-c", "x", "y"}, stderr: "ping: invalid number 'x'\n", status: 1},
		{name: "bad size", argv: []string{"ping", "-s", "70000", "y"}, stderr: "ping: number 70000 is not in 0..65535 range\n", status: 1},
	})
}
