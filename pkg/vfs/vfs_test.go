package vfs

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
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
