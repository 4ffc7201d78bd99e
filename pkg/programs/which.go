package programs

import (
	"strings"
)

func runWhich(c *cmd) int {
	o, args := c.getopt("a", nil)
	if len(args) == 0 {
		c.showUsage(1)
	}
	pathVar, ok := c.lookupEnv("PATH")
	if !ok {
		pathVar = "/sbin:/usr/sbin:/bin:/usr/bin"
	}
	status := 0
	for _, name := range args {
		found := false
		if strings.Contains(name, "/") {
			if c.executable(name) {
				c.write(name + "\n")
				found = true
			}
		} else {
			for _, dir := range strings.Split(pathVar, ":") {
				if dir == "" {
					dir = "."
				}
				f := joinPath(dir, name)
				if c.executable(f) {
					c.write(f + "\n")
					found = true
					if !o.Has('a') {
						break
					}
				}
			}
		}
		if !found {
			status = 1
		}
	}
	return status
}

func (c *cmd) lookupEnv(name string) (string, bool) {
	for _, e := range c.environ() {
		if k, v, _ := strings.Cut(e, "="); k == name {
			return v, true
		}
	}
	return "", false
}

// executable reports whether name is a regular file the process may execute.
func (c *cmd) executable(name string) bool {
	info, err := c.fs().Stat(c.abs(name))
	return err == nil && info.Mode.IsRegular() && c.access(info, 1)
}
