package kuberuntime

import (
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestBackoff(t *testing.T) {
	clk := testclock.NewFakeClock(epoch)
	b := NewBackoff(clk, 10*time.Second, 300*time.Second)
	const id = "pod_app"
	if b.IsInBackOffSinceUpdate(id, clk.Now()) || b.Get(id) != 0 {
		t.Fatal("an unknown key is not backing off")
	}
	var got []time.Duration
	for i := 0; i < 7; i++ {
		b.Next(id, clk.Now())
		got = append(got, b.Get(id))
	}
	want := []time.Duration{10, 20, 40, 80, 160, 300, 300}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("delays %v, want %v seconds", got, want)
		}
	}
	clk.Step(299 * time.Second)
	if !b.IsInBackOffSinceUpdate(id, clk.Now()) {
		t.Error("not in back-off 299s after a 300s delay started")
	}
	clk.Step(time.Second)
	if b.IsInBackOffSinceUpdate(id, clk.Now()) {
		t.Error("still in back-off once the delay passed")
	}
	// quiet for more than 2 x max: the next failure starts over, GC forgets the key
	clk.Step(10 * time.Minute)
	b.GC()
	if b.Len() != 0 {
		t.Errorf("GC kept %d expired keys", b.Len())
	}
	b.Next(id, clk.Now())
	if b.Get(id) != 10*time.Second {
		t.Errorf("delay after expiry = %v, want 10s", b.Get(id))
	}
}
