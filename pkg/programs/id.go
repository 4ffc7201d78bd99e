package programs

import (
	"fmt"
	"slices"
)

func runID(c *cmd) int {
	o, args := c.getopt("rnugG", nil)
	if len(args) > 1 {
		c.showUsage(1)
	}
	exclusive := 0
	for _, b := range []byte("ugG") {
		if o.Has(b) {
			exclusive++
		}
	}
	if exclusive > 1 || (o.Has('n') || o.Has('r')) && exclusive == 0 {
		c.showUsage(1)
	}
	id := c.p.Identity()
	uid, gid := id.UID, id.GID
	groups := c.groupsOf()
	if len(args) == 1 {
		u, ok := c.userByName(args[0])
		if !ok {
			c.die("unknown user %s", args[0])
		}
		uid, gid = u.uid, u.gid
		groups = []int64{u.gid}
		c.readDB()
		for _, g := range c.groups {
			if slices.Contains(g.members, u.name) && !slices.Contains(groups, g.gid) {
				groups = append(groups, g.gid)
			}
		}
	}
	anyOpt := len(o.Seq) > 0
	status := 0
	// print is busybox's print_common: the number, the name, or both as "0(root)".
	print := func(n int64, name string, known bool, prefix string) {
		c.write(prefix)
		if !o.Has('n') || !known {
			c.printf("%d", n)
		}
		if !anyOpt || o.Has('n') {
			switch {
			case known && anyOpt:
				c.write(name)
			case known:
				c.printf("(%s)", name)
			case anyOpt:
				c.errorf("unknown ID %d", n)
				status = 1
			}
		}
	}
	user := func(n int64, prefix string) {
		u, ok := c.userByID(n)
		print(n, u.name, ok, prefix)
	}
	group := func(n int64, prefix string) {
		g, ok := c.groupByID(n)
		print(n, g.name, ok, prefix)
	}
	switch {
	case o.Has('u'):
		user(uid, "")
	case o.Has('g'):
		group(gid, "")
	case o.Has('G'):
		group(gid, "")
		for _, g := range groups {
			if g != gid {
				group(g, " ")
			}
		}
	default:
		user(uid, "uid=")
		group(gid, " gid=")
		prefix := " groups="
		for _, g := range groups {
			group(g, prefix)
			prefix = ","
		}
	}
	c.write("\n")
	return status
}

func runWhoami(c *cmd) int {
	if len(c.args) > 0 {
		c.showUsage(1)
	}
	uid := c.p.Identity().UID
	u, ok := c.userByID(uid)
	if !ok {
		c.die("unknown uid %d", uid)
	}
	c.write(u.name + "\n")
	return 0
}

// primaryGroup is the name (or number) of uid's group in /etc/passwd: the machine does
// not say which group a process runs as.
func (c *cmd) primaryGroup(uid int64) string {
	if u, ok := c.userByID(uid); ok {
		return c.groupName(u.gid)
	}
	return fmt.Sprint(uid)
}
