package programs

import "testing"

// nl prints what busybox 1.35's and 1.36.1's do (test/difftest's text-applets/nl-*).
func TestNl(t *testing.T) {
	runCases(t, []tc{
		{name: "nonempty", argv: []string{"nl"}, stdin: "one\n\ntwo\n", stdout: "     1\tone\n       \n     2\ttwo\n"},
		{name: "all", argv: []string{"nl", "-ba"}, stdin: "one\n\ntwo\n", stdout: "     1\tone\n     2\t\n     3\ttwo\n"},
		{name: "none", argv: []string{"nl", "-bn"}, stdin: "one\n", stdout: "       one\n"},
		{name: "options", argv: []string{"nl", "-ba", "-s:", "-w3", "-v5", "-i2"}, stdin: "a\n\nb\n", stdout: "  5:a\n  7:\n  9:b\n"},
		{name: "long options", argv: []string{"nl", "--number-width=2", "--starting-line-number=9"}, stdin: "a\nb", stdout: " 9\ta\n10\tb\n"},
		{name: "files go on", argv: []string{"nl", "/x", "/x"}, files: map[string]string{"/x": "a\n"}, stdout: "     1\ta\n     2\ta\n"},
		{name: "bad width", argv: []string{"nl", "-w", "-1"}, stderr: "nl: invalid number '-1'\n", status: 1},
		{name: "width out of range", argv: []string{"nl", "-w", "3000000000"}, stderr: "nl: number 3000000000 is not in 0..2147483647 range\n", status: 1},
		{name: "missing file", argv: []string{"nl", "/nosuch"}, stderr: "nl: /nosuch: No such file or directory\n", status: 1},
	})
}
