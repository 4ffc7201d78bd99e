package programs

import (
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// withSh puts the shell at /bin/sh, which awk's pipes and system() run.
func withSh(v *vfs.View, _ func(time.Time)) {
	v.WriteFile("/bin/sh", nil, 0o755, false, 0, 0)
	v.SetProgram("/bin/sh", "sh")
}

func TestAwk(t *testing.T) {
	runCases(t, []tc{
		{name: "print field", argv: []string{"awk", "{print $1}"}, stdin: "a b\nc d\n", stdout: "a\nc\n"},
		{name: "-F", argv: []string{"awk", "-F:", "{print $1, $3}", "/etc/passwd"}, stdout: "root 0\ndaemon 1\nwww-data 33\nnobody 65534\n"},
		{name: "-F tab", argv: []string{"awk", "-F", `\t`, "{print $2}"}, stdin: "a b\tc\n", stdout: "c\n"},
		{name: "-F regex", argv: []string{"awk", "-F", "[,;]", "{print $2}"}, stdin: "a,b;c\n", stdout: "b\n"},
		{name: "NR pattern", argv: []string{"awk", "NR==2"}, stdin: "a\nb\nc\n", stdout: "b\n"},
		{name: "regex pattern", argv: []string{"awk", "/b/"}, stdin: "a\nb\nc\n", stdout: "b\n"},
		{name: "range", argv: []string{"awk", "/b/,/c/"}, stdin: "a\nb\nx\nc\nd\n", stdout: "b\nx\nc\n"},
		{name: "sum", argv: []string{"awk", "{s+=$1} END {print s}"}, stdin: "1\n2\n3.5\n", stdout: "6.5\n"},
		{name: "BEGIN only", argv: []string{"awk", `BEGIN {print 1+2, "x" "y"}`}, stdout: "3 xy\n"},
		{name: "NF", argv: []string{"awk", "{print NF, $NF}"}, stdin: "a b c\n\n", stdout: "3 c\n0 \n"},
		{name: "-v", argv: []string{"awk", "-v", "n=2", "NR<=n"}, stdin: "a\nb\nc\n", stdout: "a\nb\n"},
		{name: "assignment operand", argv: []string{"awk", "{print x, $1}", "x=1", "-", "x=2", "/etc/group"}, stdin: "s\n",
			stdout: "1 s\n2 root:x:0:\n2 daemon:x:1:\n2 wheel:x:10:root\n2 www-data:x:33:\n2 nogroup:x:65534:\n"},
		{name: "printf", argv: []string{"awk", `{printf "%-3s|%05.1f\n", $1, $2}`}, stdin: "a 3.14159\n", stdout: "a  |003.1\n"},
		{name: "printf conversions", argv: []string{"awk", `BEGIN { printf "%d %s %c %x %c\n", "42abc", 1.5, 65, 255, "hi" }`}, stdout: "42 1.5 A ff h\n"},
		{name: "printf no newline", argv: []string{"awk", `{printf "%s,", $1}`}, stdin: "a\nb\n", stdout: "a,b,"},
		{name: "field assignment", argv: []string{"awk", `{ $2 = "X"; print }`}, stdin: "a b c\n", stdout: "a X c\n"},
		{name: "OFS rebuild", argv: []string{"awk", `BEGIN { OFS="-" } { $1=$1; print }`}, stdin: "a b  c\n", stdout: "a-b-c\n"},
		{name: "NF assignment", argv: []string{"awk", `{ NF = 2; print }`}, stdin: "a b c\n", stdout: "a b\n"},
		{name: "split", argv: []string{"awk", `{ n = split($0, p, ","); print n, p[2] }`}, stdin: "x,y,z\n", stdout: "3 y\n"},
		{name: "gsub", argv: []string{"awk", `{ gsub(/o/, "0"); print }`}, stdin: "foo boo\n", stdout: "f00 b00\n"},
		{name: "sub on a field", argv: []string{"awk", `{ sub(/b/, "[&]", $2); print }`}, stdin: "ab bb\n", stdout: "ab [b]b\n"},
		{name: "string functions", argv: []string{"awk", `{ print length($1), toupper($2), substr($3, 2, 2), index($3, "c"), length }`},
			stdin: "abc de xbcd\n", stdout: "3 DE bc 3 11\n"},
		{name: "match", argv: []string{"awk", `{ if (match($0, /[0-9]+/)) print RSTART, RLENGTH }`}, stdin: "ab123c\n", stdout: "3 3\n"},
		{name: "arrays and for-in", argv: []string{"awk", `{ c[$1]++ } END { for (k in c) print k, c[k] }`}, stdin: "b\na\nb\n", stdout: "a 1\nb 2\n"},
		{name: "in and delete", argv: []string{"awk", `BEGIN { a["x"]; delete a["x"]; print ("x" in a), length(a) }`}, stdout: "0 0\n"},
		{name: "next", argv: []string{"awk", "NR % 2 == 0 { next } { print }"}, stdin: "1\n2\n3\n", stdout: "1\n3\n"},
		{name: "if else numeric", argv: []string{"awk", `{ if ($1 > 5) print "big"; else print "small" }`}, stdin: "10\n2\n", stdout: "big\nsmall\n"},
		{name: "strnum against string", argv: []string{"awk", `$1 == "10" { print "str" } $1 == 10 { print "num" }`}, stdin: "10.0\n", stdout: "num\n"},
		{name: "dynamic regex", argv: []string{"awk", `$1 ~ "^a"`}, stdin: "ab\nba\n", stdout: "ab\n"},
		{name: "loops", argv: []string{"awk", `BEGIN { while (i < 3) { i++; if (i == 2) continue; print i }; for (j = 0; j < 3; j++) s = s j; print s }`}, stdout: "1\n3\n012\n"},
		{name: "do while", argv: []string{"awk", `BEGIN { do { n++ } while (n < 5); print n }`}, stdout: "5\n"},
		{name: "numbers", argv: []string{"awk", `BEGIN { print 1/3, 7 % 3, 2^10, -2^2, 0.1 + 0.2, 1e6, 100000000000000000000 }`},
			stdout: "0.333333 1 1024 -4 0.3 1000000 1e+20\n"},
		{name: "uninitialized", argv: []string{"awk", `BEGIN { print x + 0, "[" x "]" }`}, stdout: "0 []\n"},
		{name: "ENVIRON", argv: []string{"awk", `BEGIN { print ENVIRON["HOME"] }`}, stdout: "/root\n"},
		{name: "ternary and logic", argv: []string{"awk", `{ print ($1 > 1 && $1 < 3) ? "in" : "out" }`}, stdin: "2\n5\n", stdout: "in\nout\n"},
		{name: "END NR", argv: []string{"awk", "END {print NR}"}, stdin: "a\nb\n", stdout: "2\n"},
		{name: "exit", argv: []string{"awk", `BEGIN { exit 3 } END { print "end" }`}, stdout: "end\n", status: 3},
		{name: "exit in rules", argv: []string{"awk", `NR == 2 { exit } { print } END { print "end", NR }`}, stdin: "a\nb\nc\n", stdout: "a\nend 2\n"},
		{name: "redirect", argv: []string{"awk", `{ print $1 > "/tmp/o" }`}, stdin: "a\nb\n", check: fileIs("/tmp/o", "a\nb\n")},
		{name: "redirect append", argv: []string{"awk", `{ print $1 >> "/etc/group" }`}, stdin: "z\n", check: fileIs("/etc/group", group+"z\n")},
		{name: "comparison in parens", argv: []string{"awk", `{ print ($1 > 1) }`}, stdin: "2\n", stdout: "1\n"},
		{name: "division by zero", argv: []string{"awk", "BEGIN { print 1/0 }"}, stderr: "awk: cmd. line:1: Division by zero\n", status: 1},
		{name: "syntax error", argv: []string{"awk", "{print"}, stderr: "awk: cmd. line:1: Unexpected token\n", status: 1},
		{name: "getline", argv: []string{"awk", "NR == 1 {getline; print NR, $0}"}, stdin: "a\nb\nc\n", stdout: "2 b\n"},
		{name: "getline var", argv: []string{"awk", "{getline x; print NR, $0, x}"}, stdin: "a\nb\n", stdout: "2 a b\n"},
		{name: "getline at end", argv: []string{"awk", "END {print getline, getline x < \"/nope\"}"}, stdin: "a\n", stdout: "-1 -1\n"},
		{name: "getline < file", argv: []string{"awk", `BEGIN {while ((getline l < "/etc/group") > 0) n++; print n, NR}`}, stdout: "5 0\n"},
		{name: "cmd | getline", setup: withSh, argv: []string{"awk", `BEGIN {"echo a b" | getline; print $2, NF, NR}`}, stdout: "b 2 0\n"},
		{name: "print | cmd", setup: withSh, argv: []string{"awk", `{print | "sort -r"} END {close("sort -r"); print "end"}`}, stdin: "a\nc\nb\n", stdout: "c\nb\na\nend\n"},
		{name: "close status", setup: withSh, argv: []string{"awk", `BEGIN {print "x" | "cat >/dev/null; exit 2"; print close("cat >/dev/null; exit 2"), close("none")}`}, stdout: "512 0\n"},
		{name: "system", setup: withSh, argv: []string{"awk", `BEGIN {printf "a "; r = system("echo b; exit 4"); print r}`}, stdout: "a b\n4\n"},
		{name: "functions", argv: []string{"awk", `function f(n) {return n < 2 ? 1 : n * f(n - 1)} BEGIN {print f(5)}`}, stdout: "120\n"},
		{name: "array parameter", argv: []string{"awk", `function add(a, k) {a[k] = 1} BEGIN {add(s, "x"); add(s, "y"); print length(s)}`}, stdout: "2\n"},
		{name: "scalar parameter", argv: []string{"awk", `function f(x, y) {x = 5; y = 6} BEGIN {v = 1; f(v); print v, y}`}, stdout: "1 \n"},
		{name: "undefined function", argv: []string{"awk", `BEGIN {nope()}`}, stderr: "awk: cmd. line:1: Call to undefined function\n", status: 1},
		{name: "srand", argv: []string{"awk", `BEGIN {print srand(3), srand()}`}, stdout: "1 3\n"},
		{name: "nextfile", argv: []string{"awk", `{print FILENAME, $0; nextfile}`, "/etc/group", "/etc/passwd"}, stdout: "/etc/group root:x:0:\n/etc/passwd root:x:0:0:root:/root:/bin/sh\n"},
		{name: "a pipe closes when awk dies", setup: withSh, argv: []string{"sh", "-c", `awk 'BEGIN {print "x" | "cat; echo eof"; print 1 % 0}'; sleep 1`},
			stdout: "x\neof\n", stderr: "awk: cmd. line:1: Division by zero\n", elapsed: time.Second},
		{name: "RS regex", argv: []string{"awk", `BEGIN {RS = "[,;]+"} {print NR, $0}`}, stdin: "a,b;;c", stdout: "1 a\n2 b\n3 c\n"},
		{name: "RS paragraphs", argv: []string{"awk", `BEGIN {RS = ""} {print NR, NF}`}, stdin: "\na b\nc\n\n\nd\n", stdout: "1 3\n2 1\n"},
		{name: "for-in in busybox's order", argv: []string{"awk", `BEGIN {a["b"]; a["A"]; a["~"]; a["}"]; for (k in a) printf "%s ", k}`},
			stdout: "} ~ A b "},
		{name: "-F t", argv: []string{"awk", "-Ft", "{print $2}"}, stdin: "atb\n", stdout: "b\n"},
		{name: "runtime error line", argv: []string{"awk", "BEGIN {\n x = 0\n print 1 % x\n}"}, stderr: "awk: cmd. line:3: Division by zero\n", status: 1},
		{name: "bad regex", argv: []string{"awk", "/a(/"}, stderr: "awk: bad regex 'a(': Unmatched ( or \\(\n", status: 1},
		{name: "printf star", argv: []string{"awk", `BEGIN {printf "%*d", 2, 1}`}, stderr: "awk: cmd. line:1: %*x formats are not supported\n", status: 1},
		{name: "missing file", argv: []string{"awk", "{print}", "/nope"}, stderr: "awk: /nope: No such file or directory\n", status: 1},
		{name: "no program", argv: []string{"awk"}, stderr: usage("awk"), status: 1},
	})
}
