package kubelet

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestForwardedHTTPIsBounded: the HTTP stand-in behind port-forward answers ordinary
// requests, pipelined ones included, and closes a connection whose request header or
// body goes past maxForwardedRequestBytes instead of reading it into memory.
func TestForwardedHTTPIsBounded(t *testing.T) {
	get := "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
	post := func(n int) string {
		return fmt.Sprintf("POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", n, strings.Repeat("b", n))
	}
	tests := []struct {
		name    string
		in      string
		answers int
	}{
		{"one GET", get, 1},
		{"a POST and a GET pipelined", post(1000) + get, 2},
		{"a POST of 1 MiB", post(1 << 20), 1},
		{"a huge header line", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", 0},
		{"a body past the budget", post(2<<20) + get, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			conn := struct {
				io.Reader
				io.Writer
			}{strings.NewReader(tt.in), &out}
			if err := serveHTTP(conn, "banner"); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(out.String(), "HTTP/1.1 200 OK"); got != tt.answers {
				t.Errorf("%d answers, want %d: %.300q", got, tt.answers, out.String())
			}
		})
	}
}
