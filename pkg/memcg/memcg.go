package memcg

// A node's pods live under one cgroup (kubepods, limited to the node's allocatable memory
// when the kubelet enforces it) and each container in a cgroup of its own under it
// (limited to the container's memory limit). A program's allocation is charged to its
// container's cgroup and every cgroup above it; when a charge would take one past its
// limit, the kernel's OOM killer kills a task in that cgroup: in the container's own, the
// container itself; in kubepods, the container with the highest badness (its use plus its
// oom_score_adj's share of the cgroup's limit), which for the same use is the BestEffort
// pod's before the Burstable's before the Guaranteed's. With memory.oom.group set, as the
// kubelet sets it on cgroup v2, a kill ends every process of the container at once.
//
// Neither type is safe for concurrent use: a node's runtime charges under its own lock.

// Root is the cgroup of a node's pods (kubepods).
type Root struct {
	limit  int64 // 0: none
	used   int64
	groups []*Group // live groups, in no order
	seq    uint64   // groups made so far: the OOM killer's ties go to the first made
}

// NewRoot returns the pods' cgroup with limit bytes (0: no limit but the groups' own).
func NewRoot(limit int64) *Root { return &Root{limit: limit} }

// Limit is the root's limit (0: none).
func (r *Root) Limit() int64 { return r.limit }

// Used is what every group holds together.
func (r *Root) Used() int64 { return r.used }

// Group is a container's cgroup.
type Group struct {
	root   *Root
	limit  int64
	adj    int64
	used   int64
	peak   int64
	killed bool
	onKill func()
	index  int // in root.groups; -1 once released
	seq    uint64
}

// Min and max oom_score_adj, and the kubelet's for a Guaranteed and a BestEffort
// container (pkg/kubelet/qos: a Burstable one gets a value in between by its request).
const (
	GuaranteedOOMScoreAdj = -997
	BestEffortOOMScoreAdj = 1000
)

// NewGroup returns a container's cgroup under r with limit bytes (0: none) and the
// container's oom_score_adj. onKill, when set, is called when the OOM killer kills it,
// from inside the Charge that made it (a charge of this group or another's): it must not
// charge again.
func (r *Root) NewGroup(limit, oomScoreAdj int64, onKill func()) *Group {
	r.seq++
	g := &Group{root: r, limit: limit, adj: oomScoreAdj, onKill: onKill, index: len(r.groups), seq: r.seq}
	r.groups = append(r.groups, g)
	return g
}

// Charge accounts n more bytes held by g's processes, before they are allocated. It
// returns false when g's limit does not allow them, or the root's does not and the OOM
// killer chose g: g is then killed and holds nothing. When the root's limit is reached
// and the OOM killer chooses other groups, they are killed (their onKill called) and
// their bytes freed until g's fit. A killed group's charges all fail.
func (g *Group) Charge(n int64) bool {
	if g.killed || g.index < 0 {
		return false
	}
	if n <= 0 {
		g.Uncharge(-n)
		return true
	}
	if g.limit > 0 && g.used+n > g.limit {
		g.kill()
		return false
	}
	r := g.root
	for r.limit > 0 && r.used+n > r.limit {
		v := r.victim()
		if v == nil || v == g {
			g.kill()
			return false
		}
		v.kill()
	}
	g.used += n
	r.used += n
	g.peak = max(g.peak, g.used)
	return true
}

// SetLimit changes g's limit to limit bytes (0: none), as writing memory.max does (an
// in-place resize). When g holds more than the new limit, the kernel reclaims what it can,
// which of a program's heap is nothing, and its OOM killer then kills g, as a charge past
// the limit would: onKill is called and SetLimit returns false. A killed group's limit
// does not matter any more: false too.
func (g *Group) SetLimit(limit int64) bool {
	if g.killed {
		return false
	}
	g.limit = limit
	if g.index >= 0 && limit > 0 && g.used > limit {
		g.kill()
		return false
	}
	return true
}

// Uncharge gives back n bytes g's processes no longer hold.
func (g *Group) Uncharge(n int64) {
	if g.killed || g.index < 0 || n <= 0 {
		return
	}
	n = min(n, g.used)
	g.used -= n
	g.root.used -= n
}

// Release removes g from its root: the container is gone, and so is what it held.
func (g *Group) Release() {
	if g.index < 0 {
		return
	}
	r := g.root
	r.used -= g.used
	g.used = 0
	last := len(r.groups) - 1
	r.groups[g.index] = r.groups[last]
	r.groups[g.index].index = g.index
	r.groups[last] = nil
	r.groups = r.groups[:last]
	g.index = -1
}

// Used is what g's processes hold now.
func (g *Group) Used() int64 { return g.used }

// Peak is the most g's processes held at once (memory.peak).
func (g *Group) Peak() int64 { return g.peak }

// OOMScoreAdj is the oom_score_adj g was made with (its container's, by QoS class).
func (g *Group) OOMScoreAdj() int64 { return g.adj }

// Limit is g's limit (0: none).
func (g *Group) Limit() int64 { return g.limit }

// Killed reports whether the OOM killer killed g.
func (g *Group) Killed() bool { return g.killed }

func (g *Group) kill() {
	if g.killed {
		return
	}
	g.killed = true
	g.root.used -= g.used
	g.used = 0
	if g.onKill != nil {
		g.onKill()
	}
}

// victim is the live group the OOM killer kills when the root is full: the highest
// badness, the kernel's oom_badness in bytes: what it holds plus its oom_score_adj's
// thousandths of the root's limit, at least 1 (a group holding nothing is not chosen).
// Ties go to the group made first.
func (r *Root) victim() *Group {
	var best *Group
	var bestPoints int64
	for _, g := range r.groups {
		if g.killed || g.used == 0 {
			continue
		}
		points := max(g.used+g.adj*(r.limit/1000), 1)
		if best == nil || points > bestPoints || points == bestPoints && g.seq < best.seq {
			best, bestPoints = g, points
		}
	}
	return best
}

// OOMScoreAdj is the oom_score_adj the kubelet gives a container (upstream's
// GetContainerOOMScoreAdjust): -997 for a Guaranteed pod's or a node-critical pod's,
// 1000 for a BestEffort pod's, and for a Burstable pod's 1000 less its memory request's
// thousandths of the node's memory capacity, kept between 3 and 999.
func OOMScoreAdj(qos string, critical bool, memoryRequest, memoryCapacity int64) int64 {
	switch {
	case critical || qos == "Guaranteed":
		return GuaranteedOOMScoreAdj
	case qos == "BestEffort":
		return BestEffortOOMScoreAdj
	}
	adj := int64(1000)
	if memoryCapacity > 0 {
		adj = 1000 - (1000*memoryRequest)/memoryCapacity
	}
	if adj < 1000+GuaranteedOOMScoreAdj {
		return 1000 + GuaranteedOOMScoreAdj
	}
	if adj == BestEffortOOMScoreAdj {
		return adj - 1
	}
	return adj
}
