package programs

import (
	"strings"
	"testing"
)

// split does what busybox 1.36.1's does (Debian's busybox has no split: checked against
// busybox 1.36.1 built from its source, with test/difftest's text-applets/split-*).
func TestSplit(t *testing.T) {
	runCases(t, []tc{
		{name: "lines", argv: []string{"split", "-l", "2"}, dir: "/tmp", stdin: "1\n2\n3\n4\n5", check: checks(fileIs("/tmp/xaa", "1\n2\n"), fileIs("/tmp/xab", "3\n4\n"), fileIs("/tmp/xac", "5"), missing("/tmp/xad"))},
		{name: "bytes, prefix", argv: []string{"split", "-b", "4", "-", "/tmp/p."}, stdin: "abcdefghij", check: checks(fileIs("/tmp/p.aa", "abcd"), fileIs("/tmp/p.ac", "ij"))},
		{name: "suffix length", argv: []string{"split", "-l1", "-a1", "/f", "/tmp/s"}, files: map[string]string{"/f": "a\nb\n"}, check: checks(fileIs("/tmp/sa", "a\n"), fileIs("/tmp/sb", "b\n"))},
		{name: "no suffix", argv: []string{"split", "-l1", "-a0", "/f", "/tmp/x"}, files: map[string]string{"/f": "a\nb\n"}, check: checks(fileIs("/tmp/x", "a\n"), fileIs("/tmp/y", "b\n"))},
		{name: "exhausted", argv: []string{"split", "-l1", "-a1", "-", "/tmp/z"}, stdin: strings.Repeat("x\n", 26) + "y\n", stderr: "split: suffixes exhausted\n", status: 1, check: fileIs("/tmp/zz", "x\n")},
		{name: "k suffix", argv: []string{"split", "-b", "1k", "/f", "/tmp/k"}, files: map[string]string{"/f": string(make([]byte, 1500))}, check: fileIs("/tmp/kab", string(make([]byte, 476)))},
		{name: "huge bytes", argv: []string{"split", "-b", "18446744073709551615", "-", "/tmp/h"}, stdin: "abc", check: fileIs("/tmp/haa", "abc")},
		{name: "bad lines", argv: []string{"split", "-l", "1k"}, stderr: "split: invalid number '1k'\n", status: 1},
		{name: "missing input", argv: []string{"split", "/nosuch"}, stderr: "split: can't open '/nosuch': No such file or directory\n", status: 1},
		{name: "can't create", argv: []string{"split", "-", "/nodir/x"}, stdin: "a\n", stderr: "split: can't open '/nodir/xaa': No such file or directory\n", status: 1},
	})
}
