package programs

import (
	"io/fs"
	"path"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

// install [-cdDsp] [-o USER] [-g GRP] [-m MODE] [-t DIR] [SOURCE]... DEST: busybox's
// coreutils/install.c. Copies SOURCEs to DEST (into it when it is a directory, or with
// -t DIR), following links, replacing what is there; -d makes directories (with their
// parents) instead; -D makes DEST's missing directories first. Each result gets mode
// 0755 or -m MODE (a bad MODE is -1: every bit set, as busybox's chmod gets it), and
// -o/-g's owner. -c is ignored, -p keeps the source's owner (the filesystem's times
// cannot be set), -s runs strip, which a busybox image has not. -v says what it does.
func runInstall(c *cmd) int {
	o, args := c.getopt("cvbDdpsg:m:o:t:", []getopt.Long{
		{Name: "verbose", Key: 'v'}, {Name: "directory", Key: 'd'},
		{Name: "preserve-timestamps", Key: 'p'}, {Name: "strip", Key: 's'}, {Name: "group=", Key: 'g'},
		{Name: "mode=", Key: 'm'}, {Name: "owner=", Key: 'o'}, {Name: "target-directory=", Key: 't'},
	})
	if o.Has('t') && o.Has('d') || o.Has('s') && o.Has('d') {
		c.showUsage(1)
	}
	mode := fs.FileMode(0o755)
	if o.Has('m') {
		if m, ok := parseMode(o.Val('m'), 0o755, c.umask()); ok {
			mode = fileMode(m)
		} else {
			mode = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
		}
	}
	id := c.p.Identity()
	uid, gid := id.UID, id.GID
	if o.Has('o') {
		uid = c.ugID(o.Val('o'), false)
	}
	if o.Has('g') {
		gid = c.ugID(o.Val('g'), true)
	}
	verbose := o.Has('v')
	last, isDir := o.Val('t'), o.Has('t')
	if !o.Has('t') && !o.Has('d') {
		if len(args) == 0 {
			c.showUsage(1)
		}
		last, args = args[len(args)-1], args[:len(args)-1]
		info, err := c.fs().Stat(c.abs(last))
		isDir = err == nil && info.Mode.IsDir()
	}
	if len(args) < 1 {
		c.showUsage(1)
	}
	status := 0
	for _, arg := range args {
		c.tick()
		dest := arg
		if o.Has('d') {
			if !c.makeDirectory(dest, 0o755, true, verbose) {
				status = 1
				continue
			}
		} else {
			dest = last
			if o.Has('D') {
				dir := last
				if !o.Has('t') {
					dir = path.Dir(last)
				}
				c.makeDirectory(dir, 0o755, true, verbose) // a failure shows in the copy
			}
			if isDir {
				dest = joinPath(last, lastComponent(arg))
			}
			if !c.copyFile(arg, dest, copyFlags{force: true, deref: true, preserve: o.Has('p')}) {
				status = 1
				continue
			}
			if verbose {
				c.printf("'%s' -> '%s'\n", arg, dest)
			}
			if o.Has('s') {
				c.errorf("strip: No such file or directory")
				status = 1
			}
		}
		if err := c.fs().Chmod(c.abs(dest), mode); err != nil {
			c.perror(err, "can't change %s of %s", "permissions", dest)
			status = 1
		}
		if o.Has('o') || o.Has('g') {
			if err := c.fs().Chown(c.abs(dest), uid, gid); err != nil {
				c.perror(err, "can't change %s of %s", "ownership", dest)
				status = 1
			}
		}
	}
	return status
}

// ugID is busybox's get_ug_id: a number, or a user's (group's) name, or death.
func (c *cmd) ugID(s string, group bool) int64 {
	if n, err := parseID(s); err == nil {
		return n
	}
	if group {
		if g, ok := c.groupByName(s); ok {
			return g.gid
		}
		c.die("unknown group %s", s)
	}
	if u, ok := c.userByName(s); ok {
		return u.uid
	}
	c.die("unknown user %s", s)
	return 0
}
