//go:build !linux

package childproc

import "os/exec"

// DieWithParent does nothing where there is no parent-death signal; the tests' cleanups
// still stop what they started.
func DieWithParent(cmd *exec.Cmd) {}
