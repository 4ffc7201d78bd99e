package programs

import (
	"fmt"
	"strconv"
	"strings"
)

// runWatch is busybox's watch: it runs PROG ARGS (joined by blanks, as `sh -c` runs
// them) again and again, SEC seconds (-n, default 2) apart on the machine's clock,
// clearing the screen before each run and (unless -t) printing the header "Every 2.0s:
// PROG ARGS" padded to the terminal's width (COLUMNS, else 80) with the time at its end.
// It runs until it is killed; its waits are the clock's, never the node's.
func runWatch(c *cmd) int {
	o, args := c.getopt("+dtn:", nil)
	if len(args) == 0 {
		c.showUsage(1)
	}
	command := strings.Join(args, " ")
	period := 2.0
	if o.Has('n') {
		period = c.parseDuration(o.Val('n'))
	}
	width := 80
	if v, ok := c.lookupEnv("COLUMNS"); ok {
		width, _ = strconv.Atoi(v) // atoi: a bad value is 0, then the default
	}
	if width <= 1 || width >= 30000 {
		width = 80
	}
	header := fmt.Sprintf("Every %.1fs: %-*s", period, width, command)
	const timeLen = len("1234-67-90 23:56:89") + 1
	for {
		c.write("\x1b[H\x1b[J")
		if !o.Has('t') {
			h := header
			if timeLen < width {
				h = header[:width-timeLen] + c.p.Now().UTC().Format("2006-01-02 15:04:05")
			}
			c.write(h + "\n\n")
		}
		c.out.Flush()
		// system(): sh -c, its status ignored; a shell that cannot start is no error.
		if child, _, err := c.spawn([]string{"/bin/sh", "-c", command}, nil); err == nil {
			c.p.Wait(child)
		}
		c.sleep(seconds(period))
	}
}
