package programs

import (
	"io/fs"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runMkdir(c *cmd) int {
	o, args := c.getopt("m:pv", []getopt.Long{
		{Name: "mode=", Key: 'm'}, {Name: "parents", Key: 'p'}, {Name: "verbose", Key: 'v'},
	})
	mode := int64(-1)
	if o.Has('m') {
		m, ok := parseMode(o.Val('m'), 0o777, c.umask())
		if !ok {
			c.die("invalid mode '%s'", o.Val('m'))
		}
		mode = int64(m)
	}
	if len(args) == 0 {
		c.showUsage(1)
	}
	status := 0
	for _, name := range args {
		c.tick()
		if !c.makeDirectory(name, mode, o.Has('p'), o.Has('v')) {
			status = 1
		}
	}
	return status
}

// makeDirectory is busybox's bb_make_directory: name, with its parents when recursive
// (an existing one is no error then); mode (-1: 0777 less the umask) is set on the last.
func (c *cmd) makeDirectory(name string, mode int64, recursive, verbose bool) bool {
	if name == "/" || name == "." {
		return true
	}
	id := c.p.Identity()
	// With parents, busybox makes each prefix that ends after a run of slashes ("/",
	// "a/", "a/b/"), and names it so when it fails.
	var prefixes []string
	if recursive {
		for i := 0; i < len(name); i++ {
			if name[i] != '/' {
				continue
			}
			for i+1 < len(name) && name[i+1] == '/' {
				i++
			}
			if i+1 < len(name) {
				prefixes = append(prefixes, name[:i+1])
			}
		}
	}
	prefixes = append(prefixes, name)
	for i, p := range prefixes {
		last := i == len(prefixes)-1
		perm := fs.FileMode(0o777 &^ c.umask())
		if !last {
			perm |= 0o300 // intermediate directories must let their maker in
		}
		err := c.fs().Mkdir(c.abs(p), perm, id.UID, id.GID)
		if err != nil {
			info, serr := c.fs().Stat(c.abs(p))
			if vfs.ErrnoOf(err) != vfs.EEXIST || !recursive || serr != nil || !info.Mode.IsDir() {
				c.perror(err, "can't create directory '%s'", p)
				return false
			}
			if last {
				return true
			}
			continue
		}
		if verbose {
			c.printf("created directory: '%s'\n", p)
		}
		if last && mode >= 0 {
			if err := c.fs().Chmod(c.abs(p), fileMode(uint32(mode))); err != nil {
				c.perror(err, "can't set permissions of directory '%s'", p)
				return false
			}
		}
	}
	return true
}
