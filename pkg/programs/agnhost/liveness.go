package agnhost

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// newLiveness is `agnhost liveness`, the server of the liveness-probe specs: on port 8080,
// /healthz answers 200 "ok" for the first 10 seconds after it started, then 500 "error:
// <seconds>"; /started says how long it has run; /redirect?loc= redirects. The endpoints
// that sleep or break the connection midway are not simulated (a handler cannot wait):
// they are not found. It handles no signal: SIGTERM kills it (143).
func newLiveness(r *run) *cobra.Command {
	return &cobra.Command{
		Use:   "liveness",
		Short: "Starts a server that is alive for 10 seconds",
		Long:  "A simple server that is alive for 10 seconds, then reports unhealthy for the rest of its (hopefully) short existence.",
		Args:  cobra.MaximumNArgs(0),
		Run: func(cmd *cobra.Command, args []string) {
			p := r.p
			if err := p.Listen("tcp", 8080, livenessServer(p.Now())); err != nil {
				goFatal(p, "%v", err)
			}
			untilKilled(p)
		},
	}
}

// livenessServer is liveness's handlers, for a server that started at started.
func livenessServer(started time.Time) *mux {
	return &mux{routes: map[string]handlerFunc{
		"/started": func(req *simnet.Request) *simnet.Response {
			return text(since(req, started).String())
		},
		"/healthz": func(req *simnet.Request) *simnet.Response {
			d := since(req, started)
			if d.Seconds() > 10 {
				return &simnet.Response{Status: http.StatusInternalServerError, Body: []byte(fmt.Sprintf("error: %v", d.Seconds()))}
			}
			return text("ok")
		},
		"/redirect": func(req *simnet.Request) *simnet.Response {
			raw := formValue(req, "loc")
			loc, err := url.QueryUnescape(raw)
			if err != nil {
				return httpError(http.StatusBadRequest, fmt.Sprintf("invalid redirect: %s", strconv.Quote(raw)))
			}
			return redirect(req, loc, http.StatusFound)
		},
	}}
}
