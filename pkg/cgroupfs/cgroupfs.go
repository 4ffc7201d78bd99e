package cgroupfs

import (
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Config is the part of a cgroup's settings the simulator keeps: what the kubelet and the
// runtime write to cpu.weight (as CPU shares), cpu.max and memory.max. A nil field is unset
// and reads as the kernel's default: weight 100, no quota, a period of 100ms, no memory
// limit.
type Config struct {
	CPUShares *uint64
	CPUQuota  *int64 // microseconds per period; 0 or less: no quota ("max")
	CPUPeriod *uint64
	MemoryMax *int64 // bytes; 0 or less: no limit ("max")
}

// DefaultCPUPeriod is the kernel's cpu.max period when none is set, in microseconds.
const DefaultCPUPeriod = 100000

// DefaultCPUWeight is the kernel's cpu.weight of a new cgroup.
const DefaultCPUWeight = 100

// pageSize is what the kernel keeps a memory limit in units of: memory.max reads rounded
// down to it.
const pageSize = 4096

// ErrBusy is Remove's error for a cgroup that still has children, as rmdir's EBUSY.
var ErrBusy = errors.New("device or resource busy")

// Tree is a node's cgroup v2 hierarchy: a directory per cgroup with its interface files,
// which the node's filesystem binds at /sys/fs/cgroup (Mount) and each container sees its
// own cgroup of as its /sys/fs/cgroup (Node), as a cgroup namespace shows it. A cgroup's
// files are replaced as its settings change (every view sees it at once: they share its
// directory), and memory.current is made when read. Safe for concurrent use:
// the kubelet sets pod cgroups while the runtime sets containers' and programs read them.
type Tree struct {
	mu     sync.Mutex
	groups map[string]*group // by clean path; "/" is the root
	// edit runs a change of the directories under the lock of the filesystem they are
	// bound in (vfs.View.Edit), once mounted; directly before.
	edit func(func())
	// files are the interface files by content, frozen and shared by every cgroup whose
	// file reads so (a write through a hostPath copies it, as a view copies an image's
	// file): 10,000 pods of a few sizes share a few files, where a file of each cgroup's
	// own cost it 150 bytes.
	files map[string]*vfs.Node
	// leaves are the directories of cgroups that nothing has looked into yet (no children,
	// no usage function, not a container's root: see group.own), frozen and shared by
	// content as files are: a pod cgroup whose containers run no simulated program is one
	// of 10,000 alike, and a directory of its own cost it 500 bytes.
	leaves map[string]*vfs.Node
	// named are the entries, by settings, of the directories of cgroups that have an
	// identity but no children (a container's: it has a usage function and is its view's
	// /sys/fs/cgroup): each such cgroup has a directory node of its own that lists a
	// frozen template's entries (vfs.Node.ShareEntries), whose memory.current is current.
	named map[string]*vfs.Node
	// current is memory.current of every cgroup with a directory of its own: it reads the
	// cgroup the directory it is read in belongs to (byDir). One file for 30,000 cgroups,
	// where one each cost 180 bytes.
	current *vfs.Node
	byDir   map[*vfs.Node]*group
	// zero is memory.current of a cgroup with no processes below it.
	zero *vfs.Node
}

// group is one cgroup: its settings and its directory, whose files read them. Kept small:
// a node of 10,000 pods has three cgroups or more a pod.
type group struct {
	t    *Tree
	path string // its key in t.groups, sharing its bytes
	dir  *vfs.Node
	// Config by value, set says which are (bits of setShares...): no allocation each.
	shares, period uint64
	quota, memMax  int64
	set            uint8
	// own: dir is g's alone, with a table of its own; named: dir is g's alone but lists
	// the entries of a template (Tree.named), replaced in place when g's settings change;
	// neither: dir is a shared leaf (Tree.leaves), replaced as a whole. A cgroup has a
	// directory of its own from when it gets a usage function or is handed out (Node),
	// named, and owns its table from when it gets a child; it keeps both: a view bound to
	// it must see its changes. Either way Tree.byDir knows it by its directory.
	own   bool
	named bool
	kids  int32
	usage func() int64 // memory.current (SetUsage); nil: the sum of its children's
}

const (
	setShares = 1 << iota
	setQuota
	setPeriod
	setMemMax
)

// New returns a hierarchy holding only its root.
func New() *Tree {
	t := &Tree{groups: map[string]*group{}, files: map[string]*vfs.Node{}, leaves: map[string]*vfs.Node{},
		named: map[string]*vfs.Node{}, byDir: map[*vfs.Node]*group{}, edit: func(f func()) { f() }}
	t.zero = vfs.NewFile([]byte("0\n"), 0o444)
	t.zero.Freeze()
	t.current = vfs.NewGeneratedIn(t.memoryCurrent, 0o444)
	t.current.Freeze()
	root := &group{t: t, path: "/", dir: vfs.NewDir(0o755), own: true}
	t.byDir[root.dir] = root
	root.dir.Add("cgroup.controllers", vfs.NewFile([]byte("cpuset cpu io memory hugetlb pids rdma misc\n"), 0o444))
	root.dir.Add("cgroup.subtree_control", vfs.NewFile([]byte("cpuset cpu io memory hugetlb pids\n"), 0o644))
	t.groups["/"] = root
	return t
}

// Root is the hierarchy's root directory, to bind at a node's /sys/fs/cgroup.
func (t *Tree) Root() *vfs.Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.groups["/"].dir
}

// Mount binds the hierarchy at target in v (a node's filesystem: "/sys/fs/cgroup"), marked
// as a cgroup2 filesystem, and from then on changes its directories under v's lock, since
// programs walk them. Call it once, before the tree is shared.
func (t *Tree) Mount(v *vfs.View, target string) error {
	v.BindNode(target, t.Root(), false)
	if err := v.SetFSType(target, "cgroup2"); err != nil {
		return fmt.Errorf("mount cgroup2 at %q: %w", target, err)
	}
	t.mu.Lock()
	t.edit = v.Edit
	t.mu.Unlock()
	return nil
}

// clean is p as the tree keys it: absolute, lexically clean.
func clean(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p) // no copy when it is clean already
	}
	return path.Clean("/" + p)
}

// Set creates the cgroup at p (and its missing parents, with no settings) if missing and
// replaces its settings with c.
func (t *Tree) Set(p string, c Config) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groupLocked(clean(p))
	g.shares, g.quota, g.period, g.memMax, g.set = 0, 0, 0, 0, 0
	if c.CPUShares != nil {
		g.shares, g.set = *c.CPUShares, g.set|setShares
	}
	if c.CPUQuota != nil {
		g.quota, g.set = *c.CPUQuota, g.set|setQuota
	}
	if c.CPUPeriod != nil {
		g.period, g.set = *c.CPUPeriod, g.set|setPeriod
	}
	if c.MemoryMax != nil {
		g.memMax, g.set = *c.MemoryMax, g.set|setMemMax
	}
	switch {
	case g.path == "/": // the root cgroup has none of these files
	case g.own:
		t.edit(g.putFiles)
	case g.named:
		tmpl := t.namedLocked(g)
		t.edit(func() { g.dir.ShareEntries(tmpl) })
	default:
		t.link(g, t.leafLocked(g))
	}
}

// groupLocked is the cgroup at clean path p, made with its parents if missing.
func (t *Tree) groupLocked(p string) *group {
	if g := t.groups[p]; g != nil {
		return g
	}
	parent := t.groupLocked(path.Dir(p))
	t.ownLocked(parent) // its memory.current sums its children's
	g := &group{t: t, path: p}
	t.link(g, t.leafLocked(g))
	parent.kids++
	t.groups[p] = g
	return g
}

// ownLocked gives g a directory and a table of its own, with its settings' files and
// memory.current, in place of the shared leaf or template it had (a named directory
// stays the same node: views may be bound to it).
func (t *Tree) ownLocked(g *group) {
	if g.own {
		return
	}
	if g.named {
		g.own, g.named = true, false
		t.edit(func() {
			g.dir.Unshare()
			g.putFiles()
		})
		return
	}
	g.own = true
	d := vfs.NewDir(0o755)
	d.Grow(4)
	g.dir = d
	g.putFiles()
	d.Add("memory.current", t.current)
	t.byDir[d] = g
	t.link(g, d)
}

// nameLocked gives g a directory node of its own, listing the template of its settings,
// in place of the shared leaf it had: what a cgroup that has an identity but no children
// needs (a container's).
func (t *Tree) nameLocked(g *group) {
	if g.own || g.named {
		return
	}
	g.named = true
	d := vfs.NewDir(0o755)
	d.ShareEntries(t.namedLocked(g))
	g.dir = d
	t.byDir[d] = g
	t.link(g, d)
}

// namedLocked is the frozen template of the entries of a named cgroup set as g is.
func (t *Tree) namedLocked(g *group) *vfs.Node { return t.frozenDir(t.named, g, t.current) }

// link makes d g's directory, in its parent's (under the tree's lock).
func (t *Tree) link(g *group, d *vfs.Node) {
	g.dir = d
	parent := t.groups[path.Dir(g.path)]
	t.edit(func() { parent.dir.AddKept(path.Base(g.path), d) }) // g.path lives as long
}

// leafLocked is the shared directory of a cgroup set as g is, with nothing below it.
func (t *Tree) leafLocked(g *group) *vfs.Node { return t.frozenDir(t.leaves, g, t.zero) }

// frozenDir is the frozen directory of byKey for a cgroup set as g is: its settings'
// files and current as its memory.current, made once for each settings.
func (t *Tree) frozenDir(byKey map[string]*vfs.Node, g *group, current *vfs.Node) *vfs.Node {
	cpuMax, cpuWeight, memoryMax := g.cpuMax(), g.cpuWeight(), g.memoryMax()
	key := cpuMax + cpuWeight + memoryMax
	if d := byKey[key]; d != nil {
		return d
	}
	d := vfs.NewDir(0o755)
	d.Grow(4)
	d.Add("cpu.max", t.file(cpuMax))
	d.Add("cpu.weight", t.file(cpuWeight))
	d.Add("memory.max", t.file(memoryMax))
	d.Add("memory.current", current)
	d.Freeze()
	byKey[key] = d
	return d
}

// putFiles sets g's interface files to what its settings read as (under the tree's lock,
// and the filesystem's once g is linked).
func (g *group) putFiles() {
	g.dir.Add("cpu.max", g.t.file(g.cpuMax()))
	g.dir.Add("cpu.weight", g.t.file(g.cpuWeight()))
	g.dir.Add("memory.max", g.t.file(g.memoryMax()))
}

// file is the shared file that reads text (under the tree's lock).
func (t *Tree) file(text string) *vfs.Node {
	n := t.files[text]
	if n == nil {
		n = vfs.NewFile([]byte(text), 0o644)
		n.Freeze()
		t.files[text] = n
	}
	return n
}

// Get returns the settings of the cgroup at p, and whether it exists.
func (t *Tree) Get(p string) (Config, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[clean(p)]
	if g == nil {
		return Config{}, false
	}
	return g.config(), true
}

// GetClean is Get of a path that is clean already, given as bytes: a caller that looks a
// cgroup up at every sync of every pod builds its name on the stack, allocating nothing.
func (t *Tree) GetClean(p []byte) (Config, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[string(p)] // no copy: a map index
	if g == nil {
		return Config{}, false
	}
	return g.config(), true
}

// config is g's settings as a Config (under the tree's lock).
func (g *group) config() Config {
	var c Config
	if g.set&setShares != 0 {
		v := g.shares
		c.CPUShares = &v
	}
	if g.set&setQuota != 0 {
		v := g.quota
		c.CPUQuota = &v
	}
	if g.set&setPeriod != 0 {
		v := g.period
		c.CPUPeriod = &v
	}
	if g.set&setMemMax != 0 {
		v := g.memMax
		c.MemoryMax = &v
	}
	return c
}

// Path is p as the tree holds it, when the cgroup exists (else p): a caller that keeps
// the name as long as the cgroup (a sandbox's cgroup parent) shares its bytes.
func (t *Tree) Path(p string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.groups[clean(p)]; g != nil {
		return g.path
	}
	return p
}

// Remove removes the cgroup at p, as rmdir does: nothing when it is missing, ErrBusy
// while it has children. The root stays.
func (t *Tree) Remove(p string) error {
	p = clean(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[p]
	switch {
	case g == nil:
		return nil
	case p == "/" || g.kids > 0:
		return fmt.Errorf("remove cgroup %q: %w", p, ErrBusy)
	}
	parent := t.groups[path.Dir(p)]
	t.edit(func() { parent.dir.Remove(path.Base(p)) })
	parent.kids--
	delete(t.groups, p)
	if g.own || g.named {
		delete(t.byDir, g.dir)
	}
	return nil
}

// Node is the directory of the cgroup at p (nil when missing): a container's
// /sys/fs/cgroup, where its cgroup namespace makes it the root.
func (t *Tree) Node(p string) *vfs.Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.groups[clean(p)]; g != nil {
		t.nameLocked(g)
		return g.dir
	}
	return nil
}

// SetUsage makes the memory.current of the cgroup at p read f (what its processes hold, in
// bytes); without one it reads the sum of its children's. f is called outside the tree's
// lock, by whoever reads the file: for a container's, a program of the runtime, under
// the runtime's lock. Nothing happens when the cgroup is missing.
func (t *Tree) SetUsage(p string, f func() int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.groups[clean(p)]; g != nil {
		t.nameLocked(g)
		g.usage = f
	}
}

// Len is how many cgroups the tree holds, the root included.
func (t *Tree) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.groups)
}

// cpuMax is what cpu.max reads: "$MAX $PERIOD", max without a quota.
func (g *group) cpuMax() string {
	period := uint64(DefaultCPUPeriod)
	if g.set&setPeriod != 0 && g.period > 0 {
		period = g.period
	}
	quota := "max"
	if g.set&setQuota != 0 && g.quota > 0 {
		quota = strconv.FormatInt(g.quota, 10)
	}
	return quota + " " + strconv.FormatUint(period, 10) + "\n"
}

// cpuWeight is what cpu.weight reads: the shares as runc converts them, 100 when unset.
func (g *group) cpuWeight() string {
	w := uint64(DefaultCPUWeight)
	if g.set&setShares != 0 && g.shares != 0 {
		w = SharesToWeight(g.shares)
	}
	return strconv.FormatUint(w, 10) + "\n"
}

// memoryMax is what memory.max reads: the limit in bytes, in whole pages as the kernel
// keeps it, "max" without one.
func (g *group) memoryMax() string {
	if g.set&setMemMax == 0 || g.memMax <= 0 {
		return "max\n"
	}
	return strconv.FormatInt(g.memMax/pageSize*pageSize, 10) + "\n"
}

// memoryCurrent renders memory.current in directory dir: its cgroup's usage function's
// answer, else its children's sum; 0 in a directory the tree does not know (a shared
// leaf's, or a copy of one a write made). The functions run outside the tree's lock
// (they take the runtime's).
func (t *Tree) memoryCurrent(_ any, dir *vfs.Node) []byte {
	var fns []func() int64
	t.mu.Lock()
	g := t.byDir[dir]
	if g == nil {
		t.mu.Unlock()
		return []byte("0\n")
	}
	if g.usage != nil {
		fns = append(fns, g.usage)
	} else {
		prefix := strings.TrimSuffix(g.path, "/") + "/"
		for p, x := range g.t.groups {
			if x.usage != nil && strings.HasPrefix(p, prefix) && !under(g.t, p, prefix) {
				fns = append(fns, x.usage)
			}
		}
	}
	g.t.mu.Unlock()
	total := int64(0)
	for _, f := range fns {
		total += max(f(), 0)
	}
	return []byte(strconv.FormatInt(total, 10) + "\n")
}

// under reports whether the cgroup at p lies below another with a usage function that is
// itself below prefix: its use is counted there already.
func under(t *Tree, p, prefix string) bool {
	for d := path.Dir(p); len(d) >= len(prefix); d = path.Dir(d) {
		if x := t.groups[d]; x != nil && x.usage != nil {
			return true
		}
	}
	return false
}

// SharesToWeight converts CPU shares (cgroup v1's cpu.shares, 2 to 262144, what the CRI
// carries) to cgroup v2's cpu.weight (1 to 10000) as runc does with opencontainers/cgroups
// v0.0.7, which Kubernetes 1.37 builds with: a quadratic in log2(shares) through (2, 1),
// (1024, 100) and (262144, 10000), rounded up, so that the default shares give the default
// weight. The older linear conversion, 1+(shares-2)*9999/262142, gave 39 for 1024. 0 is
// unset: 0.
func SharesToWeight(shares uint64) uint64 {
	switch {
	case shares == 0:
		return 0
	case shares <= 2:
		return 1
	case shares >= 262144:
		return 10000
	}
	l := math.Log2(float64(shares))
	return uint64(math.Ceil(math.Pow(10, (l*l+125*l)/612-7.0/34)))
}
