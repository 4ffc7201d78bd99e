package scratch

import "testing"

func TestMap(t *testing.T) {
	full := func(n int) map[int]bool {
		m := map[int]bool{}
		for i := 0; i < n; i++ {
			m[i] = true
		}
		return m
	}
	tests := []struct {
		name     string
		m        map[int]bool
		n        int
		wantSame bool
	}{
		{name: "none yet: a new map", m: nil, n: 10},
		{name: "about the same size: reused", m: full(100), n: 100, wantSame: true},
		{name: "growing: reused", m: full(100), n: 1000, wantSame: true},
		{name: "shrunk a lot: a new map", m: full(10000), n: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Map(tt.m, tt.n)
			if got == nil || len(got) != 0 {
				t.Fatalf("Map = %v, want an empty map", got)
			}
			got[-1] = true // the same map shows the entry through tt.m
			if same := tt.m != nil && tt.m[-1]; same != tt.wantSame {
				t.Errorf("reused = %v, want %v", same, tt.wantSame)
			}
		})
	}
}
