package programs

import (
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
)

type nopHandler struct{}

func (nopHandler) HTTP(*simnet.Request) *simnet.Response { return &simnet.Response{} }
func (nopHandler) Datagram([]byte, time.Time) []byte     { return nil }

// netstat lists what listens in the pod's network namespace.
func TestNetstat(t *testing.T) {
	n, ns := clusterNet()
	if _, err := ns.Listen("tcp", 8080, nopHandler{}); err != nil { // another container's server
		t.Fatal(err)
	}
	if _, err := ns.Listen("udp", 53, nopHandler{}); err != nil {
		t.Fatal(err)
	}
	head := "Proto Recv-Q Send-Q Local Address           Foreign Address         State       \n"
	tcp := "tcp        0      0 0.0.0.0:8080            0.0.0.0:*               LISTEN      \n"
	udp := "udp        0      0 0.0.0.0:53              0.0.0.0:*                           \n"
	unix := "Active UNIX domain sockets (only servers)\nProto RefCnt Flags       Type       State         I-Node Path\n"
	routes := "Kernel IP routing table\nDestination     Gateway         Genmask         Flags   MSS Window  irtt Iface\n"
	runCases(t, []tc{
		{name: "connections", argv: []string{"netstat", "-tn"}, network: n, ns: ns,
			stdout: "Active Internet connections (w/o servers)\n" + head},
		{name: "-l", argv: []string{"netstat", "-l"}, network: n, ns: ns,
			stdout: "Active Internet connections (only servers)\n" + head + tcp + udp + unix},
		{name: "-ltn", argv: []string{"netstat", "-ltn"}, network: n, ns: ns,
			stdout: "Active Internet connections (only servers)\n" + head + tcp},
		{name: "-aun", argv: []string{"netstat", "-aun"}, network: n, ns: ns,
			stdout: "Active Internet connections (servers and established)\n" + head + udp},
		{name: "-ltp", argv: []string{"netstat", "-ltp"}, network: n, ns: ns,
			stdout: "Active Internet connections (only servers)\n" + strings.TrimSuffix(head, "\n") + "PID/Program name    \n" + strings.TrimSuffix(tcp, "\n") + "-\n"},
		{name: "service names", argv: []string{"netstat", "-lt"}, network: n, ns: ns, files: map[string]string{"/etc/services": "http-alt\t8080/tcp\twebcache\n"},
			stdout: "Active Internet connections (only servers)\n" + head + strings.Replace(tcp, "0.0.0.0:8080    ", "0.0.0.0:http-alt", 1)},
		{name: "-r", argv: []string{"netstat", "-r"}, network: n, ns: ns,
			stdout: routes + "default         10.244.0.1      0.0.0.0         UG        0 0          0 eth0\n10.244.0.0      *               255.255.0.0     U         0 0          0 eth0\n"},
		{name: "-rn", argv: []string{"netstat", "-rn"}, network: n, ns: ns,
			stdout: routes + "0.0.0.0         10.244.0.1      0.0.0.0         UG        0 0          0 eth0\n10.244.0.0      0.0.0.0         255.255.0.0     U         0 0          0 eth0\n"},
		{name: "bad option", argv: []string{"netstat", "-Z"}, stderr: "netstat: invalid option -- 'Z'\n" + usage("netstat"), status: 1},
	})
}

// netstat -p names the container's own listening processes.
func TestNetstatOwnProcess(t *testing.T) {
	n, ns := clusterNet()
	v := newFS(t, nil)
	v.WriteFile("/bin/srv", nil, 0o755, false, 0, 0)
	v.SetProgram("/bin/srv", "srv")
	srv := func(p *shell.Proc) int {
		if err := p.Listen("tcp", 80, nopHandler{}); err != nil {
			return 1
		}
		return p.SleepThenExit(time.Hour, 0)
	}
	m := shell.NewMachine(shell.Config{FS: v, Hostname: "pod-1", Network: n, Net: ns, Programs: func(name string) shell.Program {
		if name == "srv" {
			return srv
		}
		return Lookup(name)
	}})
	if _, err := m.Start(shell.Spec{Argv: []string{"/bin/srv"}, Env: []string{"PATH=/bin"}}); err != nil {
		t.Fatal(err)
	}
	now := epoch.UnixNano()
	m.Step(now)
	var out strings.Builder
	status := -1
	if _, err := m.Start(shell.Spec{Argv: []string{"netstat", "-ltnp"}, Env: []string{"PATH=/bin"}, Stdout: &out, OnExit: func(s int) { status = s }}); err != nil {
		t.Fatal(err)
	}
	m.Step(now)
	want := "Active Internet connections (only servers)\nProto Recv-Q Send-Q Local Address           Foreign Address         State       PID/Program name    \n" +
		"tcp        0      0 0.0.0.0:80              0.0.0.0:*               LISTEN      1/srv\n"
	if status != 0 || out.String() != want {
		t.Errorf("netstat -ltnp: %d\n%q\nwant\n%q", status, out.String(), want)
	}
}
