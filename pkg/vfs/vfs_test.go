package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustWrite(t *testing.T, v *View, p, data string) {
	t.Helper()
	if err := v.MkdirAll(p[:strings.LastIndex(p, "/")+1], 0o755, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile(p, []byte(data), 0o644, false, 0, 0); err != nil {
		t.Fatal(err)
	}
}

func read(v *View, p string) string {
	b, err := v.ReadFile(p)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

// An image is shared by its containers: what one writes, another never sees, and the
// image itself does not change.
func TestCopyOnWrite(t *testing.T) {
	img := New(nil)
	mustWrite(t, img, "/etc/motd", "image")
	root := img.Root()
	node := New(nil)
	a, b := NewView(node, root, false), NewView(node, root, false)

	if err := a.WriteFile("/etc/motd", []byte("a"), 0o644, false, 0, 0); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, a, "/etc/new/file", "a-only")
	if err := a.Remove("/etc/motd", false); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v    *View
		p    string
		want string
	}{
		{a, "/etc/motd", "error: No such file or directory"},
		{a, "/etc/new/file", "a-only"},
		{b, "/etc/motd", "image"},
		{b, "/etc/new/file", "error: No such file or directory"},
		{NewView(node, root, false), "/etc/motd", "image"},
	} {
		if got := read(tc.v, tc.p); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.p, got, tc.want)
		}
	}
}

// Mounts bind the node's trees: writes through one container are seen by another and by
// the node, read-only mounts refuse them, and a read-only root refuses the rest.
func TestMounts(t *testing.T) {
	node := New(nil)
	mustWrite(t, node, "/var/lib/kubelet/pods/u/volumes/empty/seed", "x")
	mustWrite(t, node, "/var/lib/kubelet/pods/u/etc-hosts", "127.0.0.1 localhost\n")
	img := New(nil).Root()
	a := NewView(node, img, false)
	b := NewView(node, img, true)
	for _, v := range []*View{a, b} {
		if err := v.Bind("/data", node, "/var/lib/kubelet/pods/u/volumes/empty", false); err != nil {
			t.Fatal(err)
		}
		if err := v.Bind("/etc/hosts", node, "/var/lib/kubelet/pods/u/etc-hosts", true); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.WriteFile("/data/shared", []byte("from a"), 0o644, false, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := read(b, "/data/shared"); got != "from a" {
		t.Errorf("b reads %q, want what a wrote", got)
	}
	if got := read(node, "/var/lib/kubelet/pods/u/volumes/empty/shared"); got != "from a" {
		t.Errorf("the node reads %q", got)
	}
	for _, tc := range []struct {
		name string
		err  error
		want Errno
	}{
		{"read-only file mount", a.WriteFile("/etc/hosts", []byte("x"), 0o644, false, 0, 0), EROFS},
		{"read-only root", b.WriteFile("/tmp-file", []byte("x"), 0o644, false, 0, 0), EROFS},
		{"remove a mount point", a.Remove("/data", true), EBUSY},
		{"missing parent", a.WriteFile("/no/such/file", nil, 0o644, false, 0, 0), ENOENT},
		{"file as directory", a.Mkdir("/etc/hosts/x", 0o755, 0, 0), ENOTDIR},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if err := b.WriteFile("/data/ok", nil, 0o644, false, 0, 0); err != nil {
		t.Errorf("a read-only root must still write its volumes: %v", err)
	}
	entries, err := a.ReadDir("/")
	if err != nil || len(entries) != 2 || entries[0].Name() != "data" || entries[1].Name() != "etc" {
		t.Errorf("ReadDir(/) = %v, %v: want the mount points data and etc", entries, err)
	}
	for _, dir := range []string{"/", "/etc", "/data"} {
		entries, err := a.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, e := range entries {
			want = append(want, e.Name())
		}
		if names, err := a.ReadDirNames(dir); err != nil || !slices.Equal(names, want) {
			t.Errorf("ReadDirNames(%s) = %q, %v; ReadDir has %q", dir, names, err, want)
		}
	}
}

// The layout of a configMap volume: keys are links into ..data, itself a link to a
// timestamped directory that an update replaces at once.
func TestSymlinks(t *testing.T) {
	v := New(nil)
	mustWrite(t, v, "/vol/..2024_01/key", "v1")
	steps := []error{v.Symlink("..2024_01", "/vol/..data"), v.Symlink("..data/key", "/vol/key")}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := read(v, "/vol/key"); got != "v1" {
		t.Fatalf("key = %q", got)
	}
	mustWrite(t, v, "/vol/..2024_02/key", "v2")
	if err := v.Symlink("..2024_02", "/vol/..data_tmp"); err != nil {
		t.Fatal(err)
	}
	if err := v.Rename("/vol/..data_tmp", "/vol/..data"); err != nil {
		t.Fatal(err)
	}
	if got := read(v, "/vol/key"); got != "v2" {
		t.Errorf("after the swap key = %q, want v2", got)
	}
	info, err := v.Lstat("/vol/key")
	if err != nil || info.Mode&fs.ModeSymlink == 0 || info.Target != "..data/key" {
		t.Errorf("Lstat = %+v, %v: want the link", info, err)
	}
	if err := v.Symlink("/loop", "/loop"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ReadFile("/loop"); !errors.Is(err, ELOOP) {
		t.Errorf("a link to itself: %v, want ELOOP", err)
	}
}

func TestErrnoMatchesFS(t *testing.T) {
	if !errors.Is(ENOENT, fs.ErrNotExist) || !errors.Is(EROFS, fs.ErrPermission) || errors.Is(ENOENT, fs.ErrExist) {
		t.Error("errnos must match the io/fs sentinels")
	}
	if ENOENT.Error() != "No such file or directory" {
		t.Errorf("ENOENT reads %q", ENOENT.Error())
	}
}

// Generation moves with every change to what a path names (a PATH search cached at one
// generation must not outlive it) and not with reads or a file's new content.
func TestGeneration(t *testing.T) {
	tests := []struct {
		name    string
		op      func(v *View) error
		changes bool
	}{
		{"stat", func(v *View) error { _, err := v.Stat("/bin/sleep"); return err }, false},
		{"read", func(v *View) error { _, err := v.ReadFile("/bin/sleep"); return err }, false},
		{"rewrite", func(v *View) error { return v.WriteFile("/bin/sleep", []byte("x"), 0o755, false, 0, 0) }, false},
		{"append", func(v *View) error { return v.WriteFile("/bin/sleep", []byte("x"), 0o755, true, 0, 0) }, false},
		{"create", func(v *View) error { return v.WriteFile("/usr/bin/sleep", nil, 0o755, false, 0, 0) }, true},
		{"mkdir", func(v *View) error { return v.Mkdir("/opt", 0o755, 0, 0) }, true},
		{"symlink", func(v *View) error { return v.Symlink("/bin/sleep", "/bin/nap") }, true},
		{"remove", func(v *View) error { return v.Remove("/bin/sleep", false) }, true},
		{"rename", func(v *View) error { return v.Rename("/bin/sleep", "/bin/nap") }, true},
		{"chmod", func(v *View) error { return v.Chmod("/bin/sleep", 0o644) }, true},
		{"bind", func(v *View) error { return v.Bind("/mnt", v, "/usr", false) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := New(nil)
			mustWrite(t, v, "/bin/sleep", "")
			if err := v.MkdirAll("/usr/bin", 0o755, 0, 0); err != nil {
				t.Fatal(err)
			}
			before := v.Generation()
			if err := tt.op(v); err != nil {
				t.Fatal(err)
			}
			if got := v.Generation() != before; got != tt.changes {
				t.Errorf("generation changed: %v, want %v", got, tt.changes)
			}
		})
	}
}

// Paths are cleaned as path.Clean would, and walked the same whether clean or not.
func TestClean(t *testing.T) {
	for _, p := range []string{"/", "", "a", "/a", "/a/", "//a", "/a/./b", "/a/../b", "/a//b", "/..", "/a/b/c", ".", "/.a", "/a..", "/a/..."} {
		if got, want := clean(p), path.Clean("/"+p); got != want {
			t.Errorf("clean(%q) = %q, want %q", p, got, want)
		}
	}
}

// A mount moves its own view's generation, not another's: setting up one container's
// mounts leaves the others' remembered lookups valid.
func TestGenerationOfMounts(t *testing.T) {
	node := New(nil)
	mustWrite(t, node, "/data/file", "x")
	a, b := NewView(node, nil, false), NewView(node, nil, false)
	ga, gb := a.Generation(), b.Generation()
	if err := a.Bind("/mnt", node, "/data", false); err != nil {
		t.Fatal(err)
	}
	if a.Generation() == ga {
		t.Error("a bind left its view's generation unchanged")
	}
	if b.Generation() != gb {
		t.Error("a bind in another view changed this one's generation")
	}
	mustWrite(t, node, "/data/new", "y")
	if b.Generation() == gb {
		t.Error("a file made on the node's disk left a view's generation unchanged")
	}
}

// A generated file is made when read, from the filesystem as it is then (its generator may
// read it), says size 0 as /proc's files do, and what is written replaces it.
func TestGeneratedFile(t *testing.T) {
	v := New(nil)
	mustWrite(t, v, "/data/x", "1")
	proc := NewDir(0o555)
	proc.Add("count", NewGenerated(func(any) []byte {
		entries, _ := v.ReadDirNames("/data")
		return []byte(strings.Join(entries, ",") + "\n")
	}, 0o644))
	v.BindNode("/proc", proc, false)
	if got := read(v, "/proc/count"); got != "x\n" {
		t.Errorf("read %q, want x", got)
	}
	mustWrite(t, v, "/data/y", "2")
	if got := read(v, "/proc/count"); got != "x,y\n" {
		t.Errorf("read %q after a change, want x,y", got)
	}
	if info, err := v.Stat("/proc/count"); err != nil || info.Size != 0 {
		t.Errorf("stat = %+v, %v; want size 0", info, err)
	}
	if err := v.WriteFile("/proc/count", []byte("w"), 0, false, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := read(v, "/proc/count"); got != "w" {
		t.Errorf("read %q after a write, want w", got)
	}
}

// One generated file serves every view it is bound in, each reading what its own context
// makes (one /proc tree for every container); a view without a context gives nil.
func TestGeneratedFileByContext(t *testing.T) {
	node := New(nil)
	proc := NewDir(0o555)
	proc.Add("whoami", NewGenerated(func(ctx any) []byte {
		name, _ := ctx.(string)
		return []byte("I am " + name)
	}, 0o444))
	proc.Freeze()
	for _, tc := range []struct{ ctx, want string }{{"a", "I am a"}, {"b", "I am b"}, {"", "I am "}} {
		v := NewView(node, nil, false)
		if tc.ctx != "" {
			v.SetContext(tc.ctx)
		}
		v.BindNode("/proc", proc, true)
		if got := read(v, "/proc/whoami"); got != tc.want {
			t.Errorf("context %q: read %q, want %q", tc.ctx, got, tc.want)
		}
		r, err := v.Open("/proc/whoami")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := io.ReadAll(r); string(got) != tc.want {
			t.Errorf("context %q: Open reads %q, want %q", tc.ctx, got, tc.want)
		}
	}
}

// Directories that share a template's entries (ShareEntries) are each told apart by a
// NewGeneratedIn file, read through the node's paths or a view bound to one of them; a
// change under one, through a view or Unshare, copies its table and changes neither the
// template nor the others, and the directory stays the node it was.
func TestSharedEntries(t *testing.T) {
	names := map[*Node]string{} // what the template's owner knows each directory by
	tmpl := NewDir(0o755)
	tmpl.Add("name", NewGeneratedIn(func(_ any, dir *Node) []byte { return []byte(names[dir]) }, 0o444))
	tmpl.Add("conf", NewFile([]byte("shared"), 0o644))
	tmpl.Freeze()
	tests := []struct {
		name   string
		change func(t *testing.T, node *View, a *Node)
		a, b   map[string]string // what a's and b's files read after change ("" : missing)
	}{
		{"alike", func(*testing.T, *View, *Node) {}, map[string]string{"conf": "shared", "new": ""}, map[string]string{"conf": "shared"}},
		{"a file written in one", func(t *testing.T, node *View, _ *Node) {
			if err := node.WriteFile("/d/a/conf", []byte("mine"), 0o644, false, 0, 0); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"conf": "mine"}, map[string]string{"conf": "shared"}},
		{"a file made in one", func(t *testing.T, node *View, _ *Node) {
			if err := node.WriteFile("/d/a/new", []byte("x"), 0o644, false, 0, 0); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"new": "x", "conf": "shared"}, map[string]string{"new": ""}},
		{"one removed from", func(t *testing.T, node *View, _ *Node) {
			if err := node.Remove("/d/a/conf", false); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"conf": ""}, map[string]string{"conf": "shared"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := New(nil)
			d := NewDir(0o755)
			a, b := NewDir(0o755), NewDir(0o755)
			for name, n := range map[string]*Node{"a": a, "b": b} {
				n.ShareEntries(tmpl)
				d.Add(name, n)
			}
			node.BindNode("/d", d, false)
			clear(names)
			names[a], names[b] = "a", "b"
			view := NewView(node, nil, false)
			view.BindNode("/mine", a, true)
			tt.change(t, node, a)
			for name, want := range map[string]map[string]string{"a": tt.a, "b": tt.b} {
				if got := read(node, "/d/"+name+"/name"); got != name {
					t.Errorf("%s/name reads %q", name, got)
				}
				for file, w := range want {
					got, err := node.ReadFile("/d/" + name + "/" + file)
					if w == "" && err == nil || w != "" && string(got) != w {
						t.Errorf("%s/%s reads %q (%v), want %q", name, file, got, err, w)
					}
				}
			}
			if got := read(view, "/mine/name"); got != "a" {
				t.Errorf("a's view reads name %q", got)
			}
			for file, w := range tt.a {
				got, err := view.ReadFile("/mine/" + file)
				if w == "" && err == nil || w != "" && string(got) != w {
					t.Errorf("a's view reads %s = %q (%v), want %q", file, got, err, w)
				}
			}
			if n := len(tmpl.kids.ents); n != 2 {
				t.Errorf("the template has %d entries, want 2", n)
			}
			if a.kids == b.kids && tt.name != "alike" || b.kids != tmpl.kids {
				t.Errorf("tables: a's shared %v, b's shared %v", a.kids == tmpl.kids, b.kids == tmpl.kids)
			}
		})
	}
}

// A directory finds its entries whatever its size (a scan up to 16, an index above), after
// removals (the last entry moves into the hole) and in a copy that changes on its own.
func TestDirTable(t *testing.T) {
	for _, n := range []int{1, smallDir, smallDir + 1, 200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			d := NewDir(0o755)
			for i := range n {
				d.Add(fmt.Sprintf("f%d", i), NewFile([]byte(fmt.Sprint(i)), 0o644))
			}
			for i := 0; i < n; i += 3 {
				d.kids.del(fmt.Sprintf("f%d", i))
			}
			c := d.shallowCopy()
			c.put("new", NewFile(nil, 0o644))
			for i := range n {
				k := d.kid(fmt.Sprintf("f%d", i))
				if gone := i%3 == 0; (k == nil) != gone {
					t.Fatalf("f%d: found %v, removed %v", i, k != nil, gone)
				}
				if k != nil && string(k.data.bytes()) != fmt.Sprint(i) {
					t.Fatalf("f%d holds %q", i, k.data.bytes())
				}
			}
			if d.kid("new") != nil || c.kid("new") == nil {
				t.Error("a copy's new entry is not its own")
			}
			if got, want := d.nkids(), n-(n+2)/3; got != want {
				t.Errorf("%d entries, want %d", got, want)
			}
		})
	}
}

// TestSetgidDirectory: what is created in a setgid directory takes its group, and a new
// directory there is setgid too, as on Linux (an fsGroup volume's subPaths rely on it).
func TestSetgidDirectory(t *testing.T) {
	v := New(func() time.Time { return time.Unix(0, 0) })
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(v.MkdirAll("/vol", 0o777, 0, 123))
	check(v.Chmod("/vol", fs.ModeDir|fs.ModeSetgid|0o777))
	check(v.MkdirAll("/vol/sub/deeper", 0o755, 1000, 1000))
	check(v.WriteFile("/vol/sub/f", []byte("x"), 0o644, false, 1000, 1000))
	check(v.MkdirAll("/plain/d", 0o755, 1000, 1000))
	tests := []struct {
		path   string
		gid    int64
		setgid bool
	}{
		{"/vol/sub", 123, true},
		{"/vol/sub/deeper", 123, true},
		{"/vol/sub/f", 123, false},
		{"/plain/d", 1000, false},
	}
	for _, tt := range tests {
		info, err := v.Stat(tt.path)
		check(err)
		if info.GID != tt.gid || (info.Mode&fs.ModeSetgid != 0) != tt.setgid || info.UID != 1000 {
			t.Errorf("%s: uid %d gid %d mode %v, want uid 1000 gid %d setgid %v", tt.path, info.UID, info.GID, info.Mode, tt.gid, tt.setgid)
		}
	}
}

// TestEditBoundTree: a tree bound in a view changes under Edit (the kernel's cgroup
// hierarchy as the kubelet makes and removes cgroups) and every view that binds it, or a
// directory of it, sees the change at once; Generation counts it.
func TestEditBoundTree(t *testing.T) {
	node := New(nil)
	tree := NewDir(0o755)
	node.BindNode("/sys/fs/cgroup", tree, false)
	pod := NewDir(0o755)
	pod.Grow(2)
	node.Edit(func() { tree.Add("pod1", pod) })
	ctr := NewView(node, nil, false)
	ctr.BindNode("/sys/fs/cgroup", pod, true)
	gen := node.Generation()
	node.Edit(func() { pod.Add("cpu.max", NewFile([]byte("max 100000\n"), 0o644)) })
	if node.Generation() == gen {
		t.Error("Edit did not change the generation")
	}
	for _, tc := range []struct {
		v    *View
		p    string
		want string
	}{
		{node, "/sys/fs/cgroup/pod1/cpu.max", "max 100000\n"},
		{ctr, "/sys/fs/cgroup/cpu.max", "max 100000\n"},
	} {
		if got := read(tc.v, tc.p); got != tc.want {
			t.Errorf("read %s = %q, want %q", tc.p, got, tc.want)
		}
	}
	node.Edit(func() { tree.Remove("pod1"); tree.Remove("missing") })
	if got := read(node, "/sys/fs/cgroup/pod1/cpu.max"); got != "error: "+ENOENT.Error() {
		t.Errorf("read after Remove = %q, want ENOENT", got)
	}
	if got := read(ctr, "/sys/fs/cgroup/cpu.max"); got != "max 100000\n" {
		t.Errorf("a bind holds the directory after its removal, as a mount holds the inode: read %q", got)
	}
}

func TestMkfifo(t *testing.T) {
	v := New(nil)
	mustWrite(t, v, "/d/f", "x")
	if err := v.Mkfifo("/d/p", 0o640, 5, 6); err != nil {
		t.Fatal(err)
	}
	info, err := v.Stat("/d/p")
	if err != nil || info.Mode != fs.ModeNamedPipe|0o640 || info.UID != 5 || info.GID != 6 || info.Size != 0 {
		t.Errorf("Stat = %+v, %v: want a fifo, 0640, 5:6", info, err)
	}
	for _, p := range []string{"/d/p", "/d/f"} {
		if err := v.Mkfifo(p, 0o644, 0, 0); ErrnoOf(err) != EEXIST {
			t.Errorf("Mkfifo(%s) over it = %v, want EEXIST", p, err)
		}
	}
	if err := v.Mkfifo("/nodir/p", 0o644, 0, 0); ErrnoOf(err) != ENOENT {
		t.Errorf("Mkfifo without its directory = %v, want ENOENT", err)
	}
}

// TestReadFileString: what ReadFile reads, as a string, for a small file, one larger than
// the copy's chunk, an empty one, a generated one and a missing one.
func TestReadFileString(t *testing.T) {
	v := New(nil)
	big := strings.Repeat("0123456789abcdef", 1000) + "tail"
	mustWrite(t, v, "/s", "#!/bin/sh\necho hi\n")
	mustWrite(t, v, "/big", big)
	mustWrite(t, v, "/empty", "")
	if err := v.MkdirAll("/gen", 0o755, 0, 0); err != nil {
		t.Fatal(err)
	}
	v.BindNode("/gen/file", NewGenerated(func(any) []byte { return []byte("made now\n") }, 0o444), true)
	for _, p := range []string{"/s", "/big", "/empty", "/gen/file", "/missing", "/gen"} {
		t.Run(p, func(t *testing.T) {
			got, err := v.ReadFileString(p)
			if err != nil {
				got = "error: " + err.Error()
			}
			if want := read(v, p); got != want {
				t.Errorf("ReadFileString(%s) = %.40q (%d bytes), ReadFile %.40q (%d bytes)", p, got, len(got), want, len(want))
			}
		})
	}
}

// FileEquals answers as ReadFile and bytes.Equal would, for a literal file, one held as
// extents (runs and repeats), a symbolic link and a missing file.
func TestFileEquals(t *testing.T) {
	v := New(nil)
	mustWrite(t, v, "/vol/token", "abc")
	big := strings.Repeat("x", 200<<10) + "tail" // runs: held as extents, not a literal
	mustWrite(t, v, "/vol/big", big)
	if c, _, _, _ := v.snapshot("/vol/big"); c.x == nil {
		t.Fatal("/vol/big is held as a literal; the test wants extents")
	}
	if err := v.Symlink("token", "/vol/link"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, data string
		want             bool
		wantErr          bool
	}{
		{"literal, same", "/vol/token", "abc", true, false},
		{"literal, other bytes", "/vol/token", "abd", false, false},
		{"literal, longer", "/vol/token", "abcd", false, false},
		{"literal, empty", "/vol/token", "", false, false},
		{"extents, same", "/vol/big", big, true, false},
		{"extents, last byte", "/vol/big", big[:len(big)-1] + "X", false, false},
		{"extents, shorter", "/vol/big", big[:len(big)-1], false, false},
		{"through a link", "/vol/link", "abc", true, false},
		{"missing", "/vol/none", "abc", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.FileEquals(tc.path, []byte(tc.data))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("FileEquals(%s) = %v, %v; want %v (error: %v)", tc.path, got, err, tc.want, tc.wantErr)
			}
			b, rerr := v.ReadFile(tc.path)
			if rerr == nil && (string(b) == tc.data) != got {
				t.Errorf("FileEquals(%s) = %v, but ReadFile and bytes.Equal say %v", tc.path, got, !got)
			}
		})
	}
}

// A file written shared holds the caller's bytes, and nothing written to it afterwards (an
// append, a write in place, a truncation) reaches them.
func TestWriteFileShared(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		change func(v *View, p string) error
		want   func(orig string) string
	}{
		{"left alone", 1300, nil, func(o string) string { return o }},
		{"appended to", 1300, func(v *View, p string) error { return v.WriteFile(p, []byte("more"), 0o644, true, 0, 0) },
			func(o string) string { return o + "more" }},
		{"written in place", 1300, func(v *View, p string) error { return v.WriteFileAt(p, []byte("XY"), 10, 0o644, 0, 0) },
			func(o string) string { return o[:10] + "XY" + o[12:] }},
		{"truncated", 1300, func(v *View, p string) error { return v.Truncate(p, 5) }, func(o string) string { return o[:5] }},
		{"rewritten", 1300, func(v *View, p string) error { return v.WriteFile(p, []byte("new"), 0o644, false, 0, 0) },
			func(string) string { return "new" }},
		{"too big to share", maxLiteral + 1, func(v *View, p string) error { return v.WriteFile(p, []byte("more"), 0o644, true, 0, 0) },
			func(o string) string { return o + "more" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := make([]byte, tc.size, tc.size+64) // room to append in place, which must not be used
			for i := range data {
				data[i] = byte('a' + i%23)
			}
			orig := string(data)
			v := New(nil)
			if err := v.MkdirAll("/vol", 0o755, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := v.WriteFileShared("/vol/ca.crt", data, 0o644, 0, 0); err != nil {
				t.Fatal(err)
			}
			c, _, _, _ := v.snapshot("/vol/ca.crt")
			if shared := c.x == nil && len(c.lit) > 0 && &c.lit[0] == &data[0]; shared != (tc.size <= maxLiteral) {
				t.Errorf("the file holds the caller's bytes: %v, want %v", shared, tc.size <= maxLiteral)
			}
			if tc.change != nil {
				if err := tc.change(v, "/vol/ca.crt"); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := read(v, "/vol/ca.crt"), tc.want(orig); got != want {
				t.Errorf("the file reads %d bytes %.20q..., want %d bytes %.20q...", len(got), got, len(want), want)
			}
			if string(data) != orig || string(data[:cap(data)][tc.size:]) != string(make([]byte, 64)) {
				t.Error("the caller's bytes (or the room after them) were written")
			}
		})
	}
}
