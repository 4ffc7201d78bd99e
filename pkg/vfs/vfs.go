package vfs

import (
	"bytes"
	"io/fs"
	"iter"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Node is a file, directory or symbolic link. Nodes of an image are frozen: shared by every
// container of the image, never changed; a container that writes under one copies the
// directories on the way (copy on write, as an overlay's upper layer), so an image costs its
// tree once however many containers run it.
type Node struct {
	mode   fs.FileMode // type bits and permissions
	frozen bool        // beside mode, in its padding: a node stays 80 bytes
	// sharedKids: kids is a frozen template's table (ShareEntries), copied before the
	// first change under n (writable).
	sharedKids bool
	uid        int64
	gid        int64
	mtime      int64   // unix nanoseconds
	data       content // a file's bytes (content.go)
	*extra             // what few nodes have, apart: a node's disk holds some 10 nodes per pod
	kids       *dirTable
}

// extra is what only some nodes have. Its fields are read through Node (nil: none).
type extra struct {
	target  string                          // a symbolic link's target
	program string                          // what a simulated executable runs (see Info.Program)
	fstype  string                          // the filesystem mounted here ("tmpfs"), "" for its parent's
	fssize  int64                           // that filesystem's size in bytes (a tmpfs's size=), 0: unset
	gen     func(ctx any, dir *Node) []byte // a file of the kernel's (/proc/mounts): its content when read
}

func (n *Node) linkTarget() string {
	if n.extra == nil {
		return ""
	}
	return n.target
}

func (n *Node) generator() func(ctx any, dir *Node) []byte {
	if n.extra == nil {
		return nil
	}
	return n.gen
}

// more returns n's extra, made if missing (n is being changed: not frozen).
func (n *Node) more() *extra {
	if n.extra == nil {
		n.extra = &extra{}
	} else {
		e := *n.extra // a copied node shares its original's until it changes it
		n.extra = &e
	}
	return n.extra
}

// NewDir is an empty directory with permissions perm, owned by root.
func NewDir(perm fs.FileMode) *Node {
	return &Node{mode: fs.ModeDir | perm.Perm()} // kids is made with the first (put)
}

// Freeze makes n and everything under it immutable: views copy it on write.
func (n *Node) Freeze() {
	if n.frozen {
		return
	}
	n.frozen = true
	n.data.freeze()
	for _, k := range n.children() {
		k.Freeze()
	}
}

func (n *Node) isDir() bool     { return n.mode.IsDir() }
func (n *Node) isSymlink() bool { return n.mode&fs.ModeSymlink != 0 }

// shallowCopy copies n, sharing its children (which stay frozen until copied in turn).
func (n *Node) shallowCopy() *Node {
	c := *n
	c.frozen, c.sharedKids = false, false
	c.kids = n.kids.clone()
	c.data = n.data.forCopy()
	return &c
}

// Info describes a node, as stat does.
type Info struct {
	Name    string
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time
	UID     int64
	GID     int64
	// Target is a symbolic link's target (Lstat).
	Target string
	// Program is the simulated program an executable file runs ("" for a plain file): image
	// binaries are files whose content is not machine code but the name of what they do.
	Program string
	// FSType is the filesystem mounted at this directory ("tmpfs"), "" when none is.
	FSType string
	// FSSize is that filesystem's size in bytes (a tmpfs's size= option), 0 when unset.
	FSSize int64
}

func (n *Node) info(name string) Info {
	size := n.data.size()
	if n.isDir() {
		size = 4096
	}
	if n.isSymlink() {
		size = int64(len(n.linkTarget()))
	}
	i := Info{Name: name, Size: size, Mode: n.mode, ModTime: time.Unix(0, n.mtime), UID: n.uid, GID: n.gid}
	if n.extra != nil {
		i.Target, i.Program, i.FSType, i.FSSize = n.target, n.program, n.fstype, n.fssize
	}
	return i
}

// Disk is the lock shared by a node's filesystem and every view of its containers: the
// kubelet writes volumes from its goroutines while programs read them from the runtime's.
type Disk struct {
	mu sync.Mutex
	// gen counts the changes to what paths name (a file made, removed, renamed, re-moded,
	// a mount), so that a lookup's answer can be kept until the next one (Generation).
	gen atomic.Uint64
}

// Generation is the number of changes so far to what the paths of the node's filesystem
// and its views name or their modes: a PATH search cached at one generation still holds
// while it is the same. Writing a file's content changes nothing here.
// A mount changes only its own view's generation: a container's mounts being set up
// leave every other container's lookups standing.
func (v *View) Generation() uint64 { return v.disk.gen.Load() + v.mountGen.Load() }

// changed records a change to what paths name; called under the disk's lock.
func (v *View) changed() { v.disk.gen.Add(1) }

// View is a mount namespace: a root filesystem with other trees bound at paths in it. A
// node's own filesystem is a View without mounts. Safe for concurrent use.
type View struct {
	disk     *Disk
	root     *Node
	mounts   mountTable
	roRoot   bool
	now      func() int64
	maxDepth int
	mountGen atomic.Uint64 // changes of v's mounts (Generation)
	// upper is the bytes of the regular files of v's own tree that are not the image's
	// (UpperBytes): changed under the disk's lock by each write, read without it.
	upper atomic.Int64
	// tmpfs, when set, is told how much the files written through v on a tmpfs mount
	// grew or shrank (SetTmpfsAccount).
	tmpfs func(delta int64)
	// ctx is what generated files read through v are given (SetContext).
	ctx any
}

// SetContext sets what the generators of the files read through v are given (whose
// /proc this is). Call it before v is used.
func (v *View) SetContext(ctx any) { v.ctx = ctx }

// SetTmpfsAccount makes f learn, under the disk's lock, by how much each write or removal
// through v changes the files of a tmpfs mounted in v (a memory-backed emptyDir): their
// pages are memory of the container that wrote them. f may panic to unwind its caller.
// Call it before v is used.
func (v *View) SetTmpfsAccount(f func(delta int64)) { v.tmpfs = f }

// onTmpfs reports whether l lies on a tmpfs mount of v that is accounted.
func (v *View) onTmpfs(l loc) bool {
	return v.tmpfs != nil && l.mnt != nil && l.mnt.node.extra != nil && l.mnt.node.fstype == "tmpfs"
}

type mount struct {
	path string
	node *Node
	ro   bool
}

// mountTable is a view's mounts, a few (a container's volumes and the kubelet's files):
// found by a scan, kept by value. A *mount into it lives no longer than the locked
// operation that found it (a later bind may move the table).
type mountTable []mount

// at is the mount at path p, nil if none.
func (t mountTable) at(p string) *mount {
	for i := range t {
		if t[i].path == p {
			return &t[i]
		}
	}
	return nil
}

// set adds m, replacing a mount at the same path.
func (t *mountTable) set(m mount) {
	if old := t.at(m.path); old != nil {
		*old = m
		return
	}
	*t = append(*t, m)
}

// New is an empty filesystem (a node's disk) whose modification times come from now.
func New(now func() time.Time) *View {
	return &View{disk: &Disk{}, root: NewDir(0o755), now: nowFunc(now)}
}

func nowFunc(now func() time.Time) func() int64 {
	if now == nil {
		return func() int64 { return 0 }
	}
	return func() int64 { return now().UnixNano() }
}

// NewView is a container's namespace on disk d (the node's, so its mounts share the lock):
// image is its root filesystem, frozen and copied on write; readOnlyRoot refuses writes
// outside the mounts (securityContext.readOnlyRootFilesystem).
func NewView(node *View, image *Node, readOnlyRoot bool) *View {
	if image == nil {
		image = NewDir(0o755)
	}
	image.Freeze()
	return &View{disk: node.disk, root: image, roRoot: readOnlyRoot, now: node.now}
}

// Bind mounts what srcPath names in src (a directory or a file; it must exist) at target in
// v, read-only or not. A later bind at the same target replaces the earlier one.
func (v *View) Bind(target string, src *View, srcPath string, readOnly bool) error {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := src.resolve(srcPath, true)
	if err != nil {
		return err
	}
	if l.node == nil {
		return ENOENT
	}
	target = clean(target)
	// No mount point is made in the tree (runc makes one): walk treats a missing one, and
	// directories above it, as there, so that an image's tree is not copied for its mounts.
	v.mounts.set(mount{path: target, node: l.node, ro: readOnly})
	v.mountGen.Add(1)
	return nil
}

// Resolve returns what p names in v, symbolic links followed: the node Bind would mount.
// Bound later with BindNode, it is the same mount (a bind holds the node, as a bind mount
// holds the inode, whatever p names by then).
func (v *View) Resolve(p string) (*Node, error) {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.resolve(p, true)
	if err != nil {
		return nil, err
	}
	if l.node == nil {
		return nil, ENOENT
	}
	return l.node, nil
}

// GrowMounts makes room for n more mounts: a container's view gets its few at once, and a
// table grown by appends held up to twice the room it used, for each of a big node's
// 20,000 containers.
func (v *View) GrowMounts(n int) {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	v.mounts = slices.Grow(v.mounts, n)
}

// BindNode mounts tree n (a node Resolve returned, or a directory or file of no
// filesystem: a container's /proc) at target.
func (v *View) BindNode(target string, n *Node, readOnly bool) {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	target = clean(target)
	v.mounts.set(mount{path: target, node: n, ro: readOnly})
	v.mountGen.Add(1)
}

// NewFile is a file of no filesystem with data and permissions perm, owned by root.
func NewFile(data []byte, perm fs.FileMode) *Node {
	return &Node{mode: perm.Perm(), data: literalContent(data)}
}

// NewGenerated is a file whose content gen makes when it is read (outside the
// filesystem's lock, so gen may read it), as the kernel makes a /proc file's: nothing is
// kept until then, and stat says size 0. Writing it replaces gen with what was written.
// gen is given the context of the view the file is read through (View.SetContext; nil
// without one): one tree of such files can serve every container, as one procfs shows each
// process its own /proc/self.
func NewGenerated(gen func(ctx any) []byte, perm fs.FileMode) *Node {
	return &Node{mode: perm.Perm(), extra: &extra{gen: func(ctx any, _ *Node) []byte { return gen(ctx) }}}
}

// NewGeneratedIn is NewGenerated whose gen is also given the directory the file was read
// in: one file, shared by many directories, that reads what each one's owner says (a
// cgroup's memory.current, in every container's cgroup directory). dir is nil for a file
// bound as a mount of its own.
func NewGeneratedIn(gen func(ctx any, dir *Node) []byte, perm fs.FileMode) *Node {
	return &Node{mode: perm.Perm(), extra: &extra{gen: gen}}
}

// ShareEntries makes directory n list from's entries, through from's own table: from is
// a frozen template that many directories of their own identity list alike (with a
// NewGeneratedIn file that tells them apart). The first change under n, through a view
// or Unshare, copies the table into n: n stays the node views are bound to. Call it on a
// tree not yet bound, or under Edit.
func (n *Node) ShareEntries(from *Node) {
	n.kids = from.kids
	n.sharedKids = true
}

// Unshare gives directory n a table of its own, a copy of the one it shares (a tree not
// yet bound, or under Edit).
func (n *Node) Unshare() {
	if n.sharedKids {
		n.kids = n.kids.clone()
		n.sharedKids = false
	}
}

// Dir returns directory n's subdirectory name, made if missing (to build a tree).
func (n *Node) Dir(name string) *Node {
	if k := n.kid(name); k != nil {
		return k
	}
	k := NewDir(n.mode.Perm())
	n.put(name, k)
	return k
}

// Add puts child in directory n as name (to build a tree before it is bound or frozen).
func (n *Node) Add(name string, child *Node) { n.put(name, child) }

// AddKept is Add keeping name's bytes rather than a copy: for a caller whose name is a
// slice of a string that lives as long as the entry anyway (a cgroup's path).
func (n *Node) AddKept(name string, child *Node) {
	if n.kids == nil {
		n.kids = &dirTable{}
	}
	n.kids.putName(name, child)
}

// Grow makes room in directory n for k more entries, to build a directory whose size is
// known without growing its table step by step.
func (n *Node) Grow(k int) {
	if n.kids == nil {
		n.kids = &dirTable{}
	}
	n.kids.ents = slices.Grow(n.kids.ents, k)
}

// Remove removes directory n's entry name, if any (to change a tree that is not on a
// disk's paths, or under Edit once it is bound).
func (n *Node) Remove(name string) { n.kids.del(name) }

// Edit runs f under the lock of v's disk: f may then change the nodes of a tree bound in v
// or its views (Node.Add, Node.Dir, Node.Remove), as the kernel changes /sys/fs/cgroup while
// programs read it. It counts as a change of what paths name (Generation). f must not call
// v or another view of its disk.
func (v *View) Edit(f func()) {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	f()
	v.changed()
}

// put sets directory n's entry name, making its table with the first: most of a node's
// directories stay empty or hold a few.
func (n *Node) put(name string, child *Node) {
	if n.kids == nil {
		n.kids = &dirTable{}
	}
	n.kids.put(name, child)
}

// kid is directory n's entry name, nil if none.
func (n *Node) kid(name string) *Node { return n.kids.get(name) }

// nkids is how many entries directory n has.
func (n *Node) nkids() int {
	if n.kids == nil {
		return 0
	}
	return len(n.kids.ents)
}

// children yields directory n's entries, in no order.
func (n *Node) children() iter.Seq2[string, *Node] {
	return func(yield func(string, *Node) bool) {
		if n.kids == nil {
			return
		}
		for _, e := range n.kids.ents {
			if !yield(e.name, e.node) {
				return
			}
		}
	}
}

// dirTable is a directory's entries: a few are found by a scan (most of a node's
// directories hold one to five, where a map took 250 bytes), many through an index (an
// image's /bin, the kubelet's pods directory).
type dirTable struct {
	ents  []dirEnt
	index map[string]int // once there are more than smallDir
}

type dirEnt struct {
	name string
	node *Node
}

const smallDir = 16

func (t *dirTable) find(name string) int {
	if t == nil {
		return -1
	}
	if t.index != nil {
		if i, ok := t.index[name]; ok {
			return i
		}
		return -1
	}
	for i := range t.ents {
		if t.ents[i].name == name {
			return i
		}
	}
	return -1
}

func (t *dirTable) get(name string) *Node {
	if i := t.find(name); i >= 0 {
		return t.ents[i].node
	}
	return nil
}

func (t *dirTable) put(name string, n *Node) {
	if i := t.find(name); i >= 0 {
		t.ents[i].node = n
		return
	}
	// The name is most often a slice of the path it was made by ("/var/lib/kubelet/pods/
	// <uid>/containers/app"): a copy of its own keeps that path from living as long as the
	// entry.
	t.putName(strings.Clone(name), n)
}

// putName adds the entry name, which it keeps as it is.
func (t *dirTable) putName(name string, n *Node) {
	if i := t.find(name); i >= 0 {
		t.ents[i].node = n
		return
	}
	t.ents = append(t.ents, dirEnt{name, n})
	switch {
	case t.index != nil:
		t.index[name] = len(t.ents) - 1
	case len(t.ents) > smallDir:
		t.index = make(map[string]int, len(t.ents))
		for i, e := range t.ents {
			t.index[e.name] = i
		}
	}
}

// del removes name: the last entry takes its place (a directory has no order).
func (t *dirTable) del(name string) {
	i := t.find(name)
	if i < 0 {
		return
	}
	last := len(t.ents) - 1
	t.ents[i] = t.ents[last]
	t.ents[last] = dirEnt{}
	t.ents = t.ents[:last]
	if t.index != nil {
		delete(t.index, name)
		if i < last {
			t.index[t.ents[i].name] = i
		}
	}
}

func (t *dirTable) clone() *dirTable {
	if t == nil {
		return nil
	}
	c := &dirTable{ents: slices.Clone(t.ents)}
	if t.index != nil {
		c.index = maps.Clone(t.index)
	}
	return c
}

// Mounts lists the paths something is bound at, sorted.
func (v *View) Mounts() []string {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	var paths []string
	for i := range v.mounts {
		paths = append(paths, v.mounts[i].path)
	}
	slices.Sort(paths)
	return paths
}

// clean makes p absolute and lexically clean (without allocating when it already is).
func clean(p string) string {
	if isClean(p) {
		return p
	}
	return path.Clean("/" + p)
}

// isClean reports whether p is absolute and clean: no empty, "." or ".." element, no
// trailing slash.
func isClean(p string) bool {
	if p == "/" {
		return true
	}
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	for start := 1; start < len(p); {
		end := strings.IndexByte(p[start:], '/')
		if end < 0 {
			end = len(p)
		} else {
			end += start
		}
		if e := p[start:end]; e == "" || e == "." || e == ".." {
			return false
		}
		start = end + 1
	}
	return true
}

// loc is where a path leads: the node (nil when only its parent exists), its parent
// directory, its name there, its canonical path and the mount it lies in (nil: the root
// filesystem).
type loc struct {
	node   *Node
	parent *Node
	name   string
	path   string
	mnt    *mount
}

// mntPath is the path in the view of the tree l lies in: its mount's, or "/".
func (l loc) mntPath() string {
	if l.mnt != nil {
		return l.mnt.path
	}
	return "/"
}

const maxSymlinks = 40

// resolve walks p, following symbolic links (the last one only when follow).
func (v *View) resolve(p string, follow bool) (loc, error) {
	p = clean(p)
	for depth := 0; ; depth++ {
		if depth > maxSymlinks {
			return loc{}, ELOOP
		}
		l, next, err := v.walk(p, follow)
		if err != nil || next == "" {
			return l, err
		}
		p = next
	}
}

// walk walks clean path p once. When it meets a symbolic link to follow it returns the
// path to walk instead. It allocates nothing on the way: a program's PATH search walks
// several paths per command.
func (v *View) walk(p string, follow bool) (loc, string, error) {
	cur, mnt := v.root, (*mount)(nil)
	if m := v.mounts.at("/"); m != nil {
		cur, mnt = m.node, m
	}
	l := loc{node: cur, path: "/", mnt: mnt}
	if p == "/" {
		return l, "", nil
	}
	for start := 1; start <= len(p); {
		end := strings.IndexByte(p[start:], '/')
		last := end < 0
		if last {
			end = len(p)
		} else {
			end += start
		}
		name, here := p[start:end], p[:end] // p is clean: the path so far is its prefix
		if !cur.isDir() {
			return loc{}, "", ENOTDIR
		}
		next := cur.kid(name)
		if m := v.mounts.at(here); m != nil && (next != nil || cur.isDir()) {
			next, mnt = m.node, m
		}
		if next == nil && v.mountBelow(here) {
			// A directory the tree lacks but a mount lies under (/etc of an image
			// without one, for /etc/hosts): there, empty, as the runtime's mount point
			// would be. It is made for real when something is written in it.
			next = virtualDir
		}
		if next == nil {
			if last {
				return loc{parent: cur, name: name, path: here, mnt: mnt}, "", nil
			}
			return loc{}, "", ENOENT
		}
		if next.isSymlink() && (!last || follow) {
			t := next.linkTarget()
			if !strings.HasPrefix(t, "/") {
				t = path.Dir(here) + "/" + t
			}
			rest := ""
			if !last {
				rest = p[end+1:]
			}
			return loc{}, clean(t + "/" + rest), nil
		}
		l = loc{node: next, parent: cur, name: name, path: here, mnt: mnt}
		cur = next
		start = end + 1
	}
	return l, "", nil
}

// virtualDir stands for a directory that exists only because a mount lies under it.
var virtualDir = func() *Node { n := NewDir(0o755); n.Freeze(); return n }()

// mountBelow reports whether something is mounted under directory p.
func (v *View) mountBelow(p string) bool {
	for i := range v.mounts {
		if mp := v.mounts[i].path; len(mp) > len(p) && mp[len(p)] == '/' && strings.HasPrefix(mp, p) {
			return true
		}
	}
	return false
}

// writable returns l's parent directory ready to change: not read-only, and copied out of
// the image if it was frozen (with every frozen directory above it in the root filesystem).
func (v *View) writable(l loc) (*Node, error) {
	if l.mnt != nil && l.mnt.ro || l.mnt == nil && v.roRoot {
		return nil, EROFS
	}
	if l.parent == nil {
		return nil, EBUSY // the root itself or a mount point
	}
	if !l.parent.frozen {
		l.parent.Unshare()
		return l.parent, nil
	}
	if l.parent == virtualDir && l.mnt != nil {
		return nil, EROFS // under a mount, nothing made it: a mount's tree is its own
	}
	// Copy the frozen directories from the top of l's tree down to its parent.
	top, rel := v.root, path.Dir(l.path)
	if l.mnt != nil {
		top, rel = l.mnt.node, strings.TrimPrefix(path.Dir(l.path), l.mnt.path)
	}
	if top.frozen {
		top = top.shallowCopy()
		if l.mnt != nil {
			l.mnt.node = top
		} else {
			v.root = top
		}
	}
	cur, sofar := top, l.mntPath()
	for _, name := range strings.Split(strings.Trim(rel, "/"), "/") {
		if name == "" {
			continue
		}
		sofar = path.Join(sofar, name)
		kid := cur.kid(name)
		if kid == nil && v.mountBelow(sofar) {
			kid = NewDir(0o755) // a virtual directory, made for real
			cur.Unshare()
			cur.put(name, kid)
		}
		if kid == nil || !kid.isDir() {
			return nil, ENOENT // a symbolic link on the way: resolve gave the canonical path
		}
		if kid.frozen {
			kid = kid.shallowCopy()
			cur.Unshare()
			cur.put(name, kid)
		}
		cur = kid
	}
	cur.Unshare()
	return cur, nil
}

// Root is the tree's root directory (to freeze a built image tree and share it).
func (v *View) Root() *Node {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	return v.root
}

// SetProgram makes the file at p an executable that runs the simulated program name.
func (v *View) SetProgram(p, name string) error {
	return v.change(p, func(n *Node) { n.more().program = name })
}

// SetFSType records that a filesystem of type typ ("tmpfs") is mounted at directory p, as
// the kubelet mounts a tmpfs for an emptyDir of medium Memory.
func (v *View) SetFSType(p, typ string) error {
	return v.change(p, func(n *Node) { n.more().fstype = typ })
}

// SetFSSize records the size of the filesystem mounted at directory p (a tmpfs's size=
// option): what df reports as its blocks.
func (v *View) SetFSSize(p string, bytes int64) error {
	return v.change(p, func(n *Node) { n.more().fssize = bytes })
}

// Stat describes what p names, following symbolic links.
func (v *View) Stat(p string) (Info, error) { return v.stat(p, true) }

// Lstat describes what p names, not following a final symbolic link.
func (v *View) Lstat(p string) (Info, error) { return v.stat(p, false) }

func (v *View) stat(p string, follow bool) (Info, error) {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.resolve(p, follow)
	if err != nil {
		return Info{}, err
	}
	if l.node == nil {
		return Info{}, ENOENT
	}
	return l.node.info(path.Base(l.path)), nil
}

// ReadFile returns a file's content (a copy, made whole: Open reads a big one in pieces).
func (v *View) ReadFile(p string) ([]byte, error) {
	c, gen, dir, err := v.snapshot(p)
	if err != nil {
		return nil, err
	}
	if gen != nil {
		return gen(v.ctx, dir), nil // outside the lock: a generator may read the filesystem
	}
	return c.bytes(), nil // outside the lock too: a snapshot is read without it
}

// FileEquals reports whether the file at p holds exactly data, following symbolic links, as
// ReadFile and bytes.Equal would, without copying the file: the kubelet's atomic writer asks
// it of every projected file at every sync of every pod. Its errors are ReadFile's.
func (v *View) FileEquals(p string, data []byte) (bool, error) {
	c, gen, dir, err := v.snapshot(p)
	if err != nil {
		return false, err
	}
	if gen != nil {
		return bytes.Equal(gen(v.ctx, dir), data), nil
	}
	return c.equal(data), nil
}

// ReadFileString is ReadFile as a string, copied once: a script read to be run.
func (v *View) ReadFileString(p string) (string, error) {
	c, gen, dir, err := v.snapshot(p)
	if err != nil {
		return "", err
	}
	if gen != nil {
		return string(gen(v.ctx, dir)), nil
	}
	size := c.size()
	var b strings.Builder
	b.Grow(int(size))
	var chunk [4096]byte // through the stack: the builder's array is the one copy kept
	for off := int64(0); off < size; {
		n := c.readAt(chunk[:], off)
		if n == 0 {
			break
		}
		b.Write(chunk[:n])
		off += int64(n)
	}
	return b.String(), nil
}

// Open opens a file for reading, following symbolic links: the Reader reads the content as
// it is now, whatever is written to the file later (see Reader). Its errors are
// ReadFile's: ENOENT, EISDIR for a directory, ENOTDIR, ELOOP. A generated file opens with
// what its generator makes now.
func (v *View) Open(p string) (*Reader, error) {
	c, gen, dir, err := v.snapshot(p)
	if err != nil {
		return nil, err
	}
	if gen != nil {
		c = literalContent(gen(v.ctx, dir))
	}
	return &Reader{c: c}, nil
}

// snapshot is p's content as it is now, or its generator and the directory it is in.
func (v *View) snapshot(p string) (content, func(ctx any, dir *Node) []byte, *Node, error) {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.resolve(p, true)
	switch {
	case err != nil:
		return content{}, nil, nil, err
	case l.node == nil:
		return content{}, nil, nil, ENOENT
	case l.node.isDir():
		return content{}, nil, nil, EISDIR
	case l.node.generator() != nil:
		return content{}, l.node.generator(), l.parent, nil
	}
	return l.node.data.snapshot(), nil, nil, nil
}

// WriteFile writes data to p, creating it with perm (owned by uid, gid) if it does not
// exist, truncating it first unless appending.
func (v *View) WriteFile(p string, data []byte, perm fs.FileMode, appending bool, uid, gid int64) error {
	return v.writeFile(p, true, perm, uid, gid, func(c *content) {
		if !appending {
			*c = content{}
		}
		c.append(data)
	})
}

// WriteFileShared is WriteFile (not appending) of data the caller never writes again: the
// file holds data itself, not a copy, when it fits one literal extent (maxLiteral). The
// kubelet's volume payloads are so: a ConfigMap's values and a token are strings of the API
// objects the node already keeps, and each pod's projected volume wrote a copy of them (the
// largest part of the files 10,000 pods hold). A file read gives the same bytes either way;
// only compaction (runs, repeats) is skipped, which such files do not have.
func (v *View) WriteFileShared(p string, data []byte, perm fs.FileMode, uid, gid int64) error {
	return v.writeFile(p, true, perm, uid, gid, func(c *content) {
		if len(data) <= maxLiteral {
			*c = literalContent(data)
			return
		}
		*c = content{}
		c.append(data)
	})
}

// WriteFileAt writes data at offset off of p, as pwrite does, creating it as WriteFile
// does: the file grows if data ends past its end, and zeros fill from its end to off. A
// writer of a big file (dd's seek= and conv=notrunc) writes it a block at a time with it.
func (v *View) WriteFileAt(p string, data []byte, off int64, perm fs.FileMode, uid, gid int64) error {
	if off < 0 {
		return EINVAL
	}
	return v.writeFile(p, true, perm, uid, gid, func(c *content) { c.writeAt(data, off) })
}

// Truncate cuts file p to size bytes, or extends it with zeros, as truncate(2) does: p must
// exist. What an open Reader reads does not change.
func (v *View) Truncate(p string, size int64) error {
	if size < 0 {
		return EINVAL
	}
	return v.writeFile(p, false, 0, 0, 0, func(c *content) { c.truncate(size) })
}

// writeFile changes the content of file p with change, making p first when create (with
// perm, uid, gid) and copying it out of the image when frozen. A file of v's own tree
// changes v's UpperBytes by what its size changed; one copied out of the image adds its
// whole size, as overlayfs copies a file up whole to write it.
func (v *View) writeFile(p string, create bool, perm fs.FileMode, uid, gid int64, change func(*content)) error {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.resolve(p, true)
	if err != nil {
		return err
	}
	if l.node != nil && l.node.isDir() {
		return EISDIR
	}
	if l.node == nil && !create {
		return ENOENT
	}
	var n *Node
	counted := int64(0) // what v's upper layer counts of the file now
	if m := v.mounts.at(l.path); m != nil {
		// A file bound at its own path (/etc/hosts, the termination log): written in place.
		if m.ro {
			return EROFS
		}
		n = l.node
	} else {
		dir, err := v.writable(l)
		if err != nil {
			return err
		}
		switch n = dir.kid(l.name); {
		case n == nil:
			n = &Node{mode: perm.Perm(), uid: uid, gid: inheritedGID(dir, gid)}
			dir.put(l.name, n)
			v.changed()
		case n.frozen:
			n = n.shallowCopy()
			dir.put(l.name, n)
		default:
			counted = n.data.size()
		}
	}
	if n.generator() != nil {
		n.more().gen = nil // what a program writes replaces what it generated
	}
	before := n.data.size()
	change(&n.data)
	n.mtime = v.now()
	if l.mnt == nil {
		v.upper.Add(n.data.size() - counted)
	}
	if v.onTmpfs(l) {
		v.tmpfs(n.data.size() - before)
	}
	return nil
}

// UpperBytes is the size of the regular files of v's own tree that the container made or
// copied out of its image (an overlay's upper layer, what counts against its writable
// layer and ephemeral storage): neither the image's files it left alone nor what is under
// its mounts. It is kept as files change, so a call costs nothing; it counts what is
// written through v (a tree of v's bound into another view and written there is not).
func (v *View) UpperBytes() int64 { return v.upper.Load() }

// DirBytes is the size of the regular files under directory p (an emptyDir's usage):
// p's mount if something is bound at p, none of those below it. It walks the tree, and
// reads no content.
func (v *View) DirBytes(p string) (int64, error) {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.dirAt(p)
	if err != nil {
		return 0, err
	}
	return fileBytes(l.node, false), nil
}

// fileBytes is the size of the regular files of tree n; of only those not frozen when
// upper (what an upper layer counts: a frozen directory holds only frozen nodes).
func fileBytes(n *Node, upper bool) int64 {
	switch {
	case upper && n.frozen:
		return 0
	case n.isDir():
		total := int64(0)
		for _, k := range n.children() {
			total += fileBytes(k, upper)
		}
		return total
	case n.mode.IsRegular():
		return n.data.size()
	}
	return 0
}

// Mkdir makes directory p; its parent must exist.
func (v *View) Mkdir(p string, perm fs.FileMode, uid, gid int64) error {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	return v.mkdir(p, perm, uid, gid)
}

func (v *View) mkdir(p string, perm fs.FileMode, uid, gid int64) error {
	l, err := v.resolve(p, true)
	if err != nil {
		return err
	}
	if l.node != nil {
		return EEXIST
	}
	dir, err := v.writable(l)
	if err != nil {
		return err
	}
	n := NewDir(perm)
	n.uid, n.gid, n.mtime = uid, inheritedGID(dir, gid), v.now()
	if dir.mode&fs.ModeSetgid != 0 {
		n.mode |= fs.ModeSetgid // and passes it on, as Linux does
	}
	dir.put(l.name, n)
	v.changed()
	return nil
}

// inheritedGID is the group a new file or directory in dir gets: dir's when dir is
// setgid (an fsGroup volume's root is), else the creator's.
func inheritedGID(dir *Node, gid int64) int64 {
	if dir.mode&fs.ModeSetgid != 0 {
		return dir.gid
	}
	return gid
}

// MkdirAll makes p and its missing parents.
func (v *View) MkdirAll(p string, perm fs.FileMode, uid, gid int64) error {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	return v.mkdirAll(p, perm, uid, gid)
}

func (v *View) mkdirAll(p string, perm fs.FileMode, uid, gid int64) error {
	p = clean(p)
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		l, err := v.resolve(p[:i], true)
		if err != nil {
			return err
		}
		if l.node != nil {
			if !l.node.isDir() {
				return ENOTDIR
			}
			continue
		}
		if err := v.mkdir(p[:i], perm, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// Symlink makes p a symbolic link to target.
func (v *View) Symlink(target, p string) error {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.resolve(p, false)
	if err != nil {
		return err
	}
	if l.node != nil {
		return EEXIST
	}
	dir, err := v.writable(l)
	if err != nil {
		return err
	}
	dir.put(l.name, &Node{mode: fs.ModeSymlink | 0o777, extra: &extra{target: target}, mtime: v.now()})
	v.changed()
	return nil
}

// Mkfifo makes p a named pipe with permissions perm (and setuid, setgid, sticky), owned by uid and gid, as mkfifo(2)
// does (EEXIST if p exists). It is a node of its type only: stat, ls and test see a fifo,
// but it does not block, and what is written to it is kept as a file's content.
func (v *View) Mkfifo(p string, perm fs.FileMode, uid, gid int64) error {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.resolve(p, false)
	if err != nil {
		return err
	}
	if l.node != nil {
		return EEXIST
	}
	dir, err := v.writable(l)
	if err != nil {
		return err
	}
	perm &= fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
	dir.put(l.name, &Node{mode: fs.ModeNamedPipe | perm, uid: uid, gid: inheritedGID(dir, gid), mtime: v.now()})
	v.changed()
	return nil
}

// Remove removes p (a file, link or empty directory; any directory when all).
func (v *View) Remove(p string, all bool) error {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.resolve(p, false)
	if err != nil {
		return err
	}
	if l.node == nil {
		return ENOENT
	}
	if v.mounts.at(l.path) != nil {
		return EBUSY
	}
	if l.node.isDir() && l.node.nkids() > 0 && !all {
		return ENOTEMPTY
	}
	dir, err := v.writable(l)
	if err != nil {
		return err
	}
	dir.kids.del(l.name)
	v.changed()
	if l.mnt == nil {
		v.upper.Add(-fileBytes(l.node, true))
	}
	if v.onTmpfs(l) {
		v.tmpfs(-fileBytes(l.node, false))
	}
	return nil
}

// Rename moves oldp to newp (replacing a file or empty directory there), within one tree.
func (v *View) Rename(oldp, newp string) error {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	from, err := v.resolve(oldp, false)
	if err != nil {
		return err
	}
	if from.node == nil {
		return ENOENT
	}
	to, err := v.resolve(newp, false)
	if err != nil {
		return err
	}
	if from.mnt != to.mnt {
		return EXDEV
	}
	if to.node != nil && to.node.isDir() && to.node.nkids() > 0 {
		return ENOTEMPTY
	}
	src, err := v.writable(from)
	if err != nil {
		return err
	}
	n := src.kid(from.name)
	src.kids.del(from.name)
	v.changed()
	// Resolve the target again: copying the source's directories may have replaced its parent.
	to, _ = v.resolve(newp, false)
	dst, err := v.writable(to)
	if err != nil {
		src.put(from.name, n)
		return err
	}
	if from.mnt == nil {
		if to.node != nil {
			v.upper.Add(-fileBytes(to.node, true)) // replaced
		}
		if n.frozen && n.mode.IsRegular() {
			// overlayfs copies an image's file up to rename it: so does the view, and
			// the container's writable layer holds it from then on.
			n = n.shallowCopy()
			v.upper.Add(n.data.size())
		}
	}
	dst.put(to.name, n)
	return nil
}

// Chmod sets p's permission bits (and setuid/setgid/sticky).
func (v *View) Chmod(p string, mode fs.FileMode) error {
	return v.change(p, func(n *Node) { n.mode = n.mode.Type() | mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) })
}

// Chown sets p's owner and group (-1 keeps one).
func (v *View) Chown(p string, uid, gid int64) error {
	return v.change(p, func(n *Node) {
		if uid >= 0 {
			n.uid = uid
		}
		if gid >= 0 {
			n.gid = gid
		}
	})
}

// Touch sets p's modification time to now.
func (v *View) Touch(p string) error {
	now := v.now()
	return v.change(p, func(n *Node) { n.mtime = now })
}

// Chtimes sets p's modification time (following a symbolic link), as utimes(2) does:
// tar restores an archive's times with it, touch -d sets a given one.
func (v *View) Chtimes(p string, mtime time.Time) error {
	t := mtime.UnixNano()
	return v.change(p, func(n *Node) { n.mtime = t })
}

func (v *View) change(p string, f func(*Node)) error {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.resolve(p, true)
	if err != nil {
		return err
	}
	if l.node == nil {
		return ENOENT
	}
	n := l.node
	if l.parent != nil && v.mounts.at(l.path) == nil {
		dir, err := v.writable(l)
		if err != nil {
			return err
		}
		if n = dir.kid(l.name); n.frozen {
			n = n.shallowCopy()
			dir.put(l.name, n)
			if l.mnt == nil && n.mode.IsRegular() {
				v.upper.Add(n.data.size()) // copied up, as overlayfs does to chmod it
			}
		}
	} else if l.mnt != nil && l.mnt.ro {
		return EROFS
	}
	f(n)
	v.changed()
	return nil
}

// Entry is one name in a directory listing: an fs.DirEntry, so globbing can use ReadDir.
type Entry struct{ info Info }

func (e Entry) Name() string               { return e.info.Name }
func (e Entry) IsDir() bool                { return e.info.Mode.IsDir() }
func (e Entry) Type() fs.FileMode          { return e.info.Mode.Type() }
func (e Entry) Info() (fs.FileInfo, error) { return fileInfo{e.info}, nil }

// Stat is the entry's own description (a link is not followed).
func (e Entry) Stat() Info { return e.info }

// dirAt resolves p to a directory (under the disk's lock).
func (v *View) dirAt(p string) (loc, error) {
	l, err := v.resolve(p, true)
	switch {
	case err != nil:
		return loc{}, err
	case l.node == nil:
		return loc{}, ENOENT
	case !l.node.isDir():
		return loc{}, ENOTDIR
	}
	return l, nil
}

// ReadDirNames lists the names in directory p, sorted, as ReadDir would but without
// describing each (readdir without stat: the kubelet's housekeeping lists every pod's
// directory every two seconds).
func (v *View) ReadDirNames(p string) ([]string, error) {
	return v.readDirNames(p, nil)
}

// SelectDirNames is ReadDirNames of the names keep returns true for: a caller looking for
// a few among many (the orphans among 10,000 pod cgroups, every housekeeping) allocates
// nothing when it finds none. keep runs under the disk's lock: it must not call v.
func (v *View) SelectDirNames(p string, keep func(name string) bool) ([]string, error) {
	return v.readDirNames(p, keep)
}

func (v *View) readDirNames(p string, keep func(string) bool) ([]string, error) {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.dirAt(p)
	if err != nil {
		return nil, err
	}
	var out []string
	if keep == nil {
		out = make([]string, 0, l.node.nkids())
	}
	for name := range l.node.children() {
		if keep == nil || keep(name) {
			out = append(out, name)
		}
	}
	kids := len(out)
	prefix := strings.TrimSuffix(l.path, "/") + "/"
	for i := range v.mounts {
		mp := v.mounts[i].path
		rest, ok := strings.CutPrefix(mp, prefix)
		if !ok || rest == "" || mp == "/" {
			continue
		}
		name, _, _ := strings.Cut(rest, "/")
		if l.node.kid(name) == nil && !slices.Contains(out[kids:], name) && (keep == nil || keep(name)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ReadDir lists directory p, sorted by name; bound paths show what is bound there.
func (v *View) ReadDir(p string) ([]Entry, error) {
	v.disk.mu.Lock()
	defer v.disk.mu.Unlock()
	l, err := v.dirAt(p)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, l.node.nkids())
	for name, n := range l.node.children() {
		if len(v.mounts) > 0 {
			if m := v.mounts.at(path.Join(l.path, name)); m != nil {
				n = m.node
			}
		}
		out = append(out, Entry{n.info(name)})
	}
	// Mount points the tree lacks still show, and the directories above deeper ones.
	seen := map[string]bool{}
	prefix := strings.TrimSuffix(l.path, "/") + "/"
	for i := range v.mounts {
		mp, m := v.mounts[i].path, &v.mounts[i]
		rest, ok := strings.CutPrefix(mp, prefix)
		if !ok || rest == "" || mp == "/" {
			continue
		}
		name, deeper, _ := strings.Cut(rest, "/")
		if l.node.kid(name) != nil || seen[name] {
			continue
		}
		seen[name] = true
		if deeper == "" {
			out = append(out, Entry{m.node.info(name)})
		} else {
			out = append(out, Entry{virtualDir.info(name)})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.info.Name, b.info.Name) })
	return out, nil
}

// fileInfo adapts Info to fs.FileInfo.
type fileInfo struct{ i Info }

func (f fileInfo) Name() string       { return f.i.Name }
func (f fileInfo) Size() int64        { return f.i.Size }
func (f fileInfo) Mode() fs.FileMode  { return f.i.Mode }
func (f fileInfo) ModTime() time.Time { return f.i.ModTime }
func (f fileInfo) IsDir() bool        { return f.i.Mode.IsDir() }
func (f fileInfo) Sys() any           { return f.i }
