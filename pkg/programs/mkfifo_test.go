package programs

import (
	"io/fs"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// isFifo checks that p is a named pipe with permissions perm.
func isFifo(p string, perm uint32) func(t *testing.T, v *vfs.View) {
	return func(t *testing.T, v *vfs.View) {
		t.Helper()
		info, err := v.Lstat(p)
		if err != nil || info.Mode&fs.ModeNamedPipe == 0 || unixMode(info.Mode) != perm {
			t.Errorf("%s: %v %v, want a fifo %04o", p, err, info.Mode, perm)
		}
	}
}

// mkfifo does what busybox 1.35's and 1.36.1's do (test/difftest's
// text-applets/mkfifo-*).
func TestMkfifo(t *testing.T) {
	runCases(t, []tc{
		{name: "umask", argv: []string{"mkfifo", "/p"}, check: isFifo("/p", 0o644)},
		{name: "mode", argv: []string{"mkfifo", "-m", "600", "/p"}, check: isFifo("/p", 0o600)},
		{name: "symbolic mode", argv: []string{"mkfifo", "-m", "u+x", "/p"}, check: isFifo("/p", 0o766)},
		{name: "exists", argv: []string{"mkfifo", "/f", "/q"}, files: map[string]string{"/f": ""}, stderr: "mkfifo: /f: File exists\n", status: 1, check: isFifo("/q", 0o644)},
		{name: "bad mode", argv: []string{"mkfifo", "-m", "bad", "/p"}, stderr: "mkfifo: /p: Invalid argument\n", status: 1, check: missing("/p")},
		{name: "ls", argv: []string{"sh", "-c", "mkfifo /p; ls -l /p | cut -c1-10; test -p /p && stat -c %F /p"}, stdout: "prw-r--r--\nfifo\n",
			setup: func(v *vfs.View, _ func(time.Time)) {
				v.WriteFile("/bin/sh", nil, 0o755, false, 0, 0)
				v.SetProgram("/bin/sh", "sh")
			}},
	})
}
