package simnet

import (
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"testing"
	"time"
)

type echo struct{ name string }

func (e echo) HTTP(r *Request) *Response {
	return &Response{Status: http.StatusOK, Body: []byte(e.name + " " + r.Method + " " + r.Target + " from " + r.From)}
}
func (e echo) Datagram(b []byte, _ time.Time) []byte { return append([]byte(e.name+":"), b...) }

func TestNetwork(t *testing.T) {
	n := New()
	a := n.NewNamespace("10.88.0.2")
	b := n.NewNamespace("10.88.0.3")
	closeA, err := a.Listen("tcp", 8080, echo{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Listen("udp", 8081, echo{"a-udp"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Listen("tcp", 8080, echo{"again"}); !errors.Is(err, ErrInUse) {
		t.Errorf("a second listener on one port: %v, want address already in use", err)
	}
	tests := []struct {
		name    string
		from    *Namespace
		host    string
		port    int
		want    string
		wantErr string
	}{
		{"pod to pod", b, "10.88.0.2", 8080, "a GET /x from 10.88.0.3", ""},
		{"the node to a pod", nil, "10.88.0.2", 8080, "a GET /x from ", ""},
		{"localhost is the pod itself", a, "localhost", 8080, "a GET /x from 10.88.0.2", ""},
		{"a port nobody listens on", b, "10.88.0.2", 81, "", "dial tcp 10.88.0.2:81: connect: connection refused"},
		{"an IP nobody has", b, "10.88.9.9", 8080, "", "dial tcp 10.88.9.9:8080: connect: no route to host"},
		{"localhost of another pod", b, "127.0.0.1", 8080, "", "dial tcp 127.0.0.1:8080: connect: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := n.HTTP(tt.from, tt.host, tt.port, &Request{Method: "GET", Target: "/x"})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(resp.Body) != tt.want {
				t.Errorf("got %v %v, want %q", resp, err, tt.want)
			}
		})
	}
	if got, err := n.Exchange(b, "udp", "10.88.0.2", 8081, []byte("hi"), time.Time{}); err != nil || string(got) != "a-udp:hi" {
		t.Errorf("UDP exchange: %q %v", got, err)
	}
	if got, err := n.Exchange(b, "udp", "10.88.0.2", 9999, []byte("hi"), time.Time{}); err != nil || got != nil {
		t.Errorf("UDP to a closed port: %q %v, want lost without an error", got, err)
	}
	closeA()
	if err := n.Connect(b, "10.88.0.2", 8080); !errors.Is(err, ErrRefused) {
		t.Errorf("after close: %v, want refused", err)
	}
	a.SetOpaque(true)
	if err := n.Connect(b, "10.88.0.2", 1234); err != nil {
		t.Errorf("a pod running a program nobody simulates answers anything: %v", err)
	}
	a.SetOpaque(false)
	a.Close()
	if err := n.Connect(b, "10.88.0.2", 8081); !errors.Is(err, ErrNoRoute) {
		t.Errorf("a closed namespace: %v, want no route", err)
	}
}

func TestQuery(t *testing.T) {
	for _, tc := range []struct {
		target, path string
		want         url.Values
	}{
		{"/dial?request=hostname&host=10.88.0.2&port=8080&msg=a+b%21", "/dial",
			url.Values{"request": {"hostname"}, "host": {"10.88.0.2"}, "port": {"8080"}, "msg": {"a b!"}}},
		{"/echo?msg=a&msg=b", "/echo", url.Values{"msg": {"a", "b"}}},
		// As a Go server's URL.Query: a pair that does not parse is left out, the rest kept.
		{"/echo?msg=%zz&x=1", "/echo", url.Values{"x": {"1"}}},
		{"/echo?a=1;b=2&c=3", "/echo", url.Values{"c": {"3"}}},
		{"/plain", "/plain", url.Values{}},
	} {
		r := &Request{Target: tc.target}
		if got := r.Query(); r.Path() != tc.path || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: path %q query %v, want %q %v", tc.target, r.Path(), got, tc.path, tc.want)
		}
	}
}

// Listening ports are kept sorted and found by protocol and port, whatever the order they
// were opened and closed in; a stale close (the port reopened since) closes nothing.
func TestListenersOpenAndClose(t *testing.T) {
	tests := []struct {
		name  string
		open  []Port
		close []int // indexes into open, closed in this order
		want  []Port
	}{
		{"none", nil, nil, []Port{}},
		{"sorted by protocol then port", []Port{{"udp", 53}, {"tcp", 8080}, {"tcp", 80}, {"tcp", 443}}, nil,
			[]Port{{"tcp", 80}, {"tcp", 443}, {"tcp", 8080}, {"udp", 53}}},
		{"closed in the middle and at the ends", []Port{{"tcp", 1}, {"tcp", 2}, {"tcp", 3}, {"udp", 1}}, []int{1, 0, 3},
			[]Port{{"tcp", 3}}},
		{"everything closed", []Port{{"tcp", 9}, {"udp", 9}}, []int{1, 0}, []Port{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := New().NewNamespace("10.88.0.2")
			var closes []func()
			for _, p := range tt.open {
				c, err := ns.Listen(p.Proto, p.Port, echo{p.Proto})
				if err != nil {
					t.Fatal(err)
				}
				closes = append(closes, c)
			}
			for _, i := range tt.close {
				closes[i]()
			}
			if got := ns.Listeners(); !slices.Equal(got, tt.want) {
				t.Errorf("Listeners() = %v, want %v", got, tt.want)
			}
			for _, p := range tt.open {
				want := slices.Contains(tt.want, p)
				if got := ns.Listening(p.Proto, p.Port); got != want {
					t.Errorf("Listening(%s, %d) = %v, want %v", p.Proto, p.Port, got, want)
				}
			}
		})
	}
	ns := New().NewNamespace("10.88.0.2")
	stale, _ := ns.Listen("tcp", 80, echo{"first"})
	stale()
	if _, err := ns.Listen("tcp", 80, echo{"second"}); err != nil {
		t.Fatal(err)
	}
	stale()
	if !ns.Listening("tcp", 80) {
		t.Error("a stale close closed the port's new listener")
	}
}
