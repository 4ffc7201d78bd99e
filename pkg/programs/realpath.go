package programs

import (
	"io/fs"
	"path"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

const maxSymlinks = 40

// realpath is realpath(3): name made absolute with every link resolved; every component
// must exist.
func (c *cmd) realpath(name string) (string, error) {
	p := c.abs(name)
	resolved := "/"
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	links := 0
	for len(parts) > 0 {
		part := parts[0]
		parts = parts[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, part)
		info, err := c.fs().Lstat(next)
		if err != nil {
			return "", err
		}
		if info.Mode&fs.ModeSymlink != 0 {
			links++
			if links > maxSymlinks {
				return "", vfs.ELOOP
			}
			t := info.Target
			if strings.HasPrefix(t, "/") {
				resolved = "/"
			}
			parts = append(strings.Split(t, "/"), parts...)
			continue
		}
		if len(parts) > 0 && !info.Mode.IsDir() {
			return "", vfs.ENOTDIR // "file/..." or "file/"
		}
		resolved = next
	}
	return resolved, nil
}

// realpathMissingOK is busybox's xmalloc_realpath_coreutils: realpath, but a missing last
// component (or a dangling link's target) is allowed when its directory exists.
func (c *cmd) realpathMissingOK(name string) (string, error) {
	r, err := c.realpath(name)
	if err == nil || vfs.ErrnoOf(err) != vfs.ENOENT {
		return r, err
	}
	if info, lerr := c.fs().Lstat(c.abs(name)); lerr == nil && info.Mode&fs.ModeSymlink != 0 {
		t := info.Target
		if !strings.HasPrefix(t, "/") {
			t = joinPath(c.p.Dir(), t)
		}
		return c.realpathMissingOK(t)
	}
	trimmed := strings.TrimRight(name, "/")
	if trimmed == "" {
		return "/", nil
	}
	i := strings.LastIndexByte(trimmed, '/')
	switch {
	case i < 0:
		return "", err
	case i == 0:
		return trimmed, nil
	}
	dir, rerr := c.realpath(trimmed[:i])
	if rerr != nil {
		return "", rerr
	}
	return joinPath(dir, trimmed[i+1:]), nil
}

func runReadlink(c *cmd) int {
	o, args := c.getopt("fnvsq", nil)
	if len(args) != 1 {
		c.showUsage(1)
	}
	name := args[0]
	var out string
	if o.Has('f') {
		r, err := c.realpathMissingOK(name)
		if err != nil {
			if o.Has('v') {
				c.perror(err, "%s", name)
			}
			return 1
		}
		out = r
	} else {
		info, err := c.fs().Lstat(c.abs(name))
		if err == nil && info.Mode&fs.ModeSymlink == 0 {
			err = vfs.EINVAL
		}
		if err != nil {
			if o.Has('v') {
				c.perror(err, "%s", name)
			}
			return 1
		}
		out = info.Target
	}
	if o.Has('n') {
		c.write(out)
	} else {
		c.write(out + "\n")
	}
	return 0
}

func runRealpath(c *cmd) int {
	if len(c.args) == 0 {
		c.showUsage(1)
	}
	status := 0
	for _, name := range c.args {
		r, err := c.realpathMissingOK(name)
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
			continue
		}
		c.write(r + "\n")
	}
	return status
}
