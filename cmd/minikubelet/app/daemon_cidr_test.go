package app

import "testing"

// TestNodePodCIDR: the nodes of one process get pod ranges that do not overlap.
func TestNodePodCIDR(t *testing.T) {
	for i, want := range map[int]string{0: "10.64.0.0/20", 1: "10.64.16.0/20", 16: "10.65.0.0/20", 1023: "10.127.240.0/20"} {
		if got := nodePodCIDR(i); got != want {
			t.Errorf("node %d: %s, want %s", i, got, want)
		}
	}
}
