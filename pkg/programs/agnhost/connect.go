package agnhost

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/programs/netclients"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// newConnect is `agnhost connect HOST:PORT`, the client of the network policy specs: it
// exits 0 when the connection is made, else 1 after one of upstream's prefixed messages
// on stderr (UNKNOWN, DNS, REFUSED, TIMEOUT, OTHER). Over UDP it sends --udp-data and
// waits --timeout (forever without one) for an answer. SCTP is not simulated.
func newConnect(r *run) *cobra.Command {
	var timeout time.Duration
	var protocol, udpData, sctpData string
	cmd := &cobra.Command{
		Use:   "connect [host:port]",
		Short: "Attempts a TCP, UDP or SCTP connection and returns useful errors",
		Long: `Tries to open a TCP, UDP or SCTP connection to the given host and port. On error it prints an error message prefixed with a specific fixed string that test cases can check for:

* UNKNOWN - Generic/unknown (non-network) error (eg, bad arguments)
* TIMEOUT - The connection attempt timed out
* DNS - An error in DNS resolution
* REFUSED - Connection refused
* OTHER - Other networking error (eg, "no route to host")`,
		Args: cobra.ExactArgs(1),
		Run: func(cmd *cobra.Command, args []string) {
			p := r.p
			switch protocol {
			case "", "tcp":
				p.Exit(connectTCP(p, args[0]))
			case "udp":
				p.Exit(connectUDP(p, args[0], timeout, udpData))
			case "sctp":
				p.Exit(connectSCTP(p, args[0]))
			}
			fmt.Fprint(p.Stderr(), "Unsupported protocol\n", protocol)
			p.Exit(1)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&timeout, "timeout", 0, "Maximum time before returning an error")
	fl.StringVar(&protocol, "protocol", "tcp", "The protocol to use to perform the connection, can be tcp, udp or sctp")
	fl.StringVar(&udpData, "udp-data", "hostname", "The UDP payload send to the server")
	fl.StringVar(&sctpData, "sctp-data", "hostname", "The SCTP payload send to the server")
	return cmd
}

// connectAddr splits and resolves dest as upstream's net.SplitHostPort and
// net.ResolveTCPAddr do, printing their errors.
func connectAddr(p *shell.Proc, dest, proto string) (string, int, bool) {
	host, portStr, err := net.SplitHostPort(dest)
	if err != nil {
		fmt.Fprintf(p.Stderr(), "UNKNOWN: %v\n", err)
		return "", 0, false
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		fmt.Fprintf(p.Stderr(), "DNS: lookup %s/%s: unknown port\n", proto, portStr)
		return "", 0, false
	}
	if host == "" {
		return "127.0.0.1", port, true
	}
	ip, ok := netclients.Resolve(p.FS(), p.Hostname(), p.PodIP(), host)
	if !ok {
		fmt.Fprintf(p.Stderr(), "DNS: lookup %s on %s: no such host\n", host, nameserver(p.FS()))
		return "", 0, false
	}
	return ip, port, true
}

func connectTCP(p *shell.Proc, dest string) int {
	ip, port, ok := connectAddr(p, dest, "tcp")
	if !ok {
		return 1
	}
	err := p.Connect(ip, port)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, simnet.ErrRefused):
		fmt.Fprintf(p.Stderr(), "REFUSED\n")
	default:
		fmt.Fprintf(p.Stderr(), "OTHER: %v\n", err)
	}
	return 1
}

func connectUDP(p *shell.Proc, dest string, timeout time.Duration, data string) int {
	ip, port, ok := connectAddr(p, dest, "udp")
	if !ok {
		return 1
	}
	reply, err := p.Exchange("udp", ip, port, []byte(data+"\n"))
	switch {
	case err != nil:
		fmt.Fprintf(p.Stderr(), "OTHER: %v\n", err)
		return 1
	case reply == nil && timeout <= 0:
		untilKilled(p) // a read without a deadline waits forever
	case reply == nil:
		sleepFull(p, timeout)
		local := newPeers(p.PodIP()).addr(p.PodIP())
		fmt.Fprintf(p.Stderr(), "TIMEOUT: read udp %s->%s: i/o timeout\n", local, joinHostPort(ip, port))
		return 1
	case len(reply) == 0:
		fmt.Fprintf(p.Stderr(), "OTHER: No data received from the server. Cannot guarantee the server received the request.\n")
		return 1
	}
	return 0
}

func connectSCTP(p *shell.Proc, dest string) int {
	if _, _, ok := connectAddr(p, dest, "sctp"); !ok {
		return 1
	}
	fmt.Fprintf(p.Stderr(), "OTHER: sctp is not simulated by minikubelet\n")
	return 1
}
