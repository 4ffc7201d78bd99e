package shell

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/memcg"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// testPrograms are small stand-ins for the image's applets (pkg/programs has the real ones).
var testPrograms = map[string]Program{
	"echo": func(p *Proc) int {
		fmt.Fprintln(p.Stdout(), strings.Join(p.Args()[1:], " "))
		return 0
	},
	"sleep": func(p *Proc) int {
		n, err := strconv.ParseFloat(p.Args()[1], 64)
		if err != nil {
			fmt.Fprintf(p.Stderr(), "sleep: invalid number '%s'\n", p.Args()[1])
			return 1
		}
		return p.SleepThenExit(time.Duration(n*float64(time.Second)), 0)
	},
	"cat": func(p *Proc) int {
		if len(p.Args()) == 1 {
			_, _ = io.Copy(p.Stdout(), p.Stdin())
			return 0
		}
		for _, f := range p.Args()[1:] {
			b, err := p.FS().ReadFile(p.Abs(f))
			if err != nil {
				fmt.Fprintf(p.Stderr(), "cat: can't open '%s': %v\n", f, err)
				return 1
			}
			_, _ = p.Stdout().Write(b)
		}
		return 0
	},
	"test": func(p *Proc) int {
		a := p.Args()[1:]
		if p.Args()[0] == "[" {
			a = a[:len(a)-1]
		}
		switch {
		case len(a) == 3 && a[1] == "=":
			return boolStatus(a[0] == a[2])
		case len(a) == 3 && a[1] == "-lt":
			x, _ := strconv.Atoi(a[0])
			y, _ := strconv.Atoi(a[2])
			return boolStatus(x < y)
		case len(a) == 2 && a[0] == "-f":
			info, err := p.FS().Stat(p.Abs(a[1]))
			return boolStatus(err == nil && info.Mode.IsRegular())
		case len(a) == 1:
			return boolStatus(a[0] != "")
		}
		return 2
	},
	"yes": func(p *Proc) int {
		for {
			p.Tick()
			if _, err := p.Stdout().Write([]byte("y\n")); err != nil {
				return 1
			}
		}
	},
	"head1": func(p *Proc) int {
		line, _ := p.ReadLine(0)
		fmt.Fprintln(p.Stdout(), line)
		return 0
	},
}

// newTestFS is a filesystem with the test programs in /bin.
func newTestFS(t testing.TB) *vfs.View {
	fs := vfs.New(nil)
	if err := fs.MkdirAll("/bin", 0o755, 0, 0); err != nil {
		t.Fatal(err)
	}
	for name := range testPrograms {
		mustProgram(t, fs, "/bin/"+name, name)
	}
	mustProgram(t, fs, "/bin/[", "test")
	mustProgram(t, fs, "/bin/sh", "sh")
	return fs
}

func mustProgram(t testing.TB, fs *vfs.View, p, name string) {
	if err := fs.WriteFile(p, nil, 0o755, false, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := fs.SetProgram(p, name); err != nil {
		t.Fatal(err)
	}
}

// output is an Output that stamps each write with the machine's clock.
type output struct {
	m   *Machine
	buf bytes.Buffer
	log []string
}

func (o *output) Write(b []byte) (int, error) {
	o.log = append(o.log, fmt.Sprintf("%v %s", time.Duration(o.m.now), b))
	return o.buf.Write(b)
}

type run struct {
	m      *Machine
	out    *output
	err    *output
	status int
	exited bool
	now    int64
}

func start(t testing.TB, fs *vfs.View, argv ...string) *run {
	workers := NewWorkers()
	t.Cleanup(workers.Close)
	m := NewMachine(Config{FS: fs, Hostname: "pod-1", Programs: func(n string) Program { return testPrograms[n] }, Workers: workers})
	r := &run{m: m, out: &output{m: m}, err: &output{m: m}}
	_, err := m.Start(Spec{Argv: argv, Env: []string{"PATH=/bin", "HOME=/root"}, Stdout: r.out, Stderr: r.err, OnExit: func(s int) { r.status, r.exited = s, true }})
	if err != nil {
		t.Fatalf("start %q: %v", argv, err)
	}
	return r
}

// until steps the machine on a virtual clock until the process exits or limit passes.
func (r *run) until(limit time.Duration) {
	for !r.exited {
		next := r.m.Step(r.now)
		if r.exited || next == 0 || next > int64(limit) {
			r.now = max(r.now, int64(limit))
			return
		}
		r.now = max(next, r.now)
	}
}

func TestShellScripts(t *testing.T) {
	tests := []struct {
		name, script string
		files        map[string]string
		stdout       string
		stderr       string
		status       int
	}{
		{name: "echo", script: "echo hello world", stdout: "hello world\n"},
		{name: "exit code", script: "echo dying; exit 3", stdout: "dying\n", status: 3},
		{name: "last status", script: "false", status: 1},
		{name: "variables", script: `x=1; y="$x two"; echo "$y" ${z:-dflt} ${#y}`, stdout: "1 two dflt 5\n"},
		{name: "arithmetic", script: `i=0; while [ $i -lt 3 ]; do i=$((i+1)); echo $i; done`, stdout: "1\n2\n3\n"},
		{name: "for", script: `for f in a b "c d"; do echo "<$f>"; done`, stdout: "<a>\n<b>\n<c d>\n"},
		{name: "c for", script: `for ((i=0;i<2;i++)); do echo $i; done`, stdout: "0\n1\n"},
		{name: "if elif", script: `if false; then echo 1; elif true; then echo 2; else echo 3; fi`, stdout: "2\n"},
		{name: "case", script: `case abc in a*) echo yes;; *) echo no;; esac`, stdout: "yes\n"},
		{name: "function", script: `f() { echo "f:$1:$#"; return 4; }; f x y; echo $?`, stdout: "f:x:2\n4\n"},
		{name: "cmd subst", script: `x=$(echo inner); echo "got $x"`, stdout: "got inner\n"},
		{name: "pipe", script: `echo piped | cat`, stdout: "piped\n"},
		{name: "pipe three", script: `echo a | cat | cat`, stdout: "a\n"},
		{name: "redirect and read", script: `echo saved > /tmp/f; echo more >> /tmp/f; cat /tmp/f; cat < /tmp/f`, stdout: "saved\nmore\nsaved\nmore\n"},
		{name: "stderr to stdout", script: `cat /nope 2>&1`, stdout: "cat: can't open '/nope': No such file or directory\n", status: 1},
		{name: "stderr", script: `cat /nope`, stderr: "cat: can't open '/nope': No such file or directory\n", status: 1},
		{name: "heredoc", script: "x=v\ncat <<EOF\nval $x\nEOF\ncat <<'EOF'\nraw $x\nEOF", stdout: "val v\nraw $x\n"},
		{name: "not found", script: `nosuch arg`, stderr: "/bin/sh: nosuch: not found\n", status: 127},
		{name: "syntax error", script: `if then`, stderr: "/bin/sh: line 1: syntax error: `if` must be followed by a statement list\n", status: 2},
		{name: "and or", script: `false && echo no || echo yes`, stdout: "yes\n"},
		{name: "negation", script: `! false; echo $?`, stdout: "0\n"},
		{name: "errexit", script: `set -e; echo a; false; echo b`, stdout: "a\n", status: 1},
		{name: "subshell isolation", script: `x=1; (x=2; cd /tmp; echo $x); echo $x; pwd`, stdout: "2\n1\n/\n"},
		{name: "subshell exit", script: `(exit 5); echo $?`, stdout: "5\n"},
		{name: "exit trap", script: `trap 'echo bye' EXIT; echo hi`, stdout: "hi\nbye\n"},
		{name: "read loop", script: "printf_() { echo one; echo two; }; printf_ | while read l; do echo \"[$l]\"; done", stdout: "[one]\n[two]\n"},
		{name: "read from heredoc", script: "read a b <<EOF\nx y z\nEOF\necho $a/$b", stdout: "x/y z\n"},
		{name: "exported env", script: `export A=1; B=2; sh -c 'echo ${A}-${B}'`, stdout: "1-\n"},
		{name: "prefix assignment", script: `A=tmp sh -c 'echo $A'; echo "[$A]"`, stdout: "tmp\n[]\n"},
		{name: "positional", script: `set -- a b c; shift; echo "$@" $#`, stdout: "b c 2\n"},
		{name: "glob", script: `echo x > /tmp/a1; echo x > /tmp/a2; echo /tmp/a*`, stdout: "/tmp/a1 /tmp/a2\n"},
		{name: "local", script: `x=g; f() { local x=l; echo $x; }; f; echo $x`, stdout: "l\ng\n"},
		{name: "recursion limit", script: `f() { f; }; f`, stderr: "/bin/sh: f: maximum function nesting level exceeded (1000)\n", status: 2},
		{name: "test bracket", script: `[ -f /etc/x ] && echo file`, files: map[string]string{"/etc/x": "1"}, stdout: "file\n"},
		{name: "double bracket", script: `x=abc; [[ $x == a* && -f /etc/x ]] && echo ok`, files: map[string]string{"/etc/x": "1"}, stdout: "ok\n"},
		{name: "exec", script: `exec echo replaced; echo never`, stdout: "replaced\n"},
		{name: "exec redirect", script: `exec >/tmp/o; echo hidden; cat /tmp/o >&2`, stderr: "hidden\n"},
		{name: "readonly", script: `readonly R=1; R=2; echo $R`, stderr: "/bin/sh: R: is read only\n", status: 2},
		{name: "background wait", script: `(sleep 1; echo bg) & echo fg; wait; echo done`, stdout: "fg\nbg\ndone\n"},
		{name: "break continue", script: `for i in 1 2 3 4; do [ $i = 2 ] && continue; [ $i = 4 ] && break; echo $i; done`, stdout: "1\n3\n"},
		{name: "yes head", script: `yes | head1`, stdout: "y\n"},
		{name: "script file shebang", script: `/tmp/s.sh arg`, files: map[string]string{"/tmp/s.sh": "#!/bin/sh\necho script $1\n"}, stdout: "script arg\n"},
		// The #! line is read alone (the first 256 bytes); a longer one is read whole.
		{name: "long shebang line", script: `/tmp/s.sh arg`, files: map[string]string{"/tmp/s.sh": "#!/bin/sh" + strings.Repeat(" ", 300) + "\necho long $1\n"}, stdout: "long arg\n"},
		{name: "shebang line at the edge", script: `/tmp/s.sh arg`, files: map[string]string{"/tmp/s.sh": "#!/bin/sh" + strings.Repeat(" ", 246) + "\necho edge $1\n"}, stdout: "edge arg\n"},
		{name: "dollar dollar", script: `echo $$`, stdout: "1\n"},
		{name: "unset and set again", script: `export A=1; unset A; A=2; export A; sh -c 'echo $A'`, stdout: "2\n"},
		{name: "killed notice", script: "sh -c 'kill $$'; echo $?", stdout: "143\n", stderr: "Terminated\n"},
		{name: "killed by INT", script: "sh -c 'kill -INT $$'; echo $?", stdout: "130\n"},
		{name: "killed job waited", script: "sleep 10 & kill -9 $!; wait $!; echo $?", stdout: "137\n", stderr: "Killed\n"},
		{name: "killed last command", script: "sh -c 'kill $$'", status: 143},
		{name: "path searched again", script: `hi; PATH=/opt/bin:/bin; hi`, files: map[string]string{"/opt/bin/hi": "#!/bin/sh\necho hi\n"}, stdout: "hi\n", stderr: "/bin/sh: hi: not found\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := newTestFS(t)
			_ = fs.MkdirAll("/tmp", 0o777, 0, 0)
			for p, c := range tc.files {
				_ = fs.MkdirAll(p[:strings.LastIndex(p, "/")], 0o755, 0, 0)
				if err := fs.WriteFile(p, []byte(c), 0o755, false, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			r := start(t, fs, "/bin/sh", "-c", tc.script)
			r.until(time.Hour)
			if !r.exited {
				t.Fatalf("still running; stdout %q stderr %q", r.out.buf.String(), r.err.buf.String())
			}
			if got := r.out.buf.String(); got != tc.stdout {
				t.Errorf("stdout = %q, want %q", got, tc.stdout)
			}
			if got := r.err.buf.String(); got != tc.stderr {
				t.Errorf("stderr = %q, want %q", got, tc.stderr)
			}
			if r.status != tc.status {
				t.Errorf("status = %d, want %d", r.status, tc.status)
			}
		})
	}
}

// A command is looked up again once the filesystem changed: one made (or removed) while
// the loop sleeps is found (or missed) at its next turn, however often it was looked up.
func TestPathSearchFollowsChanges(t *testing.T) {
	fs := newTestFS(t)
	r := start(t, fs, "/bin/sh", "-c", "for i in 1 2 3; do hi; sleep 1; done")
	r.until(500 * time.Millisecond)
	mustProgram(t, fs, "/bin/hi", "echo")
	r.until(1500 * time.Millisecond)
	if err := fs.Remove("/bin/hi", false); err != nil {
		t.Fatal(err)
	}
	r.until(time.Hour)
	if got, want := r.out.buf.String(), "\n"; got != want { // hi runs echo, without arguments
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := r.err.buf.String(), "/bin/sh: hi: not found\n/bin/sh: hi: not found\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}

func TestSleepLoopOnVirtualClock(t *testing.T) {
	r := start(t, newTestFS(t), "sh", "-c", "while true; do echo tick; sleep 5; done")
	r.until(12 * time.Second)
	want := []string{"0s tick\n", "5s tick\n", "10s tick\n"}
	if fmt.Sprint(r.out.log) != fmt.Sprint(want) {
		t.Errorf("log = %q, want %q", r.out.log, want)
	}
	// Asleep, it waits for nothing but its clock: the next due instant is its wake-up.
	if next := r.m.NextDue(); next != int64(15*time.Second) {
		t.Errorf("next due = %v, want 15s", time.Duration(next))
	}
	if r.m.Busy() {
		t.Error("a sleeping loop is reported busy")
	}
}

// TestWaitedChildrenAreReaped: a child the shell waited for is forgotten, as wait(2) reaps
// it; one nobody waited for stays a zombie while its parent lives. A loop that runs a
// command at every turn holds no more processes at its hundredth turn than at its first.
func TestWaitedChildrenAreReaped(t *testing.T) {
	for _, tt := range []struct {
		name, script string
		procs        int // after 100 s: the shell and the zombies
	}{
		{"foreground command", "while true; do /bin/echo x >/dev/null; sleep 1; done", 1},
		{"pipeline", "while true; do /bin/echo x | /bin/cat >/dev/null; sleep 1; done", 1},
		{"command substitution", "while true; do x=$(/bin/echo x); sleep 1; done", 1},
		{"background job waited for", "while true; do /bin/echo x >/dev/null & wait; sleep 1; done", 1},
		{"background jobs collected at a foreground wait", "/bin/echo x >/dev/null & /bin/echo y >/dev/null & while true; do /bin/echo z >/dev/null; sleep 1; done", 1},
		{"background jobs never waited for", "/bin/echo x >/dev/null & /bin/echo y >/dev/null & exec /bin/sleep 1000", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, newTestFS(t), "sh", "-c", tt.script)
			r.until(100 * time.Second)
			if got := len(r.m.procs); got != tt.procs || r.m.Running() != 1 {
				t.Errorf("after 100 s: %d processes (%d running), want %d (1 running)", got, r.m.Running(), tt.procs)
			}
		})
	}
}

// TestExecReplacesTheShell: exec gives the process to the program, as execve does: the
// shell's EXIT trap does not run, and the memory its variables held is given back; in a
// subshell of the same process ( ( ), $( ) ), exec replaces only the subshell.
func TestExecReplacesTheShell(t *testing.T) {
	for _, tt := range []struct {
		name, script, stdout string
	}{
		{"no EXIT trap", "trap 'echo trap' EXIT; exec /bin/echo replaced", "replaced\n"},
		{"subshell", "(exec /bin/echo sub); echo after", "sub\nafter\n"},
		{"command substitution", "x=$(exec /bin/echo a); echo $x", "a\n"},
		{"redirection stays", "exec /bin/echo hidden >/o; echo never", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, newTestFS(t), "sh", "-c", tt.script)
			r.until(time.Minute)
			if r.out.buf.String() != tt.stdout || !r.exited || r.status != 0 {
				t.Errorf("stdout %q, exited %v with %d; want %q and 0", r.out.buf.String(), r.exited, r.status, tt.stdout)
			}
		})
	}

	t.Run("memory given back", func(t *testing.T) {
		workers := NewWorkers()
		t.Cleanup(workers.Close)
		g := memcg.NewRoot(0).NewGroup(0, 0, nil)
		m := NewMachine(Config{FS: newTestFS(t), Programs: func(n string) Program { return testPrograms[n] }, Workers: workers, Memory: g})
		script := "big=$(/bin/echo " + strings.Repeat("x", 100000) + "); exec /bin/sleep 100"
		if _, err := m.Start(Spec{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=/bin"}, Stdout: &discard{}, Stderr: &discard{}}); err != nil {
			t.Fatal(err)
		}
		m.Step(0)
		if g.Peak() < 100000 || g.Used() > 10000 {
			t.Errorf("the shell's variable: peak %d B, %d B still charged once it exec'd sleep; want a peak over 100000 and all but a little given back", g.Peak(), g.Used())
		}
	})
}

// An expansion's copy is charged while it is made and given back after: a loop that
// expands a big variable a thousand times holds one copy at most, not a thousand.
func TestExpansionsDoNotAccumulateCharges(t *testing.T) {
	for _, word := range []string{`"$big"`, `"<$big>"`, `$big`, `"${big}"x`} {
		t.Run(word, func(t *testing.T) {
			workers := NewWorkers()
			t.Cleanup(workers.Close)
			g := memcg.NewRoot(0).NewGroup(0, 0, nil)
			m := NewMachine(Config{FS: newTestFS(t), Programs: func(n string) Program { return testPrograms[n] }, Workers: workers, Memory: g})
			script := "big=$(/bin/echo " + strings.Repeat("x", 100000) + "); i=0; while [ $i -lt 1000 ]; do : " + word + "; i=$((i+1)); done; /bin/sleep 100"
			exited := -1
			if _, err := m.Start(Spec{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=/bin"}, Stdout: &discard{}, Stderr: &discard{},
				OnExit: func(status int) { exited = status }}); err != nil {
				t.Fatal(err)
			}
			for now := int64(0); now < int64(time.Minute); now += int64(time.Second) {
				m.Step(now)
			}
			if exited != -1 {
				t.Fatalf("the shell exited with %d before its sleep: its charges grew past what the group allows", exited)
			}
			if g.Peak() > 1<<20 {
				t.Errorf("peak %d B after a thousand expansions of a 100 kB variable: want one or two copies charged at a time", g.Peak())
			}
		})
	}
}

func TestSignals(t *testing.T) {
	tests := []struct {
		name, script string
		stdout       string
		status       int
	}{
		{name: "no trap dies of SIGTERM", script: "sleep 100", status: 143},
		{name: "trap runs and exits", script: "trap 'echo term; exit 0' TERM; while true; do sleep 1; done", stdout: "term\n", status: 0},
		{name: "wait is interrupted by a trapped signal", script: "trap 'echo got' TERM; sleep 100 & wait; echo after $?", stdout: "got\nafter 143\n", status: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, newTestFS(t), "sh", "-c", tc.script)
			r.until(2 * time.Second)
			r.m.Signal(1, SIGTERM)
			r.until(10 * time.Second)
			if !r.exited {
				t.Fatalf("still running; stdout %q", r.out.buf.String())
			}
			if got := r.out.buf.String(); got != tc.stdout || r.status != tc.status {
				t.Errorf("stdout %q status %d, want %q %d", got, r.status, tc.stdout, tc.status)
			}
		})
	}
}

func TestRunawayPrograms(t *testing.T) {
	t.Run("busy loop is preempted", func(t *testing.T) {
		r := start(t, newTestFS(t), "sh", "-c", "while :; do :; done")
		next := r.m.Step(0)
		if r.exited || !r.m.Busy() || next != int64(Quantum) {
			t.Fatalf("exited %v busy %v next %v: want a preempted loop due in a quantum", r.exited, r.m.Busy(), time.Duration(next))
		}
		r.m.Signal(1, SIGKILL)
		r.m.Step(next)
		if !r.exited || r.status != 137 {
			t.Errorf("exited %v status %d, want killed (137)", r.exited, r.status)
		}
	})
	t.Run("fork bomb meets the process limit", func(t *testing.T) {
		r := start(t, newTestFS(t), "sh", "-c", `b() { b | b & }; b; sleep 1; echo alive`)
		r.until(time.Minute)
		if !strings.Contains(r.err.buf.String(), "can't fork") {
			t.Errorf("stderr %q does not say the fork failed", r.err.buf.String())
		}
		if n := r.m.Running(); n > DefaultMaxProcs {
			t.Errorf("%d processes, over the limit %d", n, DefaultMaxProcs)
		}
		r.m.KillAll()
	})
}

// TestWriteToAnotherProcessStreams: a second process (a hook, an exec) writing to
// /proc/1/fd/1 and /proc/1/fd/2 writes to the main process's stdout and stderr (the
// container's log); a process that is not there, or has exited, has no such file.
func TestWriteToAnotherProcessStreams(t *testing.T) {
	r := start(t, newTestFS(t), "sh", "-c", "sleep 100")
	r.until(time.Second)
	hook := &output{m: r.m}
	done := false
	if _, err := r.m.Start(Spec{Argv: []string{"sh", "-c", "echo to-log >> /proc/1/fd/1; echo to-err > /proc/1/fd/2; echo x > /proc/9/fd/1"},
		Env: []string{"PATH=/bin"}, Stdout: hook, Stderr: hook, OnExit: func(int) { done = true }}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && !done; i++ {
		r.m.Step(r.now)
	}
	if got := r.out.buf.String(); got != "to-log\n" {
		t.Errorf("the main process's stdout got %q, want the hook's line", got)
	}
	if got := r.err.buf.String(); got != "to-err\n" {
		t.Errorf("the main process's stderr got %q", got)
	}
	if got := hook.buf.String(); !strings.Contains(got, "can't create /proc/9/fd/1") {
		t.Errorf("writing to a process that is not there: %q, want an error", got)
	}
}
