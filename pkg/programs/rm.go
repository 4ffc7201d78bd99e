package programs

import (
	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runRm(c *cmd) int {
	o, args := c.getopt("fiRrv", nil)
	force := o.Has('f')
	recursive := o.Has('r') || o.Has('R')
	if len(args) == 0 && !force {
		c.showUsage(1)
	}
	status := 0
	for _, name := range args {
		base := lastComponent(name)
		if base == "." || base == ".." {
			c.errorf("can't remove '.' or '..'")
			status = 1
			continue
		}
		if !c.removeFile(name, force, recursive, o.Has('v')) {
			status = 1
		}
	}
	return status
}

// removeFile is busybox's remove_file: it removes name (a directory's contents first when
// recursive) and reports why it cannot.
func (c *cmd) removeFile(name string, force, recursive, verbose bool) bool {
	c.tick()
	p := c.abs(name)
	info, err := c.fs().Lstat(p)
	if err != nil {
		if vfs.ErrnoOf(err) != vfs.ENOENT {
			c.perror(err, "can't stat '%s'", name)
			return false
		}
		if !force {
			c.perror(err, "can't remove '%s'", name)
			return false
		}
		return true
	}
	if info.Mode.IsDir() {
		if !recursive {
			c.errorf("'%s' is a directory", name)
			return false
		}
		entries, err := c.fs().ReadDir(p)
		if err != nil {
			c.perror(err, "can't remove '%s'", name)
			return false
		}
		ok := true
		for _, e := range entries {
			if !c.removeFile(joinPath(name, e.Name()), force, recursive, verbose) {
				ok = false
			}
		}
		if !ok {
			return false
		}
		if err := c.fs().Remove(p, false); err != nil {
			c.perror(err, "can't remove '%s'", name)
			return false
		}
		if verbose {
			c.printf("removed directory: '%s'\n", name)
		}
		return true
	}
	if err := c.fs().Remove(p, false); err != nil {
		c.perror(err, "can't remove '%s'", name)
		return false
	}
	if verbose {
		c.printf("removed '%s'\n", name)
	}
	return true
}

func runRmdir(c *cmd) int {
	o, args := c.getopt("pvi", []getopt.Long{
		{Name: "parents", Key: 'p'}, {Name: "verbose", Key: 'v'},
		{Name: "ignore-fail-on-non-empty", Key: 'i'},
	})
	if len(args) == 0 {
		c.showUsage(1)
	}
	status := 0
	for _, name := range args {
		c.tick()
		for {
			if o.Has('v') {
				c.printf("rmdir: removing directory, '%s'\n", name)
			}
			err := c.rmdir(name)
			if err != nil {
				if o.Has('i') && vfs.ErrnoOf(err) == vfs.ENOTEMPTY {
					break
				}
				c.perror(err, "'%s'", name)
				status = 1
				break
			}
			if !o.Has('p') {
				break
			}
			if name = dirname(name); name == "." || name == "/" {
				break
			}
		}
	}
	return status
}

// rmdir is rmdir(2): the filesystem's Remove takes files too.
func (c *cmd) rmdir(name string) error {
	info, err := c.fs().Lstat(c.abs(name))
	if err != nil {
		return err
	}
	if !info.Mode.IsDir() {
		return vfs.ENOTDIR
	}
	return c.fs().Remove(c.abs(name), false)
}
