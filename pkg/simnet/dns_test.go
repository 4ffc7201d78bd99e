package simnet

import (
	"slices"
	"testing"
	"time"
)

type nop struct{}

func (nop) HTTP(*Request) *Response           { return &Response{} }
func (nop) Datagram([]byte, time.Time) []byte { return nil }

// The cluster DNS answers at its servers only, from its records; a name it does not know
// is told to the feed.
func TestDNS(t *testing.T) {
	n := New()
	pod := n.NewNamespace("10.244.0.7")
	n.SetDNSServers("10.96.0.10")
	n.SetRecord("My-Svc.default.svc.cluster.local.", "10.96.5.5")
	var missed []string
	n.OnDNSMiss(func(name string) { missed = append(missed, name) })

	if a, ok := n.QueryDNS(pod, "10.96.0.10", "my-svc.default.svc.cluster.local", false); !ok || !a.Found || !slices.Equal(a.Addrs, []string{"10.96.5.5"}) {
		t.Errorf("A my-svc: %+v %v", a, ok)
	}
	if a, ok := n.QueryDNS(pod, "10.96.0.10", "nosuch.default.svc.cluster.local", false); !ok || a.Found {
		t.Errorf("A nosuch: %+v %v, want NXDOMAIN", a, ok)
	}
	if !slices.Equal(missed, []string{"nosuch.default.svc.cluster.local"}) {
		t.Errorf("misses told: %q", missed)
	}
	if _, ok := n.QueryDNS(pod, "10.1.2.3", "my-svc.default.svc.cluster.local", false); ok {
		t.Error("an address that is no DNS server answered")
	}
	if a, ok := n.QueryDNS(pod, "10.96.0.10", "5.5.96.10.in-addr.arpa", true); !ok || !slices.Equal(a.Names, []string{"my-svc.default.svc.cluster.local"}) {
		t.Errorf("PTR: %+v %v", a, ok)
	}
	n.SetRecord("my-svc.default.svc.cluster.local")
	if a, _ := n.QueryDNS(pod, "10.96.0.10", "my-svc.default.svc.cluster.local", false); a.Found {
		t.Error("a removed record still answers")
	}
	for ip, want := range map[string]bool{"127.0.0.1": true, "10.244.0.7": true, "10.96.0.10": true, "10.9.9.9": false} {
		if got := n.Reachable(pod, ip); got != want {
			t.Errorf("Reachable(%s) = %v, want %v", ip, got, want)
		}
	}
}

func TestListeners(t *testing.T) {
	ns := New().NewNamespace("10.244.0.7")
	for _, l := range []Port{{"udp", 53}, {"tcp", 8080}, {"tcp", 80}} {
		if _, err := ns.Listen(l.Proto, l.Port, nop{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := ns.Listeners(), []Port{{"tcp", 80}, {"tcp", 8080}, {"udp", 53}}; !slices.Equal(got, want) {
		t.Errorf("Listeners() = %v, want %v", got, want)
	}
}
