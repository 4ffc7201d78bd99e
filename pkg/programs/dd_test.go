package programs

import (
	"strings"
	"testing"
	"time"
)

func TestDdDevices(t *testing.T) {
	// dd copies at ddThroughput on the machine's clock: 10 bytes take 9ns.
	runCases(t, []tc{
		{name: "dd file to file", argv: []string{"dd", "if=/n", "of=/tmp/o", "bs=5", "count=2"}, files: numbers,
			stderr:  "2+0 records in\n2+0 records out\n10 bytes (10B) copied, 0.000000 seconds, 1.0GB/s\n",
			elapsed: 9, check: fileIs("/tmp/o", "1\n2\n3\n4\n5\n")},
		{name: "dd zeros", argv: []string{"dd", "if=/dev/zero", "of=/tmp/z", "bs=1M", "count=2"},
			stderr:  "2+0 records in\n2+0 records out\n2097152 bytes (2.0MB) copied, 0.001953 seconds, 1.0GB/s\n",
			elapsed: 2 * time.Second / 1024, check: fileIs("/tmp/z", strings.Repeat("\x00", 2<<20))},
		{name: "dd partial block to stdout", argv: []string{"dd", "bs=4", "status=noxfer"}, stdin: "abcdefghij",
			stdout: "abcdefghij", stderr: "2+1 records in\n2+1 records out\n", elapsed: 9},
		{name: "dd skip seek notrunc", argv: []string{"dd", "if=/a", "of=/x", "bs=1", "seek=1", "conv=notrunc", "status=none"},
			files: numbers, elapsed: 1, check: fileIs("/x", "aA\n")},
		{name: "dd missing input", argv: []string{"dd", "if=/nope"}, stderr: "dd: can't open '/nope': No such file or directory\n", status: 1},
		{name: "dd bad operand", argv: []string{"dd", "foo=1"}, stderr: usage("dd"), status: 1},
		{name: "dd bad size", argv: []string{"dd", "bs=x"}, stderr: "dd: invalid number 'x'\n", status: 1},
		// The machine's source is seeded: its bytes are the same every run.
		{name: "urandom", argv: []string{"head", "-c", "6", "/dev/urandom"}, stdout: "\xef\xe2\xe4\x11>\x17"},
		{name: "null", argv: []string{"cat", "/dev/null"}},
		{name: "tee to null and stdout", argv: []string{"tee", "/dev/null", "/dev/stdout"}, stdin: "x\n", stdout: "x\nx\n"},
		{name: "tac", argv: []string{"tac", "/a", "/x"}, files: numbers, stdout: "ba\nA\n"},
		{name: "usleep", argv: []string{"usleep", "1500"}, elapsed: 1500 * time.Microsecond},
		{name: "usleep bad", argv: []string{"usleep", "x"}, stderr: "usleep: invalid number 'x'\n", status: 1},
	})
}
