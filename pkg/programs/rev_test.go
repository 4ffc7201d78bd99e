package programs

import (
	"strings"
	"testing"
)

// rev prints what busybox 1.35's and 1.36.1's do (test/difftest's text-applets/rev-*).
func TestRev(t *testing.T) {
	runCases(t, []tc{
		{name: "lines", argv: []string{"rev"}, stdin: "hello\n\nab\n", stdout: "olleh\n\nba\n"},
		{name: "no newline", argv: []string{"rev"}, stdin: "x\nabc", stdout: "x\ncba"},
		{name: "nul ends the line", argv: []string{"rev"}, stdin: "ab\x00cd\nxy\n", stdout: "bayx\n"},
		{name: "missing file", argv: []string{"rev", "/f", "/nosuch"}, files: map[string]string{"/f": "12\n"}, stdout: "21\n", stderr: "rev: /nosuch: No such file or directory\n", status: 1},
		{name: "long line", argv: []string{"rev"}, stdin: strings.Repeat("ab", 100000) + "\nxy", stdout: strings.Repeat("ba", 100000) + "\nyx"},
		{name: "empty name", argv: []string{"rev", ""}, stderr: "rev: : No such file or directory\n", status: 1},
		{name: "directory", argv: []string{"rev", "/d"}, files: map[string]string{"/d/": ""}},
	})
}
