package agnhost

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// Porter's environment variables: SERVE_PORT_N (or SERVE_TCP_PORT_N) serves the value over
// HTTP on port N, SERVE_UDP_PORT_N over UDP, SERVE_TLS_PORT_N over HTTPS, SERVE_SCTP_PORT_N
// over SCTP.
const (
	porterPort = "SERVE_PORT_"
	porterTCP  = "SERVE_TCP_PORT_"
	porterUDP  = "SERVE_UDP_PORT_"
	porterTLS  = "SERVE_TLS_PORT_"
	porterSCTP = "SERVE_SCTP_PORT_"
)

// newPorter is `agnhost porter`: every port its environment names answers the variable's
// value, to any request (as JSON with the method under --json-response). TLS is not
// simulated (a TLS port answers plain HTTP once its certificate files exist), nor SCTP
// (nothing listens; the log says it started, as upstream's). With nothing to serve it
// dies as Go does when every goroutine sleeps.
func newPorter(r *run) *cobra.Command {
	var jsonResponse bool
	cmd := &cobra.Command{
		Use:   "porter",
		Short: "Serves requested data on ports specified in ENV variables",
		Long:  "Serves requested data on ports specified in environment variables of the form SERVE_{PORT,TCP_PORT,UDP_PORT,TLS_PORT,SCTP_PORT}_[NNNN].",
		Args:  cobra.MaximumNArgs(0),
		Run: func(cmd *cobra.Command, args []string) {
			p := r.p
			serving := 0
			for _, kv := range p.Environ() {
				key, value, _ := strings.Cut(kv, "=")
				switch {
				case strings.HasPrefix(key, porterPort):
					serving += porterHTTP(p, strings.TrimPrefix(key, porterPort), value, jsonResponse, "")
				case strings.HasPrefix(key, porterTCP):
					serving += porterHTTP(p, strings.TrimPrefix(key, porterTCP), value, jsonResponse, "")
				case strings.HasPrefix(key, porterUDP):
					port := strings.TrimPrefix(key, porterUDP)
					n, err := strconv.Atoi(port)
					if err != nil || n < 0 || n > 65535 {
						goFatal(p, "UDP: failed to resolve address: address 0.0.0.0:%s: invalid port", port)
					}
					answer := []byte(value)
					if err := p.Listen("udp", n, simnetDatagram(func([]byte, time.Time) []byte { return answer })); err != nil {
						goFatal(p, "UDP: failed to listen on port %s: %v", port, err)
					}
					goLog(p, "Started UDP server on port %s", port)
					serving++
				case strings.HasPrefix(key, porterSCTP):
					goLog(p, "Started SCTP server")
					serving++
				case strings.HasPrefix(key, porterTLS):
					cert, certKey := p.Getenv("CERT_FILE"), p.Getenv("KEY_FILE")
					if cert == "" {
						cert = "localhost.crt"
					}
					if certKey == "" {
						certKey = "localhost.key"
					}
					tls := fmt.Sprintf(" with certFile=%q, keyFile=%q", cert, certKey)
					for _, f := range []string{cert, certKey} {
						if _, err := p.FS().ReadFile(p.Abs(f)); err != nil {
							goLog(p, "tls server on port %q%s failed: open %s: %v", strings.TrimPrefix(key, porterTLS), tls, f, goErrno(err))
							tls = "-"
							break
						}
					}
					if tls != "-" {
						serving += porterHTTP(p, strings.TrimPrefix(key, porterTLS), value, jsonResponse, tls)
					}
				}
			}
			if serving == 0 {
				fmt.Fprint(p.Stderr(), "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [select (no cases)]:\n")
				p.Exit(2)
			}
			untilKilled(p)
		},
	}
	cmd.Flags().BoolVar(&jsonResponse, "json-response", false, "Responds to requests with a json response that includes the default value with the http.Request Method")
	return cmd
}

// porterHTTP serves value over HTTP on port, or logs why it cannot as upstream's
// goroutine does; it returns how many servers it started (0 or 1). tls is what the log
// line of a TLS port adds.
func porterHTTP(p *shell.Proc, port, value string, jsonResponse bool, tls string) int {
	what := "server"
	if tls != "" {
		what = "tls server"
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		goLog(p, "%s on port %q%s failed: listen tcp: lookup tcp/%s: unknown port", what, port, tls, port)
		return 0
	}
	h := &mux{root: func(req *simnet.Request) *simnet.Response {
		if !jsonResponse {
			return text(value)
		}
		method := req.Method
		if method == "" {
			method = http.MethodGet
		}
		j, _ := json.Marshal(struct{ Method, Body string }{method, value})
		resp := text(string(j))
		resp.Header.Set("Content-Type", "application/json")
		return resp
	}}
	if err := p.Listen("tcp", n, h); err != nil {
		goLog(p, "%s on port %q%s failed: listen tcp 0.0.0.0:%s: bind: address already in use", what, port, tls, port)
		return 0
	}
	return 1
}
