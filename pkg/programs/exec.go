package programs

import (
	"errors"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// setenv sets name=value in env in place (putenv), or appends it; "name" alone unsets.
func setenv(env []string, kv string) []string {
	name, _, hasValue := strings.Cut(kv, "=")
	out := env[:0:0]
	replaced := false
	for _, e := range env {
		if k, _, _ := strings.Cut(e, "="); k == name {
			if hasValue && !replaced {
				out = append(out, kv)
				replaced = true
			}
			continue
		}
		out = append(out, e)
	}
	if hasValue && !replaced {
		out = append(out, kv)
	}
	return out
}

// environ is the process's environment as its program sees it: one entry per name, the
// last given (the machine's getenv takes the last).
func (c *cmd) environ() []string {
	env := []string{}
	for _, e := range c.p.Environ() {
		env = setenv(env, e)
	}
	return env
}

// execute runs argv as a child and waits for it, as busybox's BB_EXECVP_or_die: its exit
// status, or 127 (not found) or 126 with "can't execute" when it cannot start. A nil env
// inherits the process's.
func (c *cmd) execute(argv []string, env []string) int {
	child, status := c.start(argv, env)
	if child == nil {
		return status
	}
	return c.waitExec(child, nil)
}

// forwarded are the signals an applet that stands for the command it runs (env, nice,
// nohup, timeout: busybox execs the command in their process) passes on to it, so that a
// kill of its pid reaches the command.
var forwarded = []int{shell.SIGHUP, shell.SIGINT, shell.SIGTERM, shell.SignalNames["QUIT"],
	shell.SignalNames["USR1"], shell.SignalNames["USR2"], shell.SignalNames["ALRM"]}

// waitExec waits for child as if the applet had exec'ed it: the signals sent to the
// applet go to the child (but those in ignore, which are dropped), and the child's
// status is the applet's.
func (c *cmd) waitExec(child *shell.Proc, ignore map[int]bool) int {
	for _, sig := range forwarded {
		c.p.Trap(sig, true)
	}
	for {
		c.p.Wait(child)
		if done, _ := child.Exited(); done {
			return c.p.ExitAs(child)
		}
		for _, sig := range c.p.Pending() {
			if !ignore[sig] {
				c.p.Kill(child.PID(), sig)
			}
		}
	}
}

func (c *cmd) start(argv []string, env []string) (*shell.Proc, int) {
	child, status, err := c.spawn(argv, env)
	if err != nil {
		c.perror(err, "can't execute '%s'", argv[0])
	}
	return child, status
}

// spawn starts argv as a child; when it cannot, the status a failed exec gives (127 not
// found, 126 otherwise) and the error, worded as strerror.
func (c *cmd) spawn(argv []string, env []string) (*shell.Proc, int, error) {
	c.out.Flush()
	child, err := c.p.StartChild(shell.Spec{Argv: argv, Env: env})
	if err != nil {
		status := 126
		var ee *shell.ExecError
		if errors.As(err, &ee) {
			if ee.NotFound {
				status = 127
			}
			err = ee.Err
		}
		return nil, status, err
	}
	return child, 0, nil
}
