package programs

import "testing"

// truncate does what busybox 1.35's and 1.36.1's do (test/difftest's
// text-applets/truncate-*).
func TestTruncate(t *testing.T) {
	files := map[string]string{"/f": "hello world\n", "/d/": ""}
	runCases(t, []tc{
		{name: "shrink", argv: []string{"truncate", "-s", "5", "/f"}, files: files, check: fileIs("/f", "hello")},
		{name: "grow", argv: []string{"truncate", "-s", "14", "/f"}, files: files, check: fileIs("/f", "hello world\n\x00\x00")},
		{name: "create", argv: []string{"truncate", "-s", "1k", "/new"}, check: checks(fileIs("/new", string(make([]byte, 1024))), modeIs("/new", 0o644))},
		{name: "no create", argv: []string{"truncate", "-c", "-s", "1", "/new"}, check: missing("/new")},
		{name: "directory", argv: []string{"truncate", "-s", "1", "/d"}, files: files, stderr: "truncate: /d: open: Is a directory\n", status: 1},
		{name: "no directory", argv: []string{"truncate", "-s", "1", "/nodir/x"}, stderr: "truncate: /nodir/x: open: No such file or directory\n", status: 1},
		{name: "relative size", argv: []string{"truncate", "-s", "+5", "/f"}, files: files, stderr: "truncate: invalid number '+5'\n", status: 1},
		{name: "too big", argv: []string{"truncate", "-s", "20000000000G", "/f"}, files: files, stderr: "truncate: number 20000000000G is not in 0..18446744073709551615 range\n", status: 1},
		{name: "negative off_t", argv: []string{"truncate", "-s", "9223372036854775808", "/f"}, files: files, stderr: "truncate: /f: truncate: Invalid argument\n", status: 1},
	})
}
