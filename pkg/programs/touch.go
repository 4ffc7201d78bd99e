package programs

import (
	"time"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runTouch(c *cmd) int {
	o, args := c.getopt("chr:d:t:amf", []getopt.Long{
		{Name: "no-create", Key: 'c'}, {Name: "no-dereference", Key: 'h'},
		{Name: "reference=", Key: 'r'}, {Name: "date=", Key: 'd'},
	})
	if len(args) == 0 {
		c.showUsage(1)
	}
	var when *time.Time // the time to set, rather than now
	if r := o.Val('r'); r != "" {
		info, err := c.fs().Stat(c.abs(r))
		if err != nil {
			c.perror(err, "can't stat '%s'", r)
			c.exit(1)
		}
		when = &info.ModTime
	}
	for _, d := range []string{o.Val('d'), o.Val('t')} {
		if d != "" {
			t := c.parseDate(d, c.p.Now().UTC())
			when = &t
		}
	}
	status := 0
	id := c.p.Identity()
	for _, name := range args {
		c.tick()
		p := c.abs(name)
		err := c.fs().Touch(p)
		if vfs.ErrnoOf(err) == vfs.ENOENT {
			if o.Has('c') {
				continue
			}
			if _, lerr := c.fs().Lstat(p); lerr != nil {
				err = c.fs().WriteFile(p, nil, 0o666&^c.umask(), true, id.UID, id.GID)
			}
		}
		if err == nil && when != nil {
			err = c.fs().Chtimes(p, *when)
		}
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
		}
	}
	return status
}
