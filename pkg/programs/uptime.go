package programs

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// runUptime is busybox's uptime: the time, how long the node has been up and its load,
// from the container's /proc/uptime and /proc/loadavg (the simulated node's, which
// booted when its runtime started); -s prints when it booted. Without those files the
// node has just booted and has no load.
func runUptime(c *cmd) int {
	o, _ := c.getopt("s", nil)
	var up time.Duration
	if data, err := c.fs().ReadFile("/proc/uptime"); err == nil {
		if f := strings.Fields(string(data)); len(f) > 0 {
			if s, err := strconv.ParseFloat(f[0], 64); err == nil {
				up = time.Duration(s) * time.Second // sysinfo's whole seconds
			}
		}
	}
	loads := []string{"0.00", "0.00", "0.00"}
	if data, err := c.fs().ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			loads = f[:3]
		}
	}
	now := c.p.Now().UTC().Truncate(time.Second)
	if o.Has('s') {
		c.write(now.Add(-up).Format("2006-01-02 15:04:05") + "\n")
		return 0
	}
	secs := int64(up / time.Second)
	c.printf(" %s up ", now.Format("15:04:05"))
	if days := secs / 86400; days != 0 {
		plural := "s"
		if days == 1 {
			plural = ""
		}
		c.printf("%d day%s, ", days, plural)
	}
	minutes := secs / 60
	hours := minutes / 60 % 24
	minutes %= 60
	if hours != 0 {
		c.printf("%2d:%02d", hours, minutes)
	} else {
		c.printf("%d min", minutes)
	}
	c.write(fmt.Sprintf(",  0 users,  load average: %s, %s, %s\n", loads[0], loads[1], loads[2]))
	return 0
}
