package programs

import (
	"strings"
	"testing"
	"time"
)

// watch runs its command on the clock: the runs until the case stops it.
func TestWatch(t *testing.T) {
	clear := "\x1b[H\x1b[J"
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-len(s)) }
	runCases(t, []tc{
		{name: "header", argv: []string{"watch", "echo", "hi"}, setup: withSh, until: 3 * time.Second,
			stdout: clear + pad("Every 2.0s: echo hi", 60) + "2024-03-05 14:07:09\n\nhi\n" +
				clear + pad("Every 2.0s: echo hi", 60) + "2024-03-05 14:07:11\n\nhi\n"},
		{name: "-t -n", argv: []string{"watch", "-t", "-n", "0.5", "echo", "hi"}, setup: withSh, until: 1200 * time.Millisecond,
			stdout: strings.Repeat(clear+"hi\n", 3)},
		{name: "COLUMNS", argv: []string{"watch", "-n1", "true"}, env: []string{"PATH=/bin", "COLUMNS=30"}, setup: withSh, until: 500 * time.Millisecond,
			stdout: clear + "Every 1.0s" + "2024-03-05 14:07:09\n\n"},
		{name: "narrow", argv: []string{"watch", "-n1", "true"}, env: []string{"PATH=/bin", "COLUMNS=15"}, setup: withSh, until: 500 * time.Millisecond,
			stdout: clear + "Every 1.0s: true           \n\n"},
		{name: "command's shell", argv: []string{"watch", "-t", "echo a; echo b >&2"}, setup: withSh, until: time.Second,
			stdout: clear + "a\n", stderr: "b\n"},
		{name: "no command", argv: []string{"watch"}, stderr: usage("watch"), status: 1},
		{name: "bad period", argv: []string{"watch", "-n", "x", "true"}, stderr: "watch: invalid number 'x'\n", status: 1},
		{name: "bad option", argv: []string{"watch", "-Z", "true"}, stderr: "watch: invalid option -- 'Z'\n" + usage("watch"), status: 1},
	})
}
