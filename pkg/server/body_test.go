package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBodiesAreBounded: every route, on both ports, refuses a body beyond
// Limits.MaxBodyBytes with 413 naming the limit, whether the length is declared or the
// body is chunked; nothing of an over-limit fault is stored, and a body within the limit
// is served as before.
func TestBodiesAreBounded(t *testing.T) {
	f := newFixture(t, true, nil)
	secure := secureServer(t, &fakeStreams{}, true, nil, 0)
	limit := DefaultLimits.MaxBodyBytes
	fault := `{"method":"Status","type":"hang"}`
	// padded is a valid fault spec, padded with spaces to n bytes.
	padded := func(n int64) string { return fault + strings.Repeat(" ", int(n)-len(fault)) }
	// chunked hides the length, so the request is sent chunked (ContentLength -1).
	type chunked struct{ io.Reader }
	tests := []struct {
		name    string
		handler http.Handler
		method  string
		target  string
		body    io.Reader
		want    int
	}{
		{"fault at the limit", f.handler, "POST", "/debug/faults", strings.NewReader(padded(limit)), http.StatusCreated},
		{"fault declared over the limit", f.handler, "POST", "/debug/faults", strings.NewReader(padded(limit + 1)), http.StatusRequestEntityTooLarge},
		{"fault chunked over the limit", f.handler, "POST", "/debug/faults", chunked{strings.NewReader(padded(limit + 1))}, http.StatusRequestEntityTooLarge},
		{"a GET with a huge body", f.handler, "GET", "/healthz", strings.NewReader(strings.Repeat("x", int(limit)+1)), http.StatusRequestEntityTooLarge},
		{"an unknown path with a huge body", f.handler, "PUT", "/nope", strings.NewReader(strings.Repeat("x", int(limit)+1)), http.StatusRequestEntityTooLarge},
		// exec reads its query with FormValue, which parses a form body: bounded too.
		{"exec with a huge form body", secure.SecureHandler(), "POST", "/exec/default/web/app?command=ls&output=1", strings.NewReader("a=" + strings.Repeat("x", int(limit))), http.StatusRequestEntityTooLarge},
		{"the secure port", secure.SecureHandler(), "POST", "/debug/faults", strings.NewReader(padded(limit + 1)), http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.faults.Faults())
			req := httptest.NewRequest(tt.method, tt.target, tt.body)
			if tt.target != "/debug/faults" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			rec := httptest.NewRecorder()
			tt.handler.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.target, rec.Code, rec.Body.String(), tt.want)
			}
			if tt.want != http.StatusRequestEntityTooLarge {
				return
			}
			if want := fmt.Sprintf("the limit is %d bytes", limit); !strings.Contains(rec.Body.String(), want) {
				t.Errorf("413 body %q does not name the limit (%q)", rec.Body.String(), want)
			}
			if n := len(f.faults.Faults()); n != before {
				t.Errorf("%d faults stored by an over-limit request", n-before)
			}
		})
	}
}
