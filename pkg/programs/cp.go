package programs

import (
	"io/fs"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runCp(c *cmd) int {
	o, args := c.getopt("aRrdpPLHfilsTunvt:", []getopt.Long{
		{Name: "archive", Key: 'a'}, {Name: "force", Key: 'f'}, {Name: "interactive", Key: 'i'},
		{Name: "no-clobber", Key: 'n'}, {Name: "link", Key: 'l'}, {Name: "dereference", Key: 'L'},
		{Name: "no-dereference", Key: 'P'}, {Name: "recursive", Key: 'R'},
		{Name: "symbolic-link", Key: 's'}, {Name: "no-target-directory", Key: 'T'},
		{Name: "target-directory=", Key: 't'}, {Name: "verbose", Key: 'v'}, {Name: "update", Key: 'u'},
		{Name: "remove-destination", Key: 0xff}, {Name: "parents", Key: 0xfe},
		{Name: "reflink?", Key: 0xfd},
	})
	cf := copyFlags{
		recursive: o.Has('r') || o.Has('R') || o.Has('a'),
		preserve:  o.Has('p') || o.Has('a'),
		force:     o.Has('f'),
		noClobber: o.Has('n'),
		symlink:   o.Has('s'),
		verbose:   o.Has('v'),
	}
	// cp follows links, except that -r, -a, -d and -P copy them as links (-L follows).
	cf.deref = !(cf.recursive || o.Has('d') || o.Has('P') || o.Has('a')) || o.Has('L')
	if len(args) < 2 && !(o.Has('t') && len(args) == 1) {
		c.showUsage(1)
	}
	last, sources := args[len(args)-1], args[:len(args)-1]
	if o.Has('t') {
		last, sources = o.Val('t'), args
	}
	if len(sources) == 1 && !o.Has('t') {
		src := sources[0]
		sInfo, sErr := c.statOrLstat(src, cf.deref)
		dInfo, dErr := c.fs().Stat(c.abs(last))
		if sErr != nil && vfs.ErrnoOf(sErr) != vfs.ENOENT {
			c.perror(sErr, "can't stat '%s'", src)
			return 1
		}
		sDir := sErr == nil && sInfo.Mode.IsDir()
		dDir := dErr == nil && dInfo.Mode.IsDir()
		if o.Has('T') && !sDir && dDir {
			c.die("'%s' is a directory", last)
		}
		if !sDir && !dDir || cf.recursive && sDir && dErr != nil || o.Has('T') {
			if !c.copyFile(src, last, cf) {
				return 1
			}
			return 0
		}
	}
	status := 0
	for _, src := range sources {
		if !c.copyFile(src, joinPath(last, lastComponent(src)), cf) {
			status = 1
		}
	}
	return status
}

type copyFlags struct {
	recursive, preserve, force, noClobber, deref, symlink, verbose bool
}

// copied is copy_file's last step for what it copied (not for what -s linked, or -n
// left): -v names it, a directory after its contents.
func (c *cmd) copied(src, dest string, f copyFlags) {
	if f.verbose {
		c.printf("'%s' -> '%s'\n", src, dest)
	}
}

func (c *cmd) statOrLstat(name string, follow bool) (vfs.Info, error) {
	if follow {
		return c.fs().Stat(c.abs(name))
	}
	return c.fs().Lstat(c.abs(name))
}

// copyFile is busybox's copy_file: src to dest, a directory's tree when recursive.
func (c *cmd) copyFile(src, dest string, f copyFlags) bool {
	c.tick()
	id := c.p.Identity()
	sInfo, err := c.statOrLstat(src, f.deref)
	if err != nil {
		c.perror(err, "can't stat '%s'", src)
		return false
	}
	dInfo, dErr := c.fs().Lstat(c.abs(dest))
	destExists := dErr == nil
	if dErr != nil && vfs.ErrnoOf(dErr) != vfs.ENOENT {
		c.perror(dErr, "can't stat '%s'", dest)
		return false
	}
	if destExists && c.sameFile(src, dest) {
		c.errorf("'%s' and '%s' are the same file", src, dest)
		return false
	}
	if f.noClobber && destExists {
		return true
	}
	switch {
	case sInfo.Mode.IsDir():
		if !f.recursive {
			c.errorf("omitting directory '%s'", src)
			return false
		}
		sReal, _ := c.realpath(src)
		dReal, _ := c.realpathMissingOK(dest)
		if dReal == sReal || strings.HasPrefix(dReal, sReal+"/") {
			c.errorf("recursion detected, omitting directory '%s'", src)
			return false
		}
		if destExists {
			if st, err := c.fs().Stat(c.abs(dest)); err != nil || !st.Mode.IsDir() {
				c.errorf("target '%s' is not a directory", dest)
				return false
			}
		} else {
			perm := sInfo.Mode.Perm() | 0o700 // filled in first, then given src's mode
			if err := c.fs().Mkdir(c.abs(dest), perm&^c.umask(), id.UID, id.GID); err != nil {
				c.perror(err, "can't create directory '%s'", dest)
				return false
			}
		}
		entries, err := c.fs().ReadDir(c.abs(src))
		if err != nil {
			c.perror(err, "can't open directory '%s'", src)
			return false
		}
		ok := true
		for _, e := range entries {
			if !c.copyFile(joinPath(src, e.Name()), joinPath(dest, e.Name()), f) {
				ok = false
			}
		}
		mode := sInfo.Mode.Perm()
		if !f.preserve {
			mode &^= c.umask()
		}
		if !destExists || f.preserve {
			c.fs().Chmod(c.abs(dest), mode|sInfo.Mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		}
		if f.preserve {
			c.fs().Chown(c.abs(dest), sInfo.UID, sInfo.GID)
		}
		c.copied(src, dest, f)
		return ok
	case sInfo.Mode&fs.ModeSymlink != 0:
		if destExists {
			if err := c.fs().Remove(c.abs(dest), false); err != nil {
				c.perror(err, "can't remove '%s'", dest)
				return false
			}
		}
		if err := c.fs().Symlink(sInfo.Target, c.abs(dest)); err != nil {
			c.perror(err, "can't create symlink '%s' to '%s'", dest, sInfo.Target)
			return false
		}
		c.copied(src, dest, f)
		return true
	case f.symlink:
		if err := c.fs().Symlink(src, c.abs(dest)); err != nil {
			c.perror(err, "can't create symlink '%s' to '%s'", dest, src)
			return false
		}
		return true
	}
	data, err := c.fs().ReadFile(c.abs(src))
	if err != nil {
		c.perror(err, "can't open '%s'", src)
		return false
	}
	if destExists && dInfo.Mode.IsDir() {
		c.perror(vfs.EISDIR, "can't create '%s'", dest)
		return false
	}
	if destExists && f.force {
		c.fs().Remove(c.abs(dest), false)
	}
	perm := sInfo.Mode.Perm()
	if !f.preserve {
		perm &^= c.umask()
	}
	if err := c.fs().WriteFile(c.abs(dest), data, perm, false, id.UID, id.GID); err != nil {
		if vfs.ErrnoOf(err) == vfs.ENOENT {
			c.errorf("can't create '%s': Path does not exist", dest)
		} else {
			c.perror(err, "can't create '%s'", dest)
		}
		return false
	}
	if sInfo.Program != "" {
		c.fs().SetProgram(c.abs(dest), sInfo.Program)
	}
	if f.preserve {
		c.fs().Chmod(c.abs(dest), sInfo.Mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		c.fs().Chown(c.abs(dest), sInfo.UID, sInfo.GID)
	}
	c.copied(src, dest, f)
	return true
}

// sameFile reports whether a and b are one file: the filesystem has no inode numbers, so
// by their canonical paths.
func (c *cmd) sameFile(a, b string) bool {
	ra, err1 := c.realpath(a)
	rb, err2 := c.realpath(b)
	return err1 == nil && err2 == nil && ra == rb
}
