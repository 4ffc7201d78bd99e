package prober

import (
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// redirector answers /healthz with status, /loop with a redirect to itself, and /to?loc=X
// with a redirect to X (the body Go's http.Redirect writes).
type redirector struct{ status int }

func (r redirector) HTTP(req *simnet.Request) *simnet.Response {
	switch req.Path() {
	case "/healthz":
		return &simnet.Response{Status: r.status, Header: http.Header{}}
	case "/loop":
		return &simnet.Response{Status: http.StatusFound, Header: http.Header{"Location": {"/loop"}}}
	}
	var loc string
	if v := req.Query()["loc"]; len(v) > 0 {
		loc = v[0]
	}
	return &simnet.Response{Status: http.StatusFound, Header: http.Header{"Location": {loc}},
		Body: []byte("<a href=\"" + loc + "\">Found</a>.\n\n")}
}

func (redirector) Datagram([]byte, time.Time) []byte { return nil }

// TestHTTPProbeRedirects: as the kubelet's HTTP prober, a redirect to the same host is
// followed (so a failing target fails the probe), one to another host passes with a
// ProbeWarning event, and ten redirects fail it.
func TestHTTPProbeRedirects(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		status    int
		unhealthy string
		warning   string
	}{
		{"a local redirect is followed", "/to?loc=%2Fhealthz", http.StatusInternalServerError,
			"Liveness probe failed: HTTP probe failed with statuscode: 500", ""},
		{"a local redirect to a healthy target", "/to?loc=%2Fhealthz", http.StatusOK, "", ""},
		{"a non-local redirect passes with a warning", "/to?loc=http%3A%2F%2F0.0.0.0%2F", http.StatusInternalServerError,
			"", "Liveness probe warning: Probe terminated redirects, Response body: <a href=\"http://0.0.0.0/\">Found</a>.\n\n"},
		{"ten redirects fail", "/loop", http.StatusOK,
			`Liveness probe failed: Get "http://10.88.0.5:8080/loop": stopped after 10 redirects`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			network := simnet.New()
			ns := network.NewNamespace("10.88.0.5")
			defer ns.Close()
			if _, err := ns.Listen("tcp", 8080, redirector{tt.status}); err != nil {
				t.Fatal(err)
			}
			e := newEnvWith(t, false, func(c *Config) { c.Network = network })
			probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: tt.path, Port: intstr.FromInt32(8080)}},
				PeriodSeconds: 10, FailureThreshold: 1}
			p := pod("", probe, nil, nil)
			e.running(p, "c1", 0, true)
			e.m.AddPod(p)
			e.run(5 * time.Second)
			check := func(reason, want string) {
				t.Helper()
				msgs := e.eventMessages(reason)
				if want == "" && len(msgs) != 0 || want != "" && (len(msgs) != 1 || msgs[0] != want) {
					t.Errorf("%s events %q, want %q", reason, msgs, want)
				}
			}
			check(EventUnhealthy, tt.unhealthy)
			check(EventProbeWarning, tt.warning)
		})
	}
}
