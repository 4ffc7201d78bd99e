package shell

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

func coroutines(m *Machine) int { return m.Coroutines() }

// TestParkedShellsGoOnAsIfTheyHadWaited runs each script twice, once with processes
// parking while they sleep and once with every process kept on its coroutine, and
// requires the same output at the same instants, the same status and the same end: a
// parked shell resumes exactly where it was, with its variables, loop counters,
// redirections and functions' parameters. It also checks which scripts park (hold no
// coroutine while asleep at 1.5s) and which cannot.
func TestParkedShellsGoOnAsIfTheyHadWaited(t *testing.T) {
	tests := []struct {
		name, script string
		parks        bool // asleep at 1.5s without a coroutine
		stderr       bool // writes to stderr
	}{
		{name: "while", script: `i=0; while [ $i -lt 3 ]; do i=$((i+1)); echo $i; sleep 1; done; echo done $i`, parks: true},
		{name: "while in condition", script: `i=0; while sleep 1; [ $i -lt 2 ]; do i=$((i+1)); echo $i; done; echo done`, parks: true},
		{name: "while status", script: `i=0; while sleep 1 && [ $i -lt 2 ]; do i=$((i+1)); (exit 5); done; echo $?`, parks: true},
		{name: "case tests on", script: `case bb in b*) sleep 1;;& a*) echo no;; *b) echo yes;; esac`, parks: true},
		{name: "until", script: `n=0; until [ $n = 3 ]; do sleep 1; n=$((n+1)); done; echo $n`, parks: true},
		{name: "for", script: `for x in a "b c" d; do echo "<$x>"; sleep 1; echo "after $x"; done; echo "end $x"`, parks: true},
		{name: "for over params", script: `set -- p q; for x; do sleep 1; echo $x $#; done`, parks: true},
		{name: "c for", script: `for ((i=0;i<3;i++)); do sleep 1; echo $i; done; echo $i`, parks: true},
		{name: "if", script: `if sleep 1; then echo yes; fi; if false; then :; elif sleep 1 && false; then echo no; else sleep 1; echo else; fi`, parks: true},
		{name: "if in branch", script: `if true; then echo a; sleep 1; echo b; fi; echo $?`, parks: true},
		{name: "case", script: `case b in a) echo a;; b) sleep 1; echo b;& c) sleep 1; echo c;;& *) echo any; sleep 1;; esac; echo end`, parks: true},
		{name: "function", script: `f() { local x=$1; sleep 1; echo "f $x $1 $#"; return 3; }; x=outer; f one two; echo "$? $x $#"`, parks: true},
		{name: "recursion", script: `f() { if [ $1 -gt 0 ]; then sleep 1; f $(($1-1)); echo back $1; fi; }; f 3; echo $#`, parks: true},
		{name: "assignment before a function", script: `g() { sleep 1; echo "in g X=$X"; }; X=2 g; echo "after X=${X-unset}"`, parks: true},
		{name: "assignment before sleep", script: `Y=1 sleep 1; echo "Y=${Y-unset}"`, parks: true},
		{name: "redirected block", script: `{ echo a; sleep 1; echo b; } > /tmp/out; echo c; cat /tmp/out`, parks: true},
		{name: "redirected loop", script: `for i in 1 2; do echo $i; sleep 1; done > /tmp/o 2>&1; cat /tmp/o`, parks: true},
		{name: "negation and errexit", script: `set -e; ! sleep 1; echo survived; sleep 1 || true; echo ok; false; echo never`, parks: true},
		{name: "and or", script: `sleep 1 && echo and || echo or; false || sleep 1; echo $?; true && sleep 1 && echo both`, parks: true},
		{name: "nested break continue", script: `for i in 1 2; do for j in a b c; do sleep 1; [ $j = b ] && continue 2; echo $i$j; done; done; echo out`, parks: true},
		{name: "break from while", script: `while :; do sleep 1; break; echo never; done; echo out`, parks: true},
		{name: "exit status", script: `sleep 1; exit 3`, parks: true},
		{name: "exit trap", script: `trap 'echo bye $?' EXIT; sleep 1; echo hi; (exit 4)`, parks: true},
		{name: "clock and random", script: `RANDOM=7; sleep 2; echo $SECONDS $RANDOM`, parks: true},
		{name: "xtrace", script: `set -x; sleep 1; echo traced`, parks: true, stderr: true},
		{name: "brace group", script: `{ sleep 1; echo in; }; echo out`, parks: true},
		{name: "time", script: `time sleep 2; echo timed`, stderr: true},
		{name: "eval", script: `eval 'sleep 2; echo evaluated'; echo after`},
		{name: "command substitution", script: `x=$(sleep 2; echo sub); echo "got $x"`},
		{name: "subshell", script: `( sleep 2; echo sub ); echo after`},
		{name: "pipeline", script: `sleep 2 | cat; echo piped`},
		{name: "background", script: `sleep 2 & wait; echo waited`, parks: true},
		{name: "wait for one", script: `sleep 3 & a=$!; sleep 2 & wait $!; echo "$? first"; wait $a; echo "$? second"; wait; echo $?`, parks: true},
		{name: "wait for what ended", script: `sleep 1 & sleep 2; wait $!; echo $?; wait 12345; echo $?`, parks: true},
		{name: "background parks too", script: `sleep 2 & { sleep 1; echo bg; sleep 1; } & i=0; while [ $i -lt 3 ]; do sleep 1; i=$((i+1)); done; echo fg`, parks: true},
		{name: "pipeline's commands park", script: `{ sleep 2; echo a; sleep 1; echo b; } | { sleep 3; cat; }; echo piped`},
		{name: "exit in a background job", script: `{ sleep 1; exit 3; } & sleep 2; wait $!; echo $?`, parks: true},
		{name: "exit while waiting", script: `{ sleep 2; exit 4; } & wait $!; echo $?`, parks: true},
		{name: "trapped signal", script: `trap 'echo usr1' USR1; sleep 2; echo slept`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			type outcome struct {
				stdout, stderr []string
				status         int
				end            time.Duration
			}
			runWith := func(neverPark bool) (outcome, int) {
				fs := newTestFS(t)
				if err := fs.MkdirAll("/tmp", 0o1777, 0, 0); err != nil {
					t.Fatal(err)
				}
				r := start(t, fs, "sh", "-c", tc.script)
				r.m.neverPark = neverPark
				r.until(1500 * time.Millisecond)
				asleep := coroutines(r.m)
				r.until(time.Minute)
				if !r.exited {
					t.Fatalf("neverPark=%v: still running; stdout %q", neverPark, r.out.buf.String())
				}
				if len(r.err.log) > 0 && !tc.stderr {
					t.Errorf("neverPark=%v: stderr %q", neverPark, r.err.log)
				}
				return outcome{r.out.log, r.err.log, r.status, time.Duration(r.now)}, asleep
			}
			want, _ := runWith(true)
			got, asleep := runWith(false)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("parking changed what the script does:\n got %+v\nwant %+v", got, want)
			}
			if parked := asleep == 0; parked != tc.parks {
				t.Errorf("coroutines while asleep = %d; want parked %v", asleep, tc.parks)
			}
		})
	}
}

// TestParkedProcessSignals: a parked process dies of a signal it does not trap as one
// asleep on its coroutine does, and a shell parked in its loop is killed outright.
func TestParkedProcessSignals(t *testing.T) {
	tests := []struct {
		name   string
		argv   []string
		sig    int
		status int
	}{
		{name: "sleep as the program", argv: []string{"sleep", "100"}, sig: SIGTERM, status: 143},
		{name: "shell loop", argv: []string{"sh", "-c", "while true; do sleep 1; done"}, sig: SIGTERM, status: 143},
		{name: "shell loop killed", argv: []string{"sh", "-c", "while true; do echo x; sleep 5; done"}, sig: SIGKILL, status: 137},
		{name: "waiting shell", argv: []string{"sh", "-c", "sleep 1000 & wait"}, sig: SIGTERM, status: 143},
		{name: "waiting shell with a trap", argv: []string{"sh", "-c", "trap 'echo bye; exit 0' TERM; sleep 1000 & wait; echo never"}, sig: SIGTERM, status: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, newTestFS(t), tc.argv...)
			r.until(1500 * time.Millisecond)
			if n := coroutines(r.m); n != 0 {
				t.Fatalf("%d coroutines while asleep, want 0 (parked)", n)
			}
			r.m.Signal(1, tc.sig)
			r.until(10 * time.Second)
			if !r.exited || r.status != tc.status {
				t.Errorf("exited %v status %d, want %d", r.exited, r.status, tc.status)
			}
		})
	}
	t.Run("KillAll", func(t *testing.T) {
		r := start(t, newTestFS(t), "sh", "-c", "while true; do sleep 1; done")
		r.until(1500 * time.Millisecond)
		r.m.KillAll()
		if !r.exited || r.status != 137 {
			t.Errorf("exited %v status %d, want 137", r.exited, r.status)
		}
	})
}

// TestWorkersServeManyMachines: a hundred machines whose loops wake in turn share a few
// workers, no goroutine is left for a machine asleep, and Close ends the idle ones.
func TestWorkersServeManyMachines(t *testing.T) {
	base := runtime.NumGoroutine()
	workers := NewWorkers()
	var ms []*Machine
	for range 100 {
		m := NewMachine(Config{FS: newTestFS(t), Programs: func(n string) Program { return testPrograms[n] }, Workers: workers})
		if _, err := m.Start(Spec{Argv: []string{"sh", "-c", "while true; do echo tick; sleep 5; done"}, Env: []string{"PATH=/bin"}, Stdout: &discard{}, Stderr: &discard{}}); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	for now := int64(0); now <= int64(20*time.Second); now += int64(5 * time.Second) {
		for _, m := range ms {
			m.Step(now)
		}
		if n := runtime.NumGoroutine() - base; n > maxIdleWorkers {
			t.Fatalf("at %v: %d goroutines for 100 sleeping machines, want at most %d idle workers", time.Duration(now), n, maxIdleWorkers)
		}
	}
	for _, m := range ms {
		if m.Running() != 1 || coroutines(m) != 0 {
			t.Fatalf("running %d, coroutines %d: want one process, parked", m.Running(), coroutines(m))
		}
	}
	workers.Close()
	// (A goroutine of an earlier test still ending can only make the count lower.)
	if n := runtime.NumGoroutine() - base; n > 0 {
		t.Errorf("%d goroutines left after Close", n)
	}
	for _, m := range ms {
		m.KillAll()
	}
}
