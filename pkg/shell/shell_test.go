package shell

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// start is the simulator's clock in testEnv: a Tuesday, so date's padded day shows.
var start = time.Date(2024, 3, 5, 10, 20, 30, 0, time.UTC)

func testEnv() Env {
	return Env{
		Hostname: "web-0",
		Vars: []Var{
			{Name: "PATH", Value: "/usr/bin:/bin"},
			{Name: "GREETING", Value: "hello  world"}, // two blanks: shows field splitting
			{Name: "EMPTY", Value: ""},
			{Name: "HOME", Value: "/root"},
		},
		Files: map[string]string{"/data/msg": "hi\n"},
		Now:   start,
	}
}

const envListing = "PATH=/usr/bin:/bin\nGREETING=hello  world\nEMPTY=\nHOME=/root\n"

type runCase struct {
	name           string
	argv           []string
	stdout, stderr string
	code           int
	duration       time.Duration
	stdin          bool // some step copies stdin
}

func sh(script string, args ...string) []string {
	return append([]string{"sh", "-c", script}, args...)
}

var runCases = []runCase{
	// Lookup.
	{name: "empty argv", argv: nil, stderr: "exec: no command\n", code: 1},
	{name: "unknown", argv: []string{"nosuch", "x"}, stderr: "nosuch: command not found\n", code: 127},
	{name: "unknown path as given", argv: []string{"/opt/bin/nosuch"}, stderr: "/opt/bin/nosuch: command not found\n", code: 127},
	{name: "path to known command", argv: []string{"/bin/echo", "hi"}, stdout: "hi\n"},
	{name: "usr bin env", argv: []string{"/usr/bin/env"}, stdout: envListing},

	// echo
	{name: "echo", argv: []string{"echo", "hello", "world"}, stdout: "hello world\n"},
	{name: "echo nothing", argv: []string{"echo"}, stdout: "\n"},
	{name: "echo -n", argv: []string{"echo", "-n", "a", "b"}, stdout: "a b"},
	{name: "echo -n alone", argv: []string{"echo", "-n"}},

	// cat
	{name: "cat hostname", argv: []string{"cat", "/etc/hostname"}, stdout: "web-0\n"},
	{name: "cat file", argv: []string{"cat", "/data/msg"}, stdout: "hi\n"},
	{name: "cat relative to root", argv: []string{"cat", "data/../data/msg"}, stdout: "hi\n"},
	{name: "cat missing continues", argv: []string{"cat", "/data/msg", "/missing", "/etc/hostname"},
		stdout: "hi\nweb-0\n", stderr: "cat: /missing: No such file or directory\n", code: 1},
	{name: "cat stdin", argv: []string{"cat"}, stdin: true},
	{name: "cat dash", argv: []string{"cat", "-", "/data/msg"}, stdout: "hi\n", stdin: true},

	// env, printenv
	{name: "env", argv: []string{"env"}, stdout: envListing},
	{name: "printenv", argv: []string{"printenv"}, stdout: envListing},
	{name: "printenv names", argv: []string{"printenv", "HOME", "GREETING"}, stdout: "/root\nhello  world\n"},
	{name: "printenv missing", argv: []string{"printenv", "NOPE", "HOME"}, stdout: "/root\n", code: 1},
	{name: "printenv hostname is not in env", argv: []string{"printenv", "HOSTNAME"}, code: 1},
	{name: "env sets for command", argv: []string{"env", "FOO=bar", "printenv", "FOO"}, stdout: "bar\n"},
	{name: "env replaces in place", argv: []string{"env", "PATH=/x", "NEW=1"},
		stdout: "PATH=/x\nGREETING=hello  world\nEMPTY=\nHOME=/root\nNEW=1\n"},
	{name: "env unknown command", argv: []string{"env", "nosuch"}, stderr: "env: 'nosuch': No such file or directory\n", code: 127},
	{name: "env option", argv: []string{"env", "-i"}, stderr: "env: option not simulated: -i\n", code: 125},

	// hostname, date
	{name: "hostname", argv: []string{"hostname"}, stdout: "web-0\n"},
	{name: "hostname option", argv: []string{"hostname", "-i"}, stderr: "hostname: arguments not simulated\n", code: 1},
	{name: "date", argv: []string{"date"}, stdout: "Tue Mar  5 10:20:30 UTC 2024\n"},
	{name: "date -u", argv: []string{"date", "-u"}, stdout: "Tue Mar  5 10:20:30 UTC 2024\n"},
	{name: "date +%s", argv: []string{"date", "+%s"}, stdout: "1709634030\n"},
	{name: "date other format", argv: []string{"date", "+%Y"}, stderr: "date: invalid date format +%Y\n", code: 1},

	// sleep
	{name: "sleep decimal", argv: []string{"sleep", "1.5"}, duration: 1500 * time.Millisecond},
	{name: "sleep leading dot", argv: []string{"sleep", ".5"}, duration: 500 * time.Millisecond},
	{name: "sleep minutes", argv: []string{"sleep", "2m"}, duration: 2 * time.Minute},
	{name: "sleep summed", argv: []string{"sleep", "1h", "1d", "0.5s"}, duration: 25*time.Hour + 500*time.Millisecond},
	{name: "sleep zero", argv: []string{"sleep", "0"}},
	{name: "sleep infinity", argv: []string{"sleep", "infinity"}, duration: math.MaxInt64},
	{name: "sleep bad", argv: []string{"sleep", "abc"}, stderr: "sleep: invalid time interval 'abc'\n", code: 1},
	{name: "sleep negative", argv: []string{"sleep", "-1"}, stderr: "sleep: invalid time interval '-1'\n", code: 1},
	{name: "sleep exponent", argv: []string{"sleep", "1e3"}, stderr: "sleep: invalid time interval '1e3'\n", code: 1},
	{name: "sleep bad operand sleeps not at all", argv: []string{"sleep", "1", "x"}, stderr: "sleep: invalid time interval 'x'\n", code: 1},
	{name: "sleep missing operand", argv: []string{"sleep"}, stderr: "sleep: missing operand\n", code: 1},

	// true, false, exit
	{name: "true", argv: []string{"true"}},
	{name: "false", argv: []string{"false"}, code: 1},
	{name: "exit", argv: []string{"exit"}},
	{name: "exit 3", argv: []string{"exit", "3"}, code: 3},
	{name: "exit 256", argv: []string{"exit", "256"}},
	{name: "exit 300", argv: []string{"exit", "300"}, code: 44},
	{name: "exit huge", argv: []string{"exit", "99999999999999999999999"}, code: 99999999999999999999999 % 256},
	{name: "exit word", argv: []string{"exit", "foo"}, stderr: "sh: exit: Illegal number: foo\n", code: 2},
	{name: "exit negative", argv: []string{"exit", "-1"}, stderr: "sh: exit: Illegal number: -1\n", code: 2},

	// sh: invocation
	{name: "sh alone", argv: []string{"sh"}, stderr: "sh: interactive shell not simulated\n", code: 2},
	{name: "sh -c without script", argv: []string{"sh", "-c"}, stderr: "sh: interactive shell not simulated\n", code: 2},
	{name: "sh script file", argv: []string{"sh", "/probe.sh"}, stderr: "sh: interactive shell not simulated\n", code: 2},
	{name: "bin sh", argv: []string{"/bin/sh", "-c", "echo hi"}, stdout: "hi\n"},
	{name: "bash", argv: []string{"bash", "-c", "echo hi"}, stdout: "hi\n"},
	{name: "bash -lc", argv: []string{"bash", "-lc", "echo hi"}, stdout: "hi\n"},
	{name: "ash", argv: []string{"ash", "-c", "echo hi"}, stdout: "hi\n"},
	{name: "dash", argv: []string{"/usr/bin/dash", "-c", "echo hi"}, stdout: "hi\n"},
	{name: "sh -x", argv: []string{"sh", "-xc", "echo hi"}, stderr: "sh: option not simulated: -x\n", code: 2},
	{name: "sh long option", argv: []string{"bash", "--login", "-c", "echo hi"}, stderr: "sh: option not simulated: --login\n", code: 2},
	{name: "sh empty script", argv: sh("")},

	// sh: lists
	{name: "semicolon", argv: sh("echo a; echo b"), stdout: "a\nb\n"},
	{name: "newlines", argv: sh("echo a\n\necho b\n"), stdout: "a\nb\n"},
	{name: "trailing semicolon", argv: sh("echo a;"), stdout: "a\n"},
	{name: "and or true", argv: sh("true && echo yes || echo no"), stdout: "yes\n"},
	{name: "and or false", argv: sh("false && echo yes || echo no"), stdout: "no\n"},
	{name: "or skips", argv: sh("true || echo no; echo $?"), stdout: "0\n"},
	{name: "and after newline", argv: sh("echo a &&\n  echo b"), stdout: "a\nb\n"},
	{name: "status", argv: sh("false; echo $?"), stdout: "1\n"},
	{name: "status of or", argv: sh("false || true; echo $? ${?}"), stdout: "0 0\n"},
	{name: "last command is the status", argv: sh("echo a; false"), stdout: "a\n", code: 1},
	{name: "skipped leaves status", argv: sh("false && echo no"), code: 1},
	{name: "exit stops", argv: sh("echo a; exit 3; echo no"), stdout: "a\n", code: 3},
	{name: "exit defaults to status", argv: sh("false; exit"), code: 1},
	{name: "exit bad stops", argv: sh("exit foo; echo no"), stderr: "sh: exit: Illegal number: foo\n", code: 2},
	{name: "nested exit stops inner only", argv: sh(`sh -c "exit 4"; echo $?`), stdout: "4\n"},
	{name: "errexit", argv: []string{"sh", "-ec", "echo a; false; echo no"}, stdout: "a\n", code: 1},
	{name: "errexit ignores tested failures", argv: []string{"sh", "-e", "-c", "false || echo yes; false && echo no; echo end"}, stdout: "yes\nend\n"},

	// sh: words
	{name: "expansion", argv: sh(`echo "$GREETING" ${HOME} $HOSTNAME`), stdout: "hello  world /root web-0\n"},
	{name: "unquoted splits", argv: sh(`echo $GREETING`), stdout: "hello world\n"},
	{name: "quotes", argv: sh(`echo 'single $HOME' "double $HOME" esc\ aped`), stdout: "single $HOME double /root esc aped\n"},
	{name: "empty expansions", argv: sh(`echo $UNSET x "$UNSET" y $EMPTY`), stdout: "x  y\n"},
	{name: "empty quotes are arguments", argv: sh(`echo a '' "" b`), stdout: "a   b\n"},
	{name: "no command after expansion", argv: sh(`$EMPTY; $UNSET echo hi`), stdout: "hi\n"},
	{name: "escapes", argv: sh(`echo \$HOME a\\b "x\"y" "\a" "\$" '\n'`), stdout: `$HOME a\b x"y \a $ \n` + "\n"},
	{name: "lone dollar", argv: sh(`echo price: $ "$"`), stdout: "price: $ $\n"},
	{name: "line continuation", argv: sh("echo a \\\n b"), stdout: "a b\n"},
	{name: "utf-8", argv: sh(`echo héllo "wörld" \ü 'ñ'`), stdout: "héllo wörld ü ñ\n"},
	{name: "positional", argv: sh(`echo $0 $1 ${2} $3`, "name", "a", "b"), stdout: "name a b\n"},
	{name: "default $0", argv: sh(`echo $0`), stdout: "sh\n"},
	{name: "comment", argv: sh("echo a # not b\n# whole line\necho c#d"), stdout: "a\nc#d\n"},
	{name: "only a comment", argv: sh("# nothing")},
	{name: "quoted keyword is a command", argv: sh(`"if"`), stderr: "sh: 1: if: not found\n", code: 127},

	// sh: commands
	{name: "unknown in sh", argv: sh("nosuch"), stderr: "sh: 1: nosuch: not found\n", code: 127},
	{name: "unknown then status", argv: sh("nosuch; echo $?"), stdout: "127\n", stderr: "sh: 1: nosuch: not found\n"},
	{name: "unknown on line 2", argv: sh("echo a\n/x/nosuch"), stdout: "a\n", stderr: "sh: 2: /x/nosuch: not found\n", code: 127},
	{name: "cat in sh", argv: sh("cat /etc/hostname /nope; echo done"), stdout: "web-0\ndone\n",
		stderr: "cat: /nope: No such file or directory\n"},
	{name: "cat stdin in sh", argv: sh("cat; echo after"), stdout: "after\n", stdin: true},
	{name: "env in sh", argv: sh("env"), stdout: envListing},
	{name: "date after sleep", argv: sh("echo before; sleep 2; date"),
		stdout: "before\nTue Mar  5 10:20:32 UTC 2024\n", duration: 2 * time.Second},
	{name: "date +%s after sleep", argv: sh("sleep 2; date +%s; sleep 0.5"), stdout: "1709634032\n", duration: 2500 * time.Millisecond},
	{name: "sleep bad in sh", argv: sh("sleep x || echo failed"), stdout: "failed\n", stderr: "sleep: invalid time interval 'x'\n"},

	// sh: syntax that does not run
	{name: "pipe", argv: sh("sleep 1; echo a | cat"), stderr: "sh: 1: syntax not simulated: |\n", code: 2},
	{name: "redirect out", argv: sh("echo hi > /tmp/x"), stderr: "sh: 1: syntax not simulated: >\n", code: 2},
	{name: "redirect fd", argv: sh("echo hi 2>&1"), stderr: "sh: 1: syntax not simulated: >&\n", code: 2},
	{name: "redirect in", argv: sh("cat < /data/msg"), stderr: "sh: 1: syntax not simulated: <\n", code: 2},
	{name: "backticks", argv: sh("echo `hostname`"), stderr: "sh: 1: syntax not simulated: `\n", code: 2},
	{name: "backticks in quotes", argv: sh("echo \"`hostname`\""), stderr: "sh: 1: syntax not simulated: `\n", code: 2},
	{name: "command substitution", argv: sh(`echo "$(hostname)"`), stderr: "sh: 1: syntax not simulated: $(\n", code: 2},
	{name: "background", argv: sh("sleep 1 &"), stderr: "sh: 1: syntax not simulated: &\n", code: 2},
	{name: "subshell", argv: sh("(echo a)"), stderr: "sh: 1: syntax not simulated: (\n", code: 2},
	{name: "unterminated single", argv: sh("echo 'abc"), stderr: "sh: 1: syntax not simulated: '\n", code: 2},
	{name: "unterminated double", argv: sh(`echo "abc`), stderr: "sh: 1: syntax not simulated: \"\n", code: 2},
	{name: "if", argv: sh("if true; then echo a; fi"), stderr: "sh: 1: syntax not simulated: if\n", code: 2},
	{name: "assignment", argv: sh("X=1; echo $X"), stderr: "sh: 1: syntax not simulated: X=1\n", code: 2},
	{name: "parameter operator", argv: sh("echo ${HOME:-x}"), stderr: "sh: 1: syntax not simulated: ${HOME:-x}\n", code: 2},
	{name: "special parameter", argv: sh("echo $$"), stderr: "sh: 1: syntax not simulated: $$\n", code: 2},
	{name: "error on later line", argv: sh("echo a\necho b | cat"), stderr: "sh: 2: syntax not simulated: |\n", code: 2},
	{name: "leading semicolon", argv: sh("; echo a"), stderr: "sh: 1: Syntax error: \";\" unexpected\n", code: 2},
	{name: "double semicolon", argv: sh("echo a;; echo b"), stderr: "sh: 1: Syntax error: \";;\" unexpected\n", code: 2},
	{name: "dangling and", argv: sh("echo a &&"), stderr: "sh: 1: Syntax error: end of file unexpected\n", code: 2},
	{name: "and or", argv: sh("echo a && || echo b"), stderr: "sh: 1: Syntax error: \"||\" unexpected\n", code: 2},
}

func TestRun(t *testing.T) {
	for _, tc := range runCases {
		t.Run(tc.name, func(t *testing.T) {
			p := Run(tc.argv, testEnv())
			stdout, stderr := p.Output()
			if string(stdout) != tc.stdout {
				t.Errorf("stdout = %q, want %q", stdout, tc.stdout)
			}
			if string(stderr) != tc.stderr {
				t.Errorf("stderr = %q, want %q", stderr, tc.stderr)
			}
			if p.ExitCode != tc.code {
				t.Errorf("exit code = %d, want %d", p.ExitCode, tc.code)
			}
			if got := p.Duration(); got != tc.duration {
				t.Errorf("duration = %v, want %v", got, tc.duration)
			}
			stdin := slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Stdin })
			if stdin != tc.stdin {
				t.Errorf("copies stdin = %v, want %v", stdin, tc.stdin)
			}
			for i, s := range p.Steps {
				if len(s.Stdout) == 0 && len(s.Stderr) == 0 && !s.Stdin && s.Sleep == 0 {
					t.Errorf("step %d of %+v is empty", i, p.Steps)
				}
			}
		})
	}
}

// TestStepsKeepOrder checks that output, stdin copies and sleeps stay in the order the
// script does them, joined into as few steps as that order allows.
func TestStepsKeepOrder(t *testing.T) {
	p := Run(sh("echo a; sleep 1; cat /nope; echo b; cat; sleep 2; sleep 3; cat /nope"), testEnv())
	want := Program{
		Steps: []Step{
			{Stdout: []byte("a\n"), Sleep: time.Second},
			{Stderr: []byte("cat: /nope: No such file or directory\n")},
			{Stdout: []byte("b\n"), Stdin: true, Sleep: 5 * time.Second},
			{Stderr: []byte("cat: /nope: No such file or directory\n")},
		},
		ExitCode: 1,
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("Run (-want +got):\n%s", diff)
	}
}

func TestSleepInfinitySaturates(t *testing.T) {
	p := Run(sh("sleep inf; sleep 1; sleep infinity"), testEnv())
	if got := p.Duration(); got != math.MaxInt64 {
		t.Errorf("Duration = %v, want the longest duration", got)
	}
	p = Program{Steps: []Step{{Sleep: math.MaxInt64}, {Sleep: time.Second}}}
	if got := p.Duration(); got != math.MaxInt64 {
		t.Errorf("Duration of two steps = %v, want it saturated", got)
	}
}

func TestFilesOverrideHostnameFile(t *testing.T) {
	env := testEnv()
	env.Files["/etc/hostname"] = "custom\n"
	if got, _ := Run([]string{"cat", "/etc/hostname"}, env).Output(); string(got) != "custom\n" {
		t.Errorf("cat /etc/hostname = %q, want the file from Files", got)
	}
}

// TestRunKeepsEnv checks that env NAME=VALUE does not write into the caller's Vars, even
// when their slice has room to append in place.
func TestRunKeepsEnv(t *testing.T) {
	env := testEnv()
	vars := make([]Var, len(env.Vars), 10)
	copy(vars, env.Vars)
	env.Vars = vars
	Run([]string{"env", "PATH=/x", "NEW=1", "sh", "-c", "echo $PATH $NEW"}, env)
	if diff := cmp.Diff(testEnv().Vars, env.Vars); diff != "" {
		t.Errorf("Vars changed (-want +got):\n%s", diff)
	}
	if extra := vars[:cap(vars)][len(vars)]; extra != (Var{}) {
		t.Errorf("Run appended %v into the caller's slice", extra)
	}
	got, _ := Run([]string{"env", "PATH=/x", "NEW=1", "sh", "-c", "echo $PATH $NEW"}, env).Output()
	if string(got) != "/x 1\n" {
		t.Errorf("env then sh printed %q, want the variables env set", got)
	}
}

func TestCommands(t *testing.T) {
	want := []string{"ash", "bash", "cat", "dash", "date", "echo", "env", "exit", "false",
		"hostname", "printenv", "sh", "sleep", "true"}
	got := Commands()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Commands (-want +got):\n%s", diff)
	}
	for _, name := range got {
		if p := Run([]string{name}, testEnv()); p.ExitCode == 127 {
			t.Errorf("%s is listed but not found", name)
		}
	}
}
