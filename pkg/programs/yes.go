package programs

import (
	"strings"
)

func runYes(c *cmd) int {
	line := "y\n"
	if len(c.args) > 0 {
		line = strings.Join(c.args, " ") + "\n"
	}
	for {
		c.tick()
		if _, err := c.out.WriteString(line); err != nil {
			return 1
		}
	}
}
