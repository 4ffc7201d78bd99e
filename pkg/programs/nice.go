package programs

import (
	"strconv"
)

func runNice(c *cmd) int {
	o, args := c.getopt("+n:", nil)
	if v := o.Val('n'); v != "" {
		if _, err := strconv.Atoi(v); err != nil {
			c.die("invalid number '%s'", v)
		}
	}
	if len(args) == 0 {
		// Every simulated process runs at niceness 0.
		c.write("0\n")
		return 0
	}
	return c.execute(args, nil)
}
