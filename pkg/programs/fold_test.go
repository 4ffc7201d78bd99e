package programs

import (
	"strings"
	"testing"
)

// fold prints what busybox 1.35's and 1.36.1's do (test/difftest's text-applets/fold-*).
func TestFold(t *testing.T) {
	runCases(t, []tc{
		{name: "width", argv: []string{"fold", "-w", "4"}, stdin: "abcdefghij\nxy\n", stdout: "abcd\nefgh\nij\nxy\n"},
		{name: "numeric option", argv: []string{"fold", "-3"}, stdin: "abcdefgh\n", stdout: "abc\ndef\ngh\n"},
		{name: "spaces", argv: []string{"fold", "-s", "-w", "7"}, stdin: "hello world foo bar\n", stdout: "hello \nworld \nfoo bar\n"},
		{name: "tabs", argv: []string{"fold", "-w", "10"}, stdin: "a\tb\tc\n", stdout: "a\tb\n\tc\n"},
		{name: "bytes", argv: []string{"fold", "-b", "-w", "3"}, stdin: "a\tb\tc\td\n", stdout: "a\tb\n\tc\t\nd\n"},
		{name: "no newline", argv: []string{"fold", "-w", "3"}, stdin: "abcdefg", stdout: "abc\ndef\ng"},
		{name: "carriage returns hold a line", argv: []string{"fold", "-w", "2"}, stdin: strings.Repeat("a\r", 100000) + "\n", stdout: strings.Repeat("a\r", 100000) + "\n"},
		{name: "width out of range", argv: []string{"fold", "-w", "0"}, stderr: "fold: number 0 is not in 1..10000 range\n", status: 1},
		{name: "bad width", argv: []string{"fold", "-w", "x"}, stderr: "fold: invalid number 'x'\n", status: 1},
		{name: "missing file", argv: []string{"fold", "/nosuch", "/f"}, files: map[string]string{"/f": "abc\n"}, stdout: "abc\n", stderr: "fold: /nosuch: No such file or directory\n", status: 1},
		{name: "directory", argv: []string{"fold", "/d"}, files: map[string]string{"/d/": ""}, stderr: "fold: /d: Input/output error\n", status: 1},
	})
}
