package images

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/netclients"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// build makes an image's root filesystem: the skeleton every image has, the image's
// applets, then its files in order (a later one at the same path replaces an earlier one,
// as a later layer does), then its extra /etc/passwd and /etc/group lines. The tree is
// frozen before it is returned.
func (c *catalogue) build(e *entry, applets []string) (*vfs.Node, error) {
	v := vfs.New(nil)
	for _, f := range c.Skeleton {
		if err := put(v, f); err != nil {
			return nil, fmt.Errorf("skeleton %s: %w", f.Path, err)
		}
	}
	if a := e.Applets; a != nil {
		// busybox's network applets (wget, nc) are simulated apart from the others.
		for _, name := range slices.Concat(applets, netclients.Applets()) {
			if !a.keeps(name) {
				continue
			}
			dir := a.Dir
			if a.Layout == "busybox" {
				if dir = c.busyboxDir[name]; dir == "" {
					dir = "/bin"
				}
			}
			if err := put(v, file{Path: path.Join(dir, name), Program: name}); err != nil {
				return nil, fmt.Errorf("applet %s: %w", name, err)
			}
		}
	}
	for _, f := range e.Files {
		if err := put(v, f); err != nil {
			return nil, fmt.Errorf("file %s: %w", f.Path, err)
		}
	}
	for _, db := range []struct {
		path  string
		lines []string
	}{{"/etc/passwd", e.Passwd}, {"/etc/group", e.Group}} {
		if len(db.lines) == 0 {
			continue
		}
		if err := v.WriteFile(db.path, []byte(strings.Join(db.lines, "\n")+"\n"), 0o644, true, 0, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", db.path, err)
		}
	}
	root := v.Root()
	root.Freeze()
	return root, nil
}

// put creates f in v, replacing what is at its path unless both are directories.
func put(v *vfs.View, f file) error {
	if err := v.MkdirAll(path.Dir(f.Path), 0o755, 0, 0); err != nil {
		return err
	}
	old, err := v.Lstat(f.Path)
	exists := err == nil
	if exists && !(f.Dir && old.Mode.IsDir()) && !(f.isRegular() && old.Mode.IsRegular()) {
		if err := v.Remove(f.Path, true); err != nil {
			return err
		}
		exists = false
	}
	switch {
	case f.Link != "":
		return v.Symlink(f.Link, f.Path)
	case f.Dir:
		if !exists {
			if err := v.Mkdir(f.Path, 0o755, f.UID, f.GID); err != nil {
				return err
			}
		}
	default:
		if err := v.WriteFile(f.Path, []byte(f.Content), 0o644, false, f.UID, f.GID); err != nil {
			return err
		}
		if err := v.SetProgram(f.Path, f.Program); err != nil {
			return err
		}
	}
	if err := v.Chmod(f.Path, f.mode()); err != nil {
		return err
	}
	return v.Chown(f.Path, f.UID, f.GID)
}

func (f file) isRegular() bool { return !f.Dir && f.Link == "" }

// mode is f's permissions: as given, else 0755 for directories and programs, 0644 for
// other files.
func (f file) mode() fs.FileMode {
	if f.Mode != "" {
		m, _ := parseMode(f.Mode) // validated when the catalogue loaded
		return m
	}
	if f.Dir || f.Program != "" {
		return 0o755
	}
	return 0o644
}
