package memcg

import "testing"

func TestGroupLimit(t *testing.T) {
	r := NewRoot(0)
	kills := 0
	g := r.NewGroup(100, 0, func() { kills++ })
	steps := []struct {
		charge  int64
		ok      bool
		used    int64
		killed  bool
		rootUse int64
	}{
		{60, true, 60, false, 60},
		{40, true, 100, false, 100},
		{-30, true, 70, false, 70},
		{31, false, 0, true, 0}, // past the limit: killed, holds nothing
		{1, false, 0, true, 0},  // a killed group's charges fail
	}
	for i, s := range steps {
		if ok := g.Charge(s.charge); ok != s.ok || g.Used() != s.used || g.Killed() != s.killed || r.Used() != s.rootUse {
			t.Fatalf("step %d: Charge(%d) = %v, used %d, killed %v, root %d; want %v, %d, %v, %d",
				i, s.charge, ok, g.Used(), g.Killed(), r.Used(), s.ok, s.used, s.killed, s.rootUse)
		}
	}
	if kills != 1 || g.Peak() != 100 {
		t.Errorf("kills %d, peak %d; want 1, 100", kills, g.Peak())
	}
}

func TestRootOOMKillsByBadness(t *testing.T) {
	tests := []struct {
		name   string
		groups []struct{ used, adj int64 }
		charge int // the group charging
		n      int64
		killed []int
		ok     bool
	}{
		{
			name:   "BestEffort before Guaranteed at equal use",
			groups: []struct{ used, adj int64 }{{300, GuaranteedOOMScoreAdj}, {300, BestEffortOOMScoreAdj}, {100, 500}},
			charge: 2, n: 400, killed: []int{1}, ok: true,
		},
		{
			name:   "the charger is the worst: it dies",
			groups: []struct{ used, adj int64 }{{100, GuaranteedOOMScoreAdj}, {800, BestEffortOOMScoreAdj}},
			charge: 1, n: 200, killed: []int{1}, ok: false,
		},
		{
			name:   "several victims until the charge fits",
			groups: []struct{ used, adj int64 }{{300, 0}, {300, 0}, {300, 0}, {50, 0}},
			charge: 3, n: 651, killed: []int{0, 1, 2}, ok: true,
		},
		{
			name:   "ties go to the first made",
			groups: []struct{ used, adj int64 }{{400, 0}, {400, 0}, {0, 0}},
			charge: 2, n: 300, killed: []int{0}, ok: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRoot(1000)
			var gs []*Group
			var order []int
			for i, s := range tt.groups {
				g := r.NewGroup(0, s.adj, func() { order = append(order, i) })
				if !g.Charge(s.used) {
					t.Fatalf("setup charge %d refused", i)
				}
				gs = append(gs, g)
			}
			if ok := gs[tt.charge].Charge(tt.n); ok != tt.ok {
				t.Fatalf("Charge = %v, want %v", ok, tt.ok)
			}
			if len(order) != len(tt.killed) {
				t.Fatalf("killed %v, want %v", order, tt.killed)
			}
			for i := range order {
				if order[i] != tt.killed[i] {
					t.Fatalf("killed %v, want %v", order, tt.killed)
				}
			}
			if r.Used() > r.Limit() {
				t.Errorf("root uses %d over its limit %d", r.Used(), r.Limit())
			}
		})
	}
}

func TestReleaseKeepsOrder(t *testing.T) {
	r := NewRoot(100)
	var killed []string
	a := r.NewGroup(0, 0, func() { killed = append(killed, "a") })
	b := r.NewGroup(0, 0, func() { killed = append(killed, "b") })
	c := r.NewGroup(0, 0, func() { killed = append(killed, "c") })
	a.Charge(10)
	b.Charge(40)
	c.Charge(40)
	a.Release()
	a.Release() // twice is once
	if r.Used() != 80 || a.Charge(1) {
		t.Fatalf("after release: root %d, released group charged", r.Used())
	}
	d := r.NewGroup(0, 0, nil)
	if !d.Charge(60) { // b and c tie at 40: b, made first, goes
		t.Fatal("charge refused")
	}
	if len(killed) != 1 || killed[0] != "b" || r.Used() != 100 {
		t.Errorf("killed %v, root %d; want [b], 100", killed, r.Used())
	}
}

func TestOOMScoreAdj(t *testing.T) {
	const capacity = 8 << 30
	tests := []struct {
		qos      string
		critical bool
		request  int64
		want     int64
	}{
		{"Guaranteed", false, 1 << 30, -997},
		{"BestEffort", false, 0, 1000},
		{"BestEffort", true, 0, -997},
		{"Burstable", false, 1 << 30, 875},
		{"Burstable", false, 0, 999},       // 1000 would be BestEffort's
		{"Burstable", false, capacity, 3},  // at least 3
		{"Burstable", false, 4 << 30, 500}, // half the node
	}
	for _, tt := range tests {
		if got := OOMScoreAdj(tt.qos, tt.critical, tt.request, capacity); got != tt.want {
			t.Errorf("OOMScoreAdj(%s, %v, %d) = %d, want %d", tt.qos, tt.critical, tt.request, got, tt.want)
		}
	}
}

func TestSetLimit(t *testing.T) {
	tests := []struct {
		name       string
		used       int64
		limit      int64
		wantOK     bool
		wantKilled bool
		wantUsed   int64
	}{
		{"raise", 50, 200, true, false, 50},
		{"lower above use", 50, 60, true, false, 50},
		{"lower below use", 50, 40, false, true, 0},
		{"remove", 50, 0, true, false, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRoot(0)
			kills := 0
			g := r.NewGroup(100, 0, func() { kills++ })
			if !g.Charge(tt.used) {
				t.Fatal("Charge failed")
			}
			if got := g.SetLimit(tt.limit); got != tt.wantOK {
				t.Errorf("SetLimit(%d) = %v, want %v", tt.limit, got, tt.wantOK)
			}
			if g.Killed() != tt.wantKilled || (kills == 1) != tt.wantKilled || g.Used() != tt.wantUsed || r.Used() != tt.wantUsed {
				t.Errorf("killed %v (onKill %d), used %d, root %d; want killed %v, used %d", g.Killed(), kills, g.Used(), r.Used(), tt.wantKilled, tt.wantUsed)
			}
			if !tt.wantKilled && g.Limit() != tt.limit {
				t.Errorf("Limit() = %d, want %d", g.Limit(), tt.limit)
			}
		})
	}
}
