package programs

import (
	"strings"
)

func runBasename(c *cmd) int {
	o, args := c.getopt("+as:z", nil)
	end := "\n"
	if o.Has('z') {
		end = "\x00"
	}
	if !o.Has('a') && !o.Has('s') {
		if len(args) == 0 || len(args) > 2 {
			c.showUsage(1)
		}
		base := lastComponent(args[0])
		if len(args) == 2 {
			if s, ok := strings.CutSuffix(base, args[1]); ok && s != "" {
				base = s
			}
		}
		c.write(base + end)
		return 0
	}
	if len(args) == 0 {
		c.showUsage(1)
	}
	for _, a := range args {
		base := lastComponent(a)
		if sfx := o.Val('s'); sfx != "" {
			if s, ok := strings.CutSuffix(base, sfx); ok && s != "" {
				base = s
			}
		}
		c.write(base + end)
	}
	return 0
}

func runDirname(c *cmd) int {
	if len(c.args) != 1 {
		c.showUsage(1)
	}
	c.write(dirname(c.args[0]) + "\n")
	return 0
}

// dirname is POSIX dirname(3).
func dirname(s string) string {
	t := strings.TrimRight(s, "/")
	if t == "" {
		if s == "" {
			return "."
		}
		return "/"
	}
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return "."
	}
	d := strings.TrimRight(t[:i], "/")
	if d == "" {
		return "/"
	}
	return d
}
