package childproc

import (
	"os/exec"
	"syscall"
)

// DieWithParent has the kernel kill cmd's process when the test binary dies: a go test
// timeout (a panic) or a SIGKILL runs no cleanup, and an etcd or a daemon left behind
// holds its ports and a core for the rest of CI. Call it before cmd.Start.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
