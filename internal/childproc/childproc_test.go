//go:build linux

package childproc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/eventually"
)

// TestChildDiesWithParent: a grandchild started with DieWithParent by a child process is
// killed when that child is killed without running any cleanup.
func TestChildDiesWithParent(t *testing.T) {
	if os.Getenv("CHILDPROC_PARENT") == "1" {
		child := exec.Command("sleep", "300")
		DieWithParent(child)
		if err := child.Start(); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(child.Process.Pid) + "\n")
		select {} // until killed
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithParent$")
	parent.Env = append(os.Environ(), "CHILDPROC_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("parent printed %q", buf[:n])
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	eventually.Within(t, 10*time.Second, "sleep killed with its parent", func() (bool, string) {
		if syscall.Kill(pid, 0) != nil {
			return true, ""
		}
		// Re-parented, it may linger as a zombie until reaped: a zombie is dead.
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err == nil && strings.Contains(string(b), ") Z "), "pid " + strconv.Itoa(pid) + " still runs"
	})
}
