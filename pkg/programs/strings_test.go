package programs

import "testing"

// strings prints what busybox 1.35's and 1.36.1's do (test/difftest's
// text-applets/strings-*).
func TestStrings(t *testing.T) {
	files := map[string]string{"/bin.dat": "hello\x00\x01world\tfoo\nab\x00abcdefg"}
	runCases(t, []tc{
		{name: "default", argv: []string{"strings", "/bin.dat"}, files: files, stdout: "hello\nworld\tfoo\nabcdefg\n"},
		{name: "octal offsets", argv: []string{"strings", "-o", "/bin.dat"}, files: files, stdout: "      0 hello\n      7 world\tfoo\n     24 abcdefg\n"},
		{name: "hex offsets, short", argv: []string{"strings", "-t", "x", "-n", "2", "/bin.dat"}, files: files, stdout: "      0 hello\n      7 world\tfoo\n     11 ab\n     14 abcdefg\n"},
		{name: "names", argv: []string{"strings", "-f", "/bin.dat"}, files: files, stdout: "/bin.dat: hello\n/bin.dat: world\tfoo\n/bin.dat: abcdefg\n"},
		{name: "stdin's name", argv: []string{"strings", "-f"}, stdin: "hello", stdout: "{standard input}: hello\n"},
		{name: "bad radix", argv: []string{"strings", "-t", "z"}, stderr: banner + "\nUsage: strings [-fo] [-t o|d|x] [-n LEN] [FILE]...\n\nDisplay printable strings in a binary file\n\n\t-f\t\tPrecede strings with filenames\n\t-o\t\tPrecede strings with octal offsets\n\t-t o|d|x\tPrecede strings with offsets in base 8/10/16\n\t-n LEN\t\tAt least LEN characters form a string (default 4)\n", status: 1},
		{name: "bad length", argv: []string{"strings", "-n", "0"}, stderr: "strings: number 0 is not in 1..2147483647 range\n", status: 1},
		{name: "missing file", argv: []string{"strings", "/nosuch"}, stderr: "strings: /nosuch: No such file or directory\n", status: 1},
	})
}
