package events

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestStoreDedupesOrdersAndBounds(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(100, 0))
	s := NewStore(clk, "node", 3)
	node := NodeRef("node")
	s.Eventf(node, v1.EventTypeNormal, "NodeReady", "Node %s status is now: %s", "node", "NodeReady")
	clk.Step(time.Second)
	s.Eventf(node, v1.EventTypeNormal, "NodeNotReady", "Node node status is now: NodeNotReady")
	clk.Step(time.Second)
	s.Eventf(node, v1.EventTypeNormal, "NodeReady", "Node %s status is now: %s", "node", "NodeReady")

	got := s.List()
	if len(got) != 2 {
		t.Fatalf("len = %d, want 2 (repeat folded): %+v", len(got), got)
	}
	if got[1].Reason != "NodeReady" || got[1].Count != 2 || !got[1].LastTimestamp.Time.Equal(time.Unix(102, 0)) || !got[1].FirstTimestamp.Time.Equal(time.Unix(100, 0)) {
		t.Errorf("folded event = %+v, want NodeReady count 2 last at 102 first at 100, newest last", got[1])
	}
	if got[0].Message != "Node node status is now: NodeNotReady" || got[0].Source.Host != "node" {
		t.Errorf("first = %+v", got[0])
	}
	for i := 0; i < 5; i++ {
		s.Eventf(&v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}, v1.EventTypeWarning, "Failed", "attempt %d", i)
	}
	got = s.List()
	if len(got) != 3 || got[2].Message != "attempt 4" || got[0].Message != "attempt 2" {
		t.Fatalf("bounded list = %v, want the 3 newest attempts", got)
	}
	// dedupe still works after trimming
	s.Eventf(&v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}, v1.EventTypeWarning, "Failed", "attempt 3")
	got = s.List()
	if len(got) != 3 || got[2].Message != "attempt 3" || got[2].Count != 2 {
		t.Fatalf("after repeat = %+v", got)
	}
}
