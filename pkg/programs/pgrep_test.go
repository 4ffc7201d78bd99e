package programs

import (
	"testing"
)

// sh is a case that runs script with sh -c (pid 1; its first child is pid 2).
func sh(name, script, stdout, stderr string, status int) tc {
	return tc{name: name, argv: []string{"sh", "-c", script}, setup: withSh, stdout: stdout, stderr: stderr, status: status}
}

// pgrep, pkill and killall look at the container's processes: two sleeps in the
// background are pids 2 and 3.
func TestPgrepPkillKillall(t *testing.T) {
	bg := "sleep 100 & sleep 200 & "
	signals := " 1) HUP\n 2) INT\n 3) QUIT\n 4) ILL\n 5) TRAP\n 6) ABRT\n 7) BUS\n 8) FPE\n 9) KILL\n10) USR1\n11) SEGV\n12) USR2\n13) PIPE\n14) ALRM\n15) TERM\n16) STKFLT\n17) CHLD\n18) CONT\n19) STOP\n20) TSTP\n21) TTIN\n22) TTOU\n23) URG\n24) XCPU\n25) XFSZ\n26) VTALRM\n27) PROF\n28) WINCH\n29) POLL\n30) PWR\n31) SYS\n34) RTMIN\n64) RTMAX\n"
	runCases(t, []tc{
		sh("pgrep", bg+"pgrep sleep", "2\n3\n", "", 0),
		sh("pgrep -l", bg+"pgrep -l 'sl.*p'", "2 sleep\n3 sleep\n", "", 0),
		sh("pgrep -f", bg+"pgrep -f '^sleep 2'", "3\n", "", 0),
		sh("pgrep -a", bg+"pgrep -a ^sleep", "2 sleep 100\n3 sleep 200\n", "", 0),
		sh("pgrep -fl", bg+"pgrep -fl '^sleep 1'", "2 sleep\n", "", 0),
		sh("pgrep -x", bg+"pgrep -x slee; echo $?; pgrep -x sleep", "1\n2\n3\n", "", 0),
		sh("pgrep -n -o", bg+"pgrep -n sleep; pgrep -o sleep", "3\n2\n", "", 0),
		sh("pgrep -v", bg+"pgrep -v sleep", "1\n", "", 0),
		sh("pgrep -P", bg+"pgrep -P 1", "2\n3\n", "", 0),
		sh("pgrep -P no pattern needed", bg+"pgrep -P 2; echo $?", "1\n", "", 0),
		sh("pgrep none", "pgrep nosuchprocess; echo $?", "1\n", "", 0),
		sh("pgrep not itself", "pgrep pgrep; echo $?", "1\n", "", 0),
		{name: "pgrep no pattern", argv: []string{"pgrep"}, stderr: usage("pgrep"), status: 1},
		{name: "pgrep two patterns", argv: []string{"pgrep", "a", "b"}, stderr: usage("pgrep"), status: 1},
		{name: "pgrep bad regex", argv: []string{"pgrep", "a("}, stderr: "pgrep: bad regex 'a(': Invalid regular expression\n", status: 1},
		sh("pkill", bg+"pkill -n sleep; wait $!; pgrep sleep", "2\n", "Terminated\n", 0),
		sh("pkill -SIGNAL", "sleep 100 & a=$!; sleep 200 & pkill -KILL -f '^sleep 1'; wait $a; echo $?", "137\n", "Killed\n", 0),
		sh("pkill -e", bg+"pkill -e -x sleep; wait; pgrep sleep; echo $?", "sleep killed (pid 2)\nsleep killed (pid 3)\n1\n", "", 0),
		sh("pkill none", "pkill nosuch; echo $?", "1\n", "", 0),
		{name: "pkill -l", argv: []string{"pkill", "-l"}, stdout: signals},
		sh("killall", bg+"killall sleep; wait; pgrep sleep; echo $?", "1\n", "", 0),
		sh("killall -9", bg+"killall -9 sleep; wait $!; echo $?", "137\n", "Killed\n", 0),
		sh("killall -s", bg+"killall -s INT sleep; wait $!; echo $?", "130\n", "", 0),
		sh("killall none", "killall nosuch other; echo $?", "2\n", "killall: nosuch: no process killed\nkillall: other: no process killed\n", 0),
		sh("killall -q", "killall -q nosuch; echo $?", "1\n", "", 0),
		{name: "killall -q alone", argv: []string{"killall", "-q"}, stderr: usage("killall"), status: 1},
		{name: "killall nobody", argv: []string{"killall"}, stderr: "killall: you need to specify whom to kill\n", status: 1},
		{name: "killall bad signal", argv: []string{"killall", "-FOO", "x"}, stderr: "killall: bad signal name 'FOO'\n", status: 1},
		{name: "killall -l", argv: []string{"killall", "-l"}, stdout: signals},
		{name: "killall -l names", argv: []string{"killall", "-l", "9", "TERM"}, stdout: "KILL\n15\n"},
	})
}
