package programs

import (
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// The machine has no wait with a deadline, so timeout sleeps in steps and looks whether
// its command has ended: first after firstPoll (a command that ends at once is seen at
// once), each step twice the last, up to pollInterval.
const (
	firstPoll    = time.Millisecond
	pollInterval = 100 * time.Millisecond
)

func runTimeout(c *cmd) int {
	o, args := c.getopt("+s:k:", nil)
	sig := shell.SIGTERM
	if s := o.Val('s'); s != "" {
		if sig = signum(s); sig < 0 {
			c.die("unknown signal '%s'", s)
		}
	}
	var killAfter time.Duration
	if k := o.Val('k'); k != "" {
		killAfter = seconds(c.parseDuration(k))
	}
	if len(args) < 2 {
		c.showUsage(1)
	}
	limit := seconds(c.parseDuration(args[0]))
	child, status := c.start(args[1:], nil)
	if child == nil {
		return status
	}
	for _, s := range forwarded {
		c.p.Trap(s, true)
	}
	if !c.waitFor(child, limit) {
		c.p.Kill(child.PID(), sig)
		if killAfter > 0 && !c.waitFor(child, killAfter) {
			c.p.Kill(child.PID(), shell.SIGKILL)
		}
	}
	// busybox's timeout execs the command itself, so its status is the command's: 143
	// when TERM killed it.
	return c.waitExec(child, nil)
}

// waitFor waits up to d for child to exit and reports whether it did.
func (c *cmd) waitFor(child *shell.Proc, d time.Duration) bool {
	deadline := c.p.Now().Add(d)
	step := firstPoll
	for {
		if done, _ := child.Exited(); done {
			return true
		}
		left := deadline.Sub(c.p.Now())
		if left <= 0 || d == 0 {
			return false
		}
		if !c.sleep(min(left, step)) {
			for _, sig := range c.p.Pending() {
				c.p.Kill(child.PID(), sig)
			}
			step = firstPoll // the command may be ending now
			continue
		}
		step = min(2*step, pollInterval)
	}
}
