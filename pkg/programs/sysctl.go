package programs

import (
	"errors"
	"io/fs"
	"strings"
)

// runSysctl is busybox's sysctl over /proc/sys: `sysctl NAME...` prints `NAME = VALUE`,
// -n the value alone, -w NAME=VALUE writes (refused where /proc/sys is read-only, as in an
// unprivileged container), -a every one. Names may use dots or slashes.
func runSysctl(c *cmd) int {
	var names []string
	quiet, write, all := false, false, false
	for _, a := range c.args {
		switch {
		case a == "-n":
			quiet = true
		case a == "-w":
			write = true
		case a == "-a" || a == "-A":
			all = true
		case a == "-e" || a == "-q":
		case strings.HasPrefix(a, "-"):
			c.errorf("unrecognized option '%s'", a)
			c.showUsage(1)
		default:
			names = append(names, a)
		}
	}
	if all {
		return c.sysctlTree("/proc/sys", quiet)
	}
	if len(names) == 0 {
		c.showUsage(1)
	}
	status := 0
	for _, n := range names {
		if k, v, ok := strings.Cut(n, "="); ok || write {
			if !ok {
				c.errorf("error: '%s' must be of the form name=value", n)
				status = 1
				continue
			}
			p := "/proc/sys/" + sysctlPath(k)
			if err := c.p.FS().WriteFile(p, []byte(v+"\n"), 0o644, false, 0, 0); err != nil {
				c.errorf("error setting key '%s': %s", k, errText(err))
				status = 1
				continue
			}
			if !quiet {
				c.printf("%s = %s\n", k, v)
			}
			continue
		}
		data, err := c.p.FS().ReadFile("/proc/sys/" + sysctlPath(n))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				c.errorf("error: '%s' is an unknown key", n)
			} else {
				c.errorf("error reading key '%s': %s", n, errText(err))
			}
			status = 1
			continue
		}
		v := strings.TrimSuffix(string(data), "\n")
		if quiet {
			c.printf("%s\n", v)
		} else {
			// Printed dotted, however it was asked for, as busybox does.
			c.printf("%s = %s\n", strings.ReplaceAll(n, "/", "."), v)
		}
	}
	return status
}

// sysctlPath is a sysctl's path under /proc/sys: a dotted name's dots are slashes.
func sysctlPath(name string) string {
	if strings.Contains(name, "/") {
		return strings.TrimPrefix(name, "/")
	}
	return strings.ReplaceAll(name, ".", "/")
}

func (c *cmd) sysctlTree(dir string, quiet bool) int {
	entries, err := c.p.FS().ReadDir(dir)
	if err != nil {
		c.errorf("error reading key '%s': %s", dir, errText(err))
		return 1
	}
	for _, e := range entries {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			c.sysctlTree(p, quiet)
			continue
		}
		data, err := c.p.FS().ReadFile(p)
		if err != nil {
			continue
		}
		v := strings.TrimSuffix(string(data), "\n")
		name := strings.ReplaceAll(strings.TrimPrefix(p, "/proc/sys/"), "/", ".")
		if quiet {
			c.printf("%s\n", v)
		} else {
			c.printf("%s = %s\n", name, v)
		}
	}
	return 0
}
