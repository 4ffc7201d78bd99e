package programs

import (
	"slices"
	"strings"
	"testing"
)

// shuf's order comes from the machine's seed: the cases compare what it prints, sorted
// (test/difftest's text-applets/shuf-* do the same against busybox).
func TestShuf(t *testing.T) {
	cases := []tc{
		{name: "lines", argv: []string{"shuf"}, stdin: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", stdout: "1\n10\n2\n3\n4\n5\n6\n7\n8\n9\n"},
		{name: "echo", argv: []string{"shuf", "-e", "b", "a", "c"}, stdout: "a\nb\nc\n"},
		{name: "range", argv: []string{"shuf", "-i", "98-102"}, stdout: "100\n101\n102\n98\n99\n"},
		{name: "count above", argv: []string{"shuf", "-n", "9", "-e", "x", "y"}, stdout: "x\ny\n"},
		{name: "zero", argv: []string{"shuf", "-n", "0", "-e", "x", "y"}},
		{name: "bad range", argv: []string{"shuf", "-i", "5-3"}, stderr: "shuf: bad range '5-3'\n", status: 1},
		{name: "too big a range", argv: []string{"shuf", "-i", "0-4294967295"}, stderr: "shuf: bad range '0-4294967295'\n", status: 1},
		{name: "bad count", argv: []string{"shuf", "-n", "x", "-e", "a"}, stderr: "shuf: invalid number 'x'\n", status: 1},
		{name: "missing file", argv: []string{"shuf", "/nosuch"}, stderr: "shuf: /nosuch: No such file or directory\n", status: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := runCase(t, c)
			lines := strings.SplitAfter(got.Stdout, "\n")
			slices.Sort(lines)
			if s := strings.Join(lines, ""); s != c.stdout || got.Stderr != c.stderr || got.Status != c.status {
				t.Errorf("%q: sorted stdout %q, stderr %q, status %d; want %q, %q, %d", c.argv, s, got.Stderr, got.Status, c.stdout, c.stderr, c.status)
			}
		})
	}
	// A count picks that many distinct lines, and a range's bounds are kept.
	got, _ := runCase(t, tc{argv: []string{"shuf", "-n", "3", "-i", "1-1000"}})
	if lines := strings.Fields(got.Stdout); len(lines) != 3 || lines[0] == lines[1] || lines[1] == lines[2] || lines[0] == lines[2] {
		t.Errorf("shuf -n 3 -i 1-1000 = %q", got.Stdout)
	}
	// -o writes the file, -z ends lines with NULs.
	runCases(t, []tc{
		{name: "output file", argv: []string{"shuf", "-o", "/out", "-e", "a"}, check: fileIs("/out", "a\n")},
		{name: "nul", argv: []string{"shuf", "-z", "-e", "a"}, stdout: "a\x00"},
	})
}
