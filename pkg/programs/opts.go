package programs

import (
	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

// getopt parses c.args by spec and long as busybox's getopt32 does on glibc (the busybox
// image's libc; package getopt says how). A wrong option prints glibc's message and
// busybox's usage, and exits with errStatus.
func (c *cmd) getopt(spec string, long []getopt.Long) (getopt.Result, []string) {
	o, err := getopt.Parse(c.args, spec, long)
	if err != nil {
		c.errorf("%v", err)
		c.showUsage(c.errStatus)
	}
	return o, o.Operands
}
