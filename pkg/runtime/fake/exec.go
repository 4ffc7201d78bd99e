package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/task"
)

// ErrNotRunning is the error of an exec in a container that is not running.
var ErrNotRunning = errors.New("container is not running")

// execTarget looks up a running container and what a command sees in it.
func (r *Runtime) execTarget(containerID string) (shell.Env, time.Duration, error) {
	now := r.lock()
	defer r.unlock(now)
	c, ok := r.containers[containerID]
	switch {
	case !ok:
		return shell.Env{}, 0, notFound("container", containerID)
	case c.info.State != cri.ContainerRunning:
		return shell.Env{}, 0, fmt.Errorf("container %s: %w", containerID, ErrNotRunning)
	}
	env := shell.Env{Hostname: c.sb.hostname, Now: r.clk.Now(), Files: c.files}
	for _, kv := range c.envs {
		env.Vars = append(env.Vars, shell.Var{Name: kv.Key, Value: kv.Value})
	}
	return env, c.beh.ProbeDelay, nil
}

// ExecSync runs cmd in a running container through the simulated command table
// (pkg/shell): its output and exit code are the table's, and it takes the container's
// probeDelay (its behaviour script) plus the command's own sleeps. As a CRI runtime
// enforces the exec timeout itself, a call that takes longer than timeout (when not 0),
// latency faults included, fails at timeout with an error wrapping
// cri.ErrDeadlineExceeded (containerd's "timeout exceeded").
func (r *Runtime) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*cri.ExecSyncResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(cmd) == 0 {
		return nil, errors.New("exec sync: cmd is required")
	}
	timedOut := func() error {
		return fmt.Errorf("failed to exec in container: timeout %v exceeded: %w", timeout, cri.ErrDeadlineExceeded)
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = r.clk.Now().Add(timeout)
		if dl, ok := task.Deadline(ctx); !ok || deadline.Before(dl) {
			ctx = task.WithDeadline(ctx, deadline)
		}
	}
	if err := r.inject(ctx, methodExecSync, one); err != nil {
		if timeout > 0 && errors.Is(err, cri.ErrDeadlineExceeded) && !r.clk.Now().Before(deadline) {
			return nil, timedOut()
		}
		return nil, err
	}
	env, delay, err := r.execTarget(containerID)
	if err != nil {
		return nil, fmt.Errorf("exec sync: %w", err)
	}
	prog := shell.Run(cmd, env)
	delay += prog.Duration()
	if timeout > 0 {
		if left := deadline.Sub(r.clk.Now()); delay > left {
			err := r.delay(ctx, left)
			// The caller's own deadline, earlier than the exec timeout, is its error, not a
			// timed out command.
			if err != nil && (!errors.Is(err, cri.ErrDeadlineExceeded) || r.clk.Now().Before(deadline)) {
				return nil, err
			}
			return nil, timedOut()
		}
	}
	if err := r.delay(ctx, delay); err != nil {
		return nil, err
	}
	stdout, stderr := prog.Output()
	return &cri.ExecSyncResponse{Stdout: stdout, Stderr: stderr, ExitCode: int32(prog.ExitCode)}, nil
}

// Exec runs cmd in a running container as a streaming session (kubectl exec): each step
// of the command's program writes its output as it comes, copies stdin to stdout where
// the command reads it (cat), and sleeps on the runtime's clock. stderr may be nil (a
// TTY), its output then goes to stdout. It returns the exit code, or an error when the
// container is not there or not running, or ctx ended first. It blocks for as long as
// the command runs: it is for the streaming server's goroutines, never for a loop's step.
func (r *Runtime) Exec(ctx context.Context, containerID string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(cmd) == 0 {
		return 0, errors.New("exec: cmd is required")
	}
	env, _, err := r.execTarget(containerID)
	if err != nil {
		return 0, err
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = stdout
	}
	prog := shell.Run(cmd, env)
	for _, step := range prog.Steps {
		for _, o := range []struct {
			w io.Writer
			b []byte
		}{{stdout, step.Stdout}, {stderr, step.Stderr}} {
			if len(o.b) == 0 {
				continue
			}
			if _, err := o.w.Write(o.b); err != nil {
				return 0, err
			}
		}
		if step.Stdin && stdin != nil {
			if _, err := io.Copy(stdout, stdin); err != nil {
				return 0, err
			}
		}
		if step.Sleep > 0 {
			t := r.clk.NewTimer(step.Sleep)
			select {
			case <-t.C():
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			}
		}
	}
	return prog.ExitCode, nil
}
