package agnhost

import (
	"net/http"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// newServeHostname is `agnhost serve-hostname`, the backend of the Service specs: it
// answers its host name over HTTP (the default), raw TCP (--tcp: written as soon as a
// connection is accepted) or UDP (--udp) on --port (9376). On SIGTERM it says so, keeps
// serving for 60 seconds ("Awaiting pod deletion.") and exits 0.
func newServeHostname(r *run) *cobra.Command {
	var doTCP, doUDP, doHTTP, doClose bool
	var port int
	cmd := &cobra.Command{
		Use:   "serve-hostname",
		Short: "Serves the hostname",
		Long:  "Serves the hostname through HTTP / TCP / UDP on the given port.",
		Args:  cobra.MaximumNArgs(0),
		Run: func(cmd *cobra.Command, args []string) {
			p := r.p
			if doHTTP && (doTCP || doUDP) {
				goFatal(p, "Can't server TCP/UDP mode and HTTP mode at the same time")
			}
			p.Trap(shell.SIGTERM, true)
			hostname := []byte(p.Hostname())
			raw := simnetDatagram(func([]byte, time.Time) []byte { return hostname })
			if doTCP {
				if err := p.Listen("tcp", port, raw); err != nil {
					goFatal(p, "Error from net.Listen(): %v", err)
				}
			}
			if doUDP {
				if err := p.Listen("udp", port, raw); err != nil {
					goFatal(p, "Error from ListenUDP(): %v", err)
				}
			}
			var httpErr error
			if doHTTP {
				h := &mux{root: func(*simnet.Request) *simnet.Response {
					resp := text(string(hostname))
					if doClose {
						resp.Header = http.Header{"Connection": {"close"}}
					}
					return resp
				}}
				httpErr = p.Listen("tcp", port, h)
			}
			goLog(p, "Serving on port %d.\n", port)
			if httpErr != nil {
				// ListenAndServe runs in a goroutine upstream: its failure comes after.
				goFatal(p, "%v", httpErr)
			}
			for p.Sleep(idleWake) || !slices.Contains(p.Pending(), shell.SIGTERM) {
			}
			goLog(p, "Shutting down after receiving signal: terminated.\n")
			goLog(p, "Awaiting pod deletion.\n")
			sleepFull(p, 60*time.Second)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&doTCP, "tcp", false, "Serve raw over TCP.")
	fl.BoolVar(&doUDP, "udp", false, "Serve raw over UDP.")
	fl.BoolVar(&doHTTP, "http", true, "Serve HTTP.")
	fl.BoolVar(&doClose, "close", false, "Close connection per each HTTP request.")
	fl.IntVar(&port, "port", 9376, "Port number.")
	return cmd
}
