package programs

import (
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runMv(c *cmd) int {
	o, args := c.getopt("finTt:v", []getopt.Long{
		{Name: "interactive", Key: 'i'}, {Name: "force", Key: 'f'}, {Name: "no-clobber", Key: 'n'},
		{Name: "no-target-directory", Key: 'T'}, {Name: "target-directory=", Key: 't'},
		{Name: "verbose", Key: 'v'},
	})
	if len(args) < 2 && !(o.Has('t') && len(args) == 1) {
		c.showUsage(1)
	}
	last, sources := args[len(args)-1], args[:len(args)-1]
	if o.Has('t') {
		last, sources = o.Val('t'), args
	}
	if len(sources) == 1 && !o.Has('t') {
		dInfo, dErr := c.fs().Stat(c.abs(last))
		if o.Has('T') || dErr != nil || !dInfo.Mode.IsDir() {
			return boolStatus(c.move(sources[0], last, o.Has('n'), o.Has('v')))
		}
	}
	status := 0
	for _, src := range sources {
		c.tick()
		dest := joinPath(last, lastComponent(src))
		if _, err := c.fs().Lstat(c.abs(dest)); err != nil && vfs.ErrnoOf(err) != vfs.ENOENT {
			c.perror(err, "can't stat '%s'", dest)
			return 1
		}
		if !c.move(src, dest, o.Has('n'), o.Has('v')) {
			status = 1
		}
	}
	return status
}

// move is rename(2) as mv uses it, falling back to copy and remove across mounts.
func (c *cmd) move(src, dest string, noClobber, verbose bool) bool {
	sp, dp := c.abs(src), c.abs(dest)
	dInfo, dErr := c.fs().Lstat(dp)
	if dErr == nil && noClobber {
		return true
	}
	err := c.rename(sp, dp)
	if err == nil {
		if verbose {
			c.printf("'%s' -> '%s'\n", src, dest)
		}
		return true
	}
	if vfs.ErrnoOf(err) != vfs.EXDEV {
		c.perror(err, "can't rename '%s'", src)
		return false
	}
	sInfo, sErr := c.fs().Lstat(sp)
	if sErr != nil {
		c.perror(err, "can't rename '%s'", src)
		return false
	}
	if dErr == nil {
		switch {
		case dInfo.Mode.IsDir() && !sInfo.Mode.IsDir():
			c.errorf("can't overwrite directory with non-directory")
			return false
		case !dInfo.Mode.IsDir() && sInfo.Mode.IsDir():
			c.errorf("can't overwrite non-directory with directory")
			return false
		}
		if err := c.fs().Remove(dp, false); err != nil && vfs.ErrnoOf(err) != vfs.ENOENT {
			c.perror(err, "can't remove '%s'", dest)
			return false
		}
	}
	if !c.copyFile(src, dest, copyFlags{recursive: true, preserve: true}) {
		return false
	}
	return c.removeFile(src, true, true, false)
}

// rename is rename(2): the filesystem's Rename with the checks it leaves to the kernel (a
// directory onto a file, a file onto a directory, a directory into itself).
func (c *cmd) rename(sp, dp string) error {
	sInfo, err := c.fs().Lstat(sp)
	if err != nil {
		return err
	}
	if dInfo, err := c.fs().Lstat(dp); err == nil {
		switch {
		case sInfo.Mode.IsDir() && !dInfo.Mode.IsDir():
			return vfs.ENOTDIR
		case !sInfo.Mode.IsDir() && dInfo.Mode.IsDir():
			return vfs.EISDIR
		}
		if sp == dp {
			return nil
		}
	}
	if sInfo.Mode.IsDir() {
		if rs, err := c.realpath(sp); err == nil {
			if rd, err := c.realpathMissingOK(dp); err == nil && strings.HasPrefix(rd, rs+"/") {
				return vfs.EINVAL
			}
		}
	}
	return c.fs().Rename(sp, dp)
}
