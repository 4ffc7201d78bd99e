package programs

import (
	"github.com/minikubelet/minikubelet/pkg/shell"
)

func runNohup(c *cmd) int {
	args := c.args
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		c.showUsage(1)
	}
	// stdout is a pipe or a log, never a terminal, so nohup.out is never made.
	child, status := c.start(args, nil)
	if child == nil {
		return status
	}
	child.Trap(shell.SIGHUP, true) // handled by doing nothing: ignored
	return c.waitExec(child, map[int]bool{shell.SIGHUP: true})
}
