package programs

import (
	"io/fs"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runChown(c *cmd) int { return c.chown(false) }

func runChgrp(c *cmd) int { return c.chown(true) }

// chown is chown and chgrp: USER[:GROUP] (or GROUP) by name or number.
func (c *cmd) chown(groupOnly bool) int {
	o, operands := c.getopt("RhvcfLHP", []getopt.Long{
		{Name: "recursive", Key: 'R'}, {Name: "dereference", Key: 0xff},
		{Name: "no-dereference", Key: 'h'}, {Name: "verbose", Key: 'v'}, {Name: "changes", Key: 'c'},
		{Name: "silent", Key: 'f'}, {Name: "quiet", Key: 'f'},
	})
	if len(operands) < 2 {
		c.showUsage(1)
	}
	spec := operands[0]
	uid, gid := int64(-1), int64(-1)
	group := ""
	if groupOnly {
		group = spec
	} else {
		user, g, hasGroup := strings.Cut(spec, ":")
		if !hasGroup {
			user, g, hasGroup = strings.Cut(spec, ".")
		}
		if user != "" {
			if n, err := parseID(user); err == nil {
				uid = n
			} else if u, ok := c.userByName(user); ok {
				uid = u.uid
			} else {
				c.die("unknown user %s", user)
			}
		}
		if hasGroup {
			group = g
		}
	}
	if group != "" {
		if n, err := parseID(group); err == nil {
			gid = n
		} else if g, ok := c.groupByName(group); ok {
			gid = g.gid
		} else {
			c.die("unknown group %s", group)
		}
	}
	status := 0
	for _, name := range operands[1:] {
		if !c.walk(name, o.Has('R'), func(p string, info vfs.Info, depth int) bool {
			// The filesystem follows links: a link's own owner cannot change, so -h does
			// nothing to one.
			if info.Mode&fs.ModeSymlink != 0 && (depth > 0 || o.Has('h')) {
				return true
			}
			if err := c.fs().Chown(c.abs(p), uid, gid); err != nil {
				if !o.Has('f') {
					c.perror(err, "%s", p)
				}
				return false
			}
			return true
		}) {
			status = 1
		}
	}
	return status
}
