package fake

import (
	"bytes"
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

// maxExecOutput bounds what ExecSync keeps of a command's stdout and stderr each, as
// the kubelet's exec prober reads at most 10 KiB and kubectl exec streams.
const maxExecOutput = 16 << 20

// runningLocked looks up a container that can run an exec.
func (r *Runtime) runningLocked(containerID string) (*ctr, error) {
	c, ok := r.containers[containerID]
	switch {
	case !ok:
		return nil, notFound("container", containerID)
	case c.info.State != cri.ContainerRunning || r.machineLocked(c) == nil:
		return nil, fmt.Errorf("container %s: %w", containerID, ErrNotRunning)
	}
	return c, nil
}

// execSpec is how an exec's process starts in c: the container's environment, working
// directory and user.
func (c *ctr) execSpec(cmd []string) shell.Spec {
	return shell.Spec{Argv: cmd, Env: c.env, Dir: c.workDir, Identity: c.id}
}

// execError words a command that could not start as containerd does.
func execError(err error) error {
	return fmt.Errorf("OCI runtime exec failed: exec failed: unable to start container process: %w: unknown", err)
}

// ExecSync runs cmd in a running container's machine, beside its processes and on its
// files: its output and exit status are the program's. It takes the container's
// probeDelay (its behaviour script) and then as long as the program runs, on the
// runtime's clock (a pending operation). As a CRI runtime enforces the exec timeout
// itself, a call that takes longer than timeout (when not 0), latency faults included,
// fails at timeout with an error wrapping cri.ErrDeadlineExceeded (containerd's "timeout
// exceeded"), and the command is killed.
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
	// wrap maps the caller's deadline to its error and the exec timeout to containerd's.
	wrap := func(err error) error {
		if timeout > 0 && errors.Is(err, cri.ErrDeadlineExceeded) && !r.clk.Now().Before(deadline) {
			return timedOut()
		}
		return err
	}
	if err := r.inject(ctx, methodExecSync, one); err != nil {
		return nil, wrap(err)
	}
	r.mu.Lock()
	c, err := r.runningLocked(containerID)
	delay := time.Duration(0)
	if err == nil {
		delay = c.beh.ProbeDelay
	}
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("exec sync: %w", err)
	}
	if err := r.delay(ctx, delay); err != nil {
		return nil, wrap(err)
	}

	var stdout, stderr capped
	status := 0
	op := task.NewOp()
	now := r.lock()
	c, err = r.runningLocked(containerID)
	if err != nil {
		r.unlock(now)
		return nil, fmt.Errorf("exec sync: %w", err)
	}
	spec := c.execSpec(cmd)
	spec.Stdout, spec.Stderr = &stdout, &stderr
	spec.OnExit = func(s int) {
		status = s
		r.completeLocked(op, nil)
	}
	pid, err := c.m.Start(spec)
	if err != nil {
		r.unlock(now)
		return nil, fmt.Errorf("exec sync: %w", execError(err))
	}
	r.stepMachineLocked(c, now)
	r.unlock(now)
	if err := r.await(ctx, op); err != nil {
		r.killExec(containerID, pid)
		return nil, wrap(err)
	}
	return &cri.ExecSyncResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: int32(status)}, nil
}

// killExec kills an exec's process that its caller gave up on.
func (r *Runtime) killExec(containerID string, pid int) {
	now := r.lock()
	defer r.unlock(now)
	if c, ok := r.containers[containerID]; ok && c.m != nil && c.m.Alive(pid) {
		c.m.Signal(pid, shell.SIGKILL)
		r.stepMachineLocked(c, now)
	}
}

// capped is a buffer that keeps the first maxExecOutput bytes.
type capped struct{ bytes.Buffer }

func (b *capped) Write(p []byte) (int, error) {
	if room := maxExecOutput - b.Len(); room < len(p) {
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// execSession carries a streaming exec's output from the machine (written under the
// runtime's lock, inside a step) to the session's goroutine.
type execSession struct {
	chunks []chunk
	done   bool
	status int
	notify chan struct{}
}

type chunk struct {
	stderr bool
	b      []byte
}

func (s *execSession) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

type sessionOutput struct {
	s      *execSession
	stderr bool
}

func (o sessionOutput) Write(b []byte) (int, error) {
	o.s.chunks = append(o.s.chunks, chunk{o.stderr, append([]byte(nil), b...)})
	o.s.signal()
	return len(b), nil
}

// Exec runs cmd in a running container as a streaming session (kubectl exec): a
// process of the container's machine, whose output is written as it comes and whose
// stdin (when not nil) is fed from stdin. stderr may be nil (a TTY): its output then
// goes to stdout. It returns the exit status (126 or 127, with the reason on stderr,
// for a command that cannot start), or an error when the container is not there or not
// running, or ctx ended first (the process is then killed). It blocks for as long as the
// command runs: it is for the streaming server's goroutines, never for a loop's step.
func (r *Runtime) Exec(ctx context.Context, containerID string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(cmd) == 0 {
		return 0, errors.New("exec: cmd is required")
	}
	if stdout == nil {
		stdout = io.Discard
	}
	sess := &execSession{notify: make(chan struct{}, 1)}
	now := r.lock()
	c, err := r.runningLocked(containerID)
	if err != nil {
		r.unlock(now)
		return 0, err
	}
	spec := c.execSpec(cmd)
	var in *shell.Input
	if stdin != nil {
		in = shell.NewInput()
		spec.Stdin = in
	}
	spec.Stdout, spec.Stderr = sessionOutput{sess, false}, sessionOutput{sess, stderr != nil}
	spec.OnExit = func(status int) {
		sess.done, sess.status = true, status
		sess.signal()
	}
	pid, err := c.m.Start(spec)
	if err != nil {
		r.unlock(now)
		w := stderr
		if w == nil {
			w = stdout
		}
		fmt.Fprintf(w, "%v\n", execError(err))
		var ee *shell.ExecError
		if errors.As(err, &ee) {
			return ee.Status(), nil
		}
		return 126, nil
	}
	r.stepMachineLocked(c, now)
	r.unlock(now)

	if in != nil {
		// Owned by this call: it ends when stdin does (the stream closes with the session).
		go r.feed(containerID, in, stdin, sess)
	}
	for {
		select {
		case <-sess.notify:
		case <-ctx.Done():
			r.killExec(containerID, pid)
			return 0, ctx.Err()
		}
		now := r.lock()
		chunks, done, status := sess.chunks, sess.done, sess.status
		sess.chunks = nil
		r.unlock(now)
		for _, ch := range chunks {
			w := stdout
			if ch.stderr {
				w = stderr
			}
			if _, err := w.Write(ch.b); err != nil {
				r.killExec(containerID, pid)
				return 0, err
			}
		}
		if done {
			return status, nil
		}
	}
}

// feed copies a session's stdin into its process's input, stepping the machine so the
// process reads it at once.
func (r *Runtime) feed(containerID string, in *shell.Input, stdin io.Reader, sess *execSession) {
	buf := make([]byte, 32<<10)
	for {
		n, err := stdin.Read(buf)
		now := r.lock()
		if sess.done {
			r.unlock(now)
			return
		}
		if n > 0 {
			in.Feed(buf[:n])
		}
		if err != nil {
			in.Close()
		}
		if c, ok := r.containers[containerID]; ok {
			r.stepMachineLocked(c, now)
		}
		r.unlock(now)
		if err != nil {
			return
		}
	}
}
