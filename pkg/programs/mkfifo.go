package programs

import "github.com/minikubelet/minikubelet/pkg/vfs"

// mkfifo [-m MODE] NAME...: busybox's coreutils/mkfifo.c. Named pipes, mode 0666 less
// the umask, or MODE exactly (octal or symbolic, from a=rw). A bad MODE is not refused:
// mkfifo(2) then fails with EINVAL for each name, as busybox passes it -1. The filesystem's
// fifo is a node of that type (ls, stat and test -p see it), which does not block.
func runMkfifo(c *cmd) int {
	o, names := c.getopt("m:", nil)
	mode, valid := uint32(0o666&^c.umask()), true
	if o.Has('m') {
		mode, valid = parseMode(o.Val('m'), 0o666, c.umask())
	}
	if len(names) == 0 {
		c.showUsage(1)
	}
	id := c.p.Identity()
	status := 0
	for _, name := range names {
		c.tick()
		if !valid {
			c.errorf("%s: Invalid argument", name)
			status = 1
			continue
		}
		err := error(vfs.ENOENT) // mkfifo("")
		if name != "" {
			err = c.fs().Mkfifo(c.abs(name), fileMode(mode), id.UID, id.GID)
		}
		if err != nil {
			c.errorf("%s: %s", name, errText(err)) // the name even when empty
			status = 1
		}
	}
	return status
}
