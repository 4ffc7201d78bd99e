package programs

import (
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runMktemp(c *cmd) int {
	o, args := c.getopt("dqtp:u", []getopt.Long{
		{Name: "directory", Key: 'd'}, {Name: "quiet", Key: 'q'}, {Name: "dry-run", Key: 'u'},
		{Name: "tmpdir?", Key: 'p'},
	})
	if len(args) > 1 {
		c.showUsage(1)
	}
	dir, _ := c.lookupEnv("TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	if o.Val('p') != "" {
		dir = o.Val('p')
	}
	tmpl := "tmp.XXXXXX"
	useDir := o.Has('t') || o.Has('p')
	if len(args) == 1 {
		tmpl = args[0]
	} else {
		useDir = true
	}
	if useDir {
		tmpl = joinPath(dir, tmpl)
	}
	fail := func(err error) int {
		if o.Has('q') {
			return 1
		}
		c.errorf("%s", errText(err))
		return 1
	}
	if !strings.HasSuffix(tmpl, "XXXXXX") {
		return fail(vfs.EINVAL)
	}
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	id := c.p.Identity()
	for try := 0; try < 100; try++ {
		b := []byte(tmpl)
		for i := len(b) - 6; i < len(b); i++ {
			b[i] = letters[c.p.Rand().IntN(len(letters))]
		}
		name := string(b)
		p := c.abs(name)
		if _, err := c.fs().Lstat(p); err == nil {
			continue
		}
		var err error
		switch {
		case o.Has('u'):
		case o.Has('d'):
			err = c.fs().Mkdir(p, 0o700, id.UID, id.GID)
		default:
			err = c.fs().WriteFile(p, nil, 0o600, false, id.UID, id.GID)
		}
		if err != nil {
			return fail(err)
		}
		c.write(name + "\n")
		return 0
	}
	return fail(vfs.EEXIST)
}
