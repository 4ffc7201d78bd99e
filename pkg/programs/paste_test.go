package programs

import (
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// paste and od print what busybox 1.35's print for the same input (checked by hand, and by
// test/difftest's applets.txtar).
func TestPaste(t *testing.T) {
	files := map[string]string{"/n": "1\n2\n", "/l": "a\nb\nc\n"}
	runCases(t, []tc{
		{name: "columns", argv: []string{"paste", "/n", "/l"}, files: files, stdout: "1\ta\n2\tb\n\tc\n"},
		{name: "delimiter", argv: []string{"paste", "-d:", "/n", "/l"}, files: files, stdout: "1:a\n2:b\n:c\n"},
		{name: "delimiters in turn", argv: []string{"paste", `-d\t,`, "/n", "/l", "/n"}, files: files, stdout: "1\ta,1\n2\tb,2\n\tc,\n"},
		{name: "shorter last", argv: []string{"paste", "/l", "/n"}, files: files, stdout: "a\t1\nb\t2\nc\t\n"},
		{name: "serial", argv: []string{"paste", "-s", "/n", "/l"}, files: files, stdout: "1\t2\na\tb\tc\n"},
		{name: "serial delimiter", argv: []string{"paste", "-s", "-d,", "/l"}, files: files, stdout: "a,b,c\n"},
		{name: "serial without a last newline", argv: []string{"paste", "-s"}, stdin: "1\n2\n3", stdout: "1\t2\t3\n"},
		{name: "stdin twice", argv: []string{"paste", "-", "-"}, stdin: "1\n2\n3\n", stdout: "1\t2\n3\t\n"},
		{name: "missing file", argv: []string{"paste", "/nosuch", "/n"}, files: files, stderr: "paste: /nosuch: No such file or directory\n", status: 1},
	})
}

func TestOd(t *testing.T) {
	runCases(t, []tc{
		{name: "default", argv: []string{"od"}, stdin: "AB", stdout: "0000000 041101\n0000002\n"},
		{name: "chars", argv: []string{"od", "-c"}, stdin: "hi\n", stdout: "0000000   h   i  \\n\n0000003\n"},
		{name: "chars octal", argv: []string{"od", "-c"}, stdin: "\x01\xff z", stdout: "0000000 001 377       z\n0000004\n"},
		{name: "hex bytes no address", argv: []string{"od", "-An", "-tx1"}, stdin: "ABC", stdout: " 41 42 43\n"},
		{name: "hex words padded", argv: []string{"od", "-x"}, stdin: "ABC", stdout: "0000000 4241 0043\n0000003\n"},
		{name: "decimal address", argv: []string{"od", "-Ad", "-tx1"}, stdin: "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
			stdout: "0000000 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50\n0000016 51 52 53 54 55 56 57 58 59 5a\n0000026\n"},
		{name: "repeated lines", argv: []string{"od", "-tx1"}, stdin: strings.Repeat("\x00", 64),
			stdout: "0000000 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00\n*\n0000100\n"},
		{name: "two formats line up", argv: []string{"od", "-td2", "-tu1"}, stdin: "\xff\xfe", stdout: "0000000    -257\n        255 254\n0000002\n"},
		{name: "octal bytes", argv: []string{"od", "-b"}, stdin: "abc", stdout: "0000000 141 142 143\n0000003\n"},
		{name: "skip and count", argv: []string{"od", "-j2", "-N3", "-c"}, stdin: "abcdef", stdout: "0000002   c   d   e\n0000005\n"},
		{name: "missing file", argv: []string{"od", "/nosuch"}, stderr: "od: /nosuch: No such file or directory\n", status: 1},
	})
}

// ash runs test, [ and printf as its builtins: their errors are prefixed with the shell's
// name, as busybox's (test/difftest's shell/test-bad-int).
func TestAshBuiltinErrors(t *testing.T) {
	runCases(t, []tc{
		{name: "in a shell", argv: []string{"sh", "-c", `[ abc -eq 1 ]; [ 1 -eq 1 ; printf '%d\n' abc; echo $?`},
			setup: func(v *vfs.View, _ func(time.Time)) {
				v.WriteFile("/bin/sh", nil, 0o755, false, 0, 0)
				v.SetProgram("/bin/sh", "sh")
			},
			stdout: "0\n1\n", stderr: "sh: abc: bad number\nsh: missing ]\nsh: invalid number 'abc'\n"},
		{name: "as programs", argv: []string{"[", "1", "-eq", "1"}, stderr: "[: missing ]\n", status: 2},
	})
}

// sort -V orders numbers in versions by value; -m merges sorted files (difftest's
// more/sort-version, more/sort-merge-dup).
func TestSortVersionAndMerge(t *testing.T) {
	runCases(t, []tc{
		{name: "version", argv: []string{"sort", "-V"}, stdin: "v1.10\nv1.2\nv1.9\n", stdout: "v1.2\nv1.9\nv1.10\n"},
		{name: "merge", argv: []string{"sort", "-m", "/x", "/y"}, files: map[string]string{"/x": "a\nb\n", "/y": "a\nc\n"}, stdout: "a\na\nb\nc\n"},
	})
}
