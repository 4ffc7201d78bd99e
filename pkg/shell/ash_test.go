package shell

import "testing"

// What test/difftest found different from busybox's ash, each as busybox 1.35 prints it.
func TestAshBehaviours(t *testing.T) {
	tests := []struct {
		name, script, stdout, stderr string
		status                       int
	}{
		{name: "set -e spares a list stopped early", script: `set -e; false && echo no; echo still`, stdout: "still\n"},
		{name: "set -e ends at a list's last command", script: `set -e; true && false; echo no`, status: 1},
		{name: "<<- strips leading tabs", script: "cat <<-EOT\n\ttabbed\n\t\ttwice\n\tEOT\n", stdout: "tabbed\ntwice\n"},
		{name: "${x:?message}", script: `unset u; echo "${u:?is missing}"; echo not reached`, stderr: "sh: u: is missing\n", status: 2},
		{name: "set -u", script: `set -u; echo $nope; echo not reached`, stderr: "sh: nope: parameter not set\n", status: 2},
		{name: "set -x traces assignments", script: `set -x; y=2`, stderr: "+ y=2\n"},
		{name: "shift past the end", script: `set -- a; shift 2; echo $?`, stdout: "1\n"},
		{name: "shift a non-number", script: `shift x; echo not reached`, stderr: "sh: shift: line 0: Illegal number: x\n", status: 2},
		{name: "a builtin's error names its line", script: "echo\nf() {\n cd /nope\n}\nf", stdout: "\n", stderr: "sh: cd: line 2: can't cd to /nope: No such file or directory\n", status: 2},
		{name: "eval counts from its line", script: "echo\neval 'echo; cd /nope'", stdout: "\n\n", stderr: "sh: cd: line 1: can't cd to /nope: No such file or directory\n", status: 2},
		{name: "exec names itself", script: "exec nosuch", stderr: "sh: exec: line 0: nosuch: not found\n", status: 127},
		{name: "set -C", script: `set -C; echo a > /tmp/nc; echo b > /tmp/nc; echo $?; echo c >| /tmp/nc; cat /tmp/nc`, stdout: "1\nc\n", stderr: "sh: can't create /tmp/nc: File exists\n"},
		{name: "divide by zero", script: `echo $((1/0)); echo not reached`, stderr: "sh: divide by zero\n", status: 2},
		{name: "input from a missing file", script: `cat < /nope; echo $?`, stdout: "1\n", stderr: "sh: can't open /nope: no such file\n"},
		{name: "output to a missing directory", script: `echo x > /nope/f; echo $?`, stdout: "1\n", stderr: "sh: can't create /nope/f: nonexistent directory\n"},
		{name: "break outside a loop", script: `break; echo $?`, stdout: "0\n"},
		{name: "break more loops than there are", script: `for i in 1 2; do for j in a b; do echo $i$j; break 5; done; done; echo end`, stdout: "1a\nend\n"},
		{name: "continue in a while", script: `i=0; while [ $i -lt 3 ]; do i=$((i+1)); [ $i = 2 ] && continue; echo $i; done`, stdout: "1\n3\n"},
		{name: "set -o pipefail", script: `set -o pipefail; false | true; echo $?`, stdout: "1\n"},
		{name: "local outside a function", script: `local x=1; echo no`, stderr: "sh: local: line 0: not in a function\n", status: 2},
		{name: "no here-strings", script: "echo a\necho b; read w <<< x\necho c", stdout: "a\n", stderr: "sh: syntax error: unexpected redirection\n", status: 2},
		{name: "getopts' words", script: `getopts a o -x; OPTIND=1; getopts f: o -f`, stderr: "Illegal option -x\nNo arg for -f option\n"},
		{name: "wait for a job done earlier", script: `(exit 3) & a=$!; (sleep 1; exit 5) & b=$!; wait $b; wait $a; echo $?`, stdout: "3\n"},
		{name: "set -x quotes as ash", script: `set -x; echo in "a b" it\'s`, stdout: "in a b it's\n", stderr: "+ echo 'in' 'a b' 'it'\"'\"'s'\n"},
		{name: "umask", script: `umask; umask 077; umask; umask -S; umask g=rx; umask`, stdout: "0022\n0077\nu=rwx,g=,o=\n0027\n"},
		{name: "trap lists by signal number", script: `trap 'echo i' INT; trap 'echo h' HUP; trap : EXIT; trap`, stdout: "trap -- ':' EXIT\ntrap -- 'echo h' HUP\ntrap -- 'echo i' INT\n"},
		{name: "job specs", script: `sleep 10 & sleep 10 & kill %2; wait %2; echo $?; kill %1; wait; kill %3; echo $?`, stdout: "143\n2\n", stderr: "Terminated\nsh: kill: line 0: %3: no such job\n"},
		{name: "read -p prompts a terminal only", script: `echo a | { read -p 'q? ' v; echo $v; }`, stdout: "a\n"},
		{name: "command -v", script: `command -v echo; command -v cat; command -v nosuch; echo $?`, stdout: "echo\n/bin/cat\n127\n"},
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
