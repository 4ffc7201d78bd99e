package simnet

import (
	"errors"
	"net/http"
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
	r := &Request{Target: "/dial?request=hostname&host=10.88.0.2&port=8080&msg=a+b%21"}
	q := r.Query()
	if r.Path() != "/dial" || q["request"][0] != "hostname" || q["port"][0] != "8080" || q["msg"][0] != "a b!" {
		t.Errorf("path %q query %v", r.Path(), q)
	}
}
