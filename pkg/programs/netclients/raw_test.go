package netclients

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/simnet"
)

// What nc users pipe in is read as a Go server or client reads it: what they refuse is no
// HTTP, and goes to the server's Datagram.
func TestParseRawRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		want *simnet.Request // nil: not HTTP
	}{
		{"minimal", "GET / HTTP/1.0\r\n\r\n", &simnet.Request{Method: "GET", Target: "/", Header: http.Header{}, Body: []byte{}}},
		{"host and headers, bare newlines", "GET /echo?msg=hi HTTP/1.1\nHost: web:8080\nX-A: 1\n\n",
			&simnet.Request{Method: "GET", Target: "/echo?msg=hi", Host: "web:8080", Header: http.Header{"X-A": {"1"}}, Body: []byte{}}},
		{"body by Content-Length, the rest dropped", "POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcdef",
			&simnet.Request{Method: "POST", Target: "/p", Host: "h", Header: http.Header{"Content-Length": {"3"}}, Body: []byte("abc")}},
		{"no length, no body", "POST /p HTTP/1.1\r\nHost: h\r\n\r\nabc",
			&simnet.Request{Method: "POST", Target: "/p", Host: "h", Header: http.Header{}, Body: []byte{}}},
		{"chunked", "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
			&simnet.Request{Method: "POST", Target: "/p", Host: "h", Header: http.Header{}, Body: []byte("abc")}},
		{"absolute target", "GET http://example:81/x?y=1 HTTP/1.1\r\n\r\n",
			&simnet.Request{Method: "GET", Target: "/x?y=1", Host: "example:81", Header: http.Header{}, Body: []byte{}}},
		{"cut off before the blank line", "GET / HTTP/1.1\r\nHost: h\r\n", nil},
		{"only the request line", "GET / HTTP/1.0\n", nil},
		{"a header without a colon", "GET / HTTP/1.1\r\nbogus\r\n\r\n", nil},
		{"not HTTP", "hostname\n", nil},
		{"HTTP/2", "GET / HTTP/2.0\r\n\r\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParsed(t, parseRawRequest, tc.raw, tc.want) })
	}
}

func TestParseRawResponse(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		want *simnet.Response
	}{
		{"to the end", "HTTP/1.1 200 OK\r\nX: y\r\n\r\nhello", &simnet.Response{Status: 200, Header: http.Header{"X": {"y"}}, Body: []byte("hello")}},
		{"by Content-Length", "HTTP/1.0 404 Not Found\r\nContent-Length: 2\r\n\r\nnope",
			&simnet.Response{Status: 404, Header: http.Header{"Content-Length": {"2"}}, Body: []byte("no")}},
		{"no reason phrase", "HTTP/1.1 204\r\n\r\n", &simnet.Response{Status: 204, Header: http.Header{}, Body: []byte{}}},
		{"a status that is no number", "HTTP/1.1 OK\r\n\r\n", nil},
		{"not HTTP", "hello\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) { checkParsed(t, parseRawResponse, tc.raw, tc.want) })
	}
}

// checkParsed checks what parse makes of raw: want, or nothing (not HTTP) when want is nil.
func checkParsed[T any](t *testing.T, parse func([]byte) (*T, bool), raw string, want *T) {
	t.Helper()
	got, ok := parse([]byte(raw))
	if want == nil {
		if ok {
			t.Fatalf("taken for HTTP: %+v", got)
		}
		return
	}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v (%v), want %+v", got, ok, want)
	}
}
