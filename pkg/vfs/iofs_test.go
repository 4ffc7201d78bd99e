package vfs

import (
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"
)

// TestFSPassesFSTest: a container's view as io/fs sees it meets io/fs's whole contract
// (testing/fstest.TestFS: Open, Stat, ReadDir in slices, ReadFile, Seek and ReadAt, Glob,
// links through ReadLinkFS), on the layers a container has: an image, its own writes on top,
// a file it removed, and a volume bound in.
func TestFSPassesFSTest(t *testing.T) {
	img := New(nil)
	mustWrite(t, img, "/etc/hostname", "image\n")
	mustWrite(t, img, "/etc/motd", "welcome\n")
	mustWrite(t, img, "/usr/share/doc/readme", "docs\n")
	if err := img.Symlink("/etc/hostname", "/etc/name"); err != nil {
		t.Fatal(err)
	}
	node := New(nil)
	mustWrite(t, node, "/volumes/data/a.txt", "volume\n")
	v := NewView(node, img.Root(), false)
	mustWrite(t, v, "/tmp/new/file", "written\n")
	if err := v.Remove("/etc/motd", false); err != nil {
		t.Fatal(err)
	}
	if err := v.MkdirAll("/data", 0o755, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := v.Bind("/data", node, "/volumes/data", false); err != nil {
		t.Fatal(err)
	}

	fsys := v.FS()
	if err := fstest.TestFS(fsys, "etc/hostname", "etc/name", "usr/share/doc/readme", "tmp/new/file", "data/a.txt"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		want error
	}{
		{"etc/motd", fs.ErrNotExist}, // removed in the container's layer
		{"/etc/hostname", fs.ErrInvalid},
		{"etc/../etc/hostname", fs.ErrInvalid},
	} {
		if _, err := fsys.Open(tt.name); !errors.Is(err, tt.want) {
			t.Errorf("Open(%q) = %v, want %v", tt.name, err, tt.want)
		}
	}
	if data, err := fs.ReadFile(fsys, "etc/name"); err != nil || string(data) != "image\n" {
		t.Errorf("through the link: %q, %v", data, err)
	}
	if target, err := fs.ReadLink(fsys, "etc/name"); err != nil || target != "/etc/hostname" {
		t.Errorf("ReadLink: %q, %v", target, err)
	}
}
