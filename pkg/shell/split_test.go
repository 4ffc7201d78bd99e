package shell

import (
	"slices"
	"testing"
	"time"
)

// runScript runs script with sh -c and returns its stdout, stderr and status.
func runScript(t *testing.T, script string) (string, string, int) {
	t.Helper()
	fs := newTestFS(t)
	_ = fs.MkdirAll("/tmp", 0o777, 0, 0)
	r := start(t, fs, "sh", "-c", script)
	r.until(time.Hour)
	if !r.exited {
		t.Fatalf("still running; stdout %q stderr %q", r.out.buf.String(), r.err.buf.String())
	}
	return r.out.buf.String(), r.err.buf.String(), r.status
}

// Field splitting with a non-whitespace IFS keeps the empty fields between delimiters, as
// POSIX and busybox's ash do (test/difftest/testdata/shell.txtar, ifs-*); the whitespace
// of the default IFS still collapses. Each want is what busybox 1.35 prints.
func TestFieldSplittingKeepsEmptyFields(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"empty field", `IFS=,; s="a,b,,d"; set -- $s; echo $#`, "4\n"},
		{"trailing delimiter", `IFS=,; s="a,b,"; set -- $s; echo $#; s="a,,"; set -- $s; echo $#`, "2\n2\n"},
		{"leading delimiter", `IFS=,; s=",a"; set -- $s; echo $#; s=","; set -- $s; echo $#`, "2\n1\n"},
		{"white space around a delimiter", `IFS=", "; s="a , ,b"; set -- $s; for f in "$@"; do echo "<$f>"; done`, "<a>\n<>\n<b>\n"},
		{"for loop", `IFS=:; p=/bin:/usr/bin::/sbin; for d in $p; do echo "[$d]"; done`, "[/bin]\n[/usr/bin]\n[]\n[/sbin]\n"},
		{"joined to the word", `IFS=,; v="a,b"; set -- x${v}y; echo $# "$1" "$2"`, "2 xa by\n"},
		{"quoted parts are not split", `IFS=,; v="a,b"; set -- "$v",$v; echo $#; echo "$1"`, "2\na,b,a\n"},
		{"command substitution", `IFS=,; set -- $(echo "1,,3"); echo $#`, "3\n"},
		{"unquoted $@", `set -- "a,b" c; IFS=,; set -- $@; echo $#`, "3\n"},
		{"empty value vanishes", `IFS=,; e=; set -- $e; echo $#`, "0\n"},
		{"default IFS collapses", `s="  a  b	c"; set -- $s; echo $#`, "3\n"},
		{"expanded text is not brace-expanded", `IFS=,; v="{x,y}"; echo $v`, "{x y}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, status := runScript(t, tt.script)
			if stdout != tt.want || stderr != "" || status != 0 {
				t.Errorf("got stdout %q stderr %q status %d, want %q", stdout, stderr, status, tt.want)
			}
		})
	}
}

// read splits its line as busybox's read does: empty fields kept, the last name taking the
// rest less its trailing IFS whitespace and a final lone delimiter.
func TestReadFields(t *testing.T) {
	tests := []struct {
		ifs, line string
		n         int
		raw       bool
		want      []string
	}{
		{",", "a,b,,d", 2, true, []string{"a", "b,,d"}},
		{",", "a,b,", 2, true, []string{"a", "b"}},
		{",", "a,b", 3, true, []string{"a", "b", ""}},
		{",", ",a", 2, true, []string{"", "a"}},
		{", ", " a , b ,  ", 2, true, []string{"a", "b"}},
		{",", "a,b,,d", 4, true, []string{"a", "b", "", "d"}},
		{",", "a,b,c,", 3, true, []string{"a", "b", "c"}},
		{",", `a\,b,c`, 2, false, []string{"a,b", "c"}},
		{",", "a,b,,", 2, true, []string{"a", "b,,"}},
		{",", "a,,", 2, true, []string{"a", ""}},
		{",", ",,a", 3, true, []string{"", "", "a"}},
		{" \t\n", "  lead  trail  ", 1, true, []string{"lead  trail"}},
		{" \t\n", "a  b  c  ", 2, true, []string{"a", "b  c"}},
	}
	for _, tt := range tests {
		if got := readFields(tt.ifs, tt.line, tt.n, tt.raw, true); !slices.Equal(got, tt.want) {
			t.Errorf("readFields(%q, %q, %d) = %q, want %q", tt.ifs, tt.line, tt.n, got, tt.want)
		}
	}
	if got := readFields(" \t\n", "  a  ", 1, true, false); !slices.Equal(got, []string{"  a  "}) {
		t.Errorf("read without a name = %q, want the line as it is", got)
	}
}

// $$ is the shell's pid wherever it is expanded, a command's argument included; ash's
// kill builtin words its errors as busybox's kill applet, after the shell's name. (A
// manifest's "kill -USR1 $$" reaches the shell as "kill -USR1 $": the kubelet's $(VAR)
// expansion makes "$$" a "$", as upstream's does.)
func TestKillBuiltin(t *testing.T) {
	tests := []struct {
		name, script, stdout, stderr string
		status                       int
	}{
		{name: "own pid", script: `trap 'echo got USR1' USR1; kill -USR1 $$; echo after`, stdout: "got USR1\nafter\n"},
		{name: "pid in a word", script: `trap 'echo term' TERM; kill "$$"; echo $$x`, stdout: "term\n1x\n"},
		{name: "not a number", script: `kill -USR1 $`, stderr: "sh: invalid number '$'\n", status: 1},
		{name: "bad signal", script: `kill -FOO 1`, stderr: "sh: bad signal name 'FOO'\n", status: 1},
		{name: "nobody", script: `kill`, stderr: "sh: you need to specify whom to kill\n", status: 1},
		{name: "list one", script: `kill -l 9; kill -l SEGV`, stdout: "KILL\n11\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, status := runScript(t, tt.script)
			if stdout != tt.stdout || stderr != tt.stderr || status != tt.status {
				t.Errorf("got stdout %q stderr %q status %d, want %q %q %d", stdout, stderr, status, tt.stdout, tt.stderr, tt.status)
			}
		})
	}
}
