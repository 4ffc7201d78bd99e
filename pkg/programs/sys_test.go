package programs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// usage is what busybox prints for a bad option or a missing operand.
func usage(applet string) string {
	return banner + usageText(applet) + "\n"
}

func TestEchoPrintf(t *testing.T) {
	runCases(t, []tc{
		{name: "echo", argv: []string{"echo", "hello", "world"}, stdout: "hello world\n"},
		{name: "echo path", argv: []string{"/bin/echo", "x"}, stdout: "x\n"},
		{name: "echo -n", argv: []string{"echo", "-n", "x"}, stdout: "x"},
		{name: "echo -e", argv: []string{"echo", "-e", `a\tb\x41\0101\c ignored`}, stdout: "a\tbAA"},
		{name: "echo -ne", argv: []string{"echo", "-ne", `a\nb`}, stdout: "a\nb"},
		{name: "echo no escapes", argv: []string{"echo", `a\tb`}, stdout: "a\\tb\n"},
		{name: "echo not an option", argv: []string{"echo", "-x", "y"}, stdout: "-x y\n"},
		{name: "echo --help", argv: []string{"echo", "--help"}, stdout: "--help\n"},
		{name: "echo nothing", argv: []string{"echo"}, stdout: "\n"},
		{name: "printf reuses format", argv: []string{"printf", "%s-%d\n", "a", "1", "b", "2"}, stdout: "a-1\nb-2\n"},
		{name: "printf conversions", argv: []string{"printf", "%5.2f|%-4s|%x|%o|%c|%05d|%+d\n", "3.14159", "ab", "255", "8", "xyz", "42", "7"},
			stdout: " 3.14|ab  |ff|10|x|00042|+7\n"},
		{name: "printf %g", argv: []string{"printf", "%g %g %e\n", "1234567", "0.5", "12345.678"}, stdout: "1.23457e+06 0.5 1.234568e+04\n"},
		{name: "printf char code and hex", argv: []string{"printf", "%d %d %i\n", "'A", "0x10", "010"}, stdout: "65 16 8\n"},
		{name: "printf negative hex", argv: []string{"printf", "%x\n", "-1"}, stdout: "ffffffffffffffff\n"},
		{name: "printf bad number", argv: []string{"printf", "%d|\n", "abc"}, stdout: "0|\n", stderr: "printf: invalid number 'abc'\n", status: 1},
		{name: "printf %b", argv: []string{"printf", "%b", `x\ny\c z`}, stdout: "x\ny"},
		{name: "printf escapes", argv: []string{"printf", `a\tb\101\n`}, stdout: "a\tbA\n"},
		{name: "printf missing args", argv: []string{"printf", "[%s][%d]\n"}, stdout: "[][0]\n"},
		{name: "printf star width", argv: []string{"printf", "[%*s]\n", "4", "a"}, stdout: "[   a]\n"},
		{name: "printf percent", argv: []string{"printf", "100%%\n"}, stdout: "100%\n"},
		{name: "printf bad format", argv: []string{"printf", "a%zq"}, stdout: "a", stderr: "printf: %zq: invalid format\n", status: 1},
		{name: "printf no format", argv: []string{"printf"}, stderr: usage("printf"), status: 1},
		{name: "printf --", argv: []string{"printf", "--", "-%s-\n", "x"}, stdout: "-x-\n"},
	})
}

func TestSleep(t *testing.T) {
	runCases(t, []tc{
		{name: "seconds", argv: []string{"sleep", "2"}, elapsed: 2 * time.Second},
		{name: "fraction", argv: []string{"sleep", "1.5"}, elapsed: 1500 * time.Millisecond},
		{name: "fraction with suffix", argv: []string{"sleep", "0.5m"}, elapsed: 30 * time.Second},
		{name: "summed with suffixes", argv: []string{"sleep", "1", "2m", "1h", "1d"}, elapsed: (1 + 120 + 3600 + 86400) * time.Second},
		{name: "zero", argv: []string{"sleep", "0"}},
		{name: "infinity", argv: []string{"sleep", "infinity"}, until: 1000 * time.Hour},
		{name: "bad number", argv: []string{"sleep", "x"}, stderr: "sleep: invalid number 'x'\n", status: 1},
		{name: "bad suffix", argv: []string{"sleep", "1x"}, stderr: "sleep: invalid number '1x'\n", status: 1},
		{name: "negative", argv: []string{"sleep", "-1"}, stderr: "sleep: invalid number '-1'\n", status: 1},
		{name: "missing operand", argv: []string{"sleep"}, stderr: usage("sleep"), status: 1},
		{name: "help", argv: []string{"sleep", "--help"}, stderr: usage("sleep")},
	})
}

func TestTrueFalseYes(t *testing.T) {
	runCases(t, []tc{
		{name: "true", argv: []string{"true", "ignored"}},
		{name: "false", argv: []string{"false"}, status: 1},
		{name: "false --help", argv: []string{"false", "--help"}, status: 1},
		// yes fills stdio's buffer and is preempted after a slice of lines: what it wrote
		// by then is whole buffers.
		{name: "yes", argv: []string{"yes"}, until: 50 * time.Millisecond, stdout: strings.Repeat("y\n", 8192)},
		{name: "yes string", argv: []string{"yes", "a", "b"}, until: 50 * time.Millisecond, stdout: strings.Repeat("a b\n", 8192)},
		{name: "pwd", argv: []string{"pwd"}, dir: "/tmp", stdout: "/tmp\n"},
		{name: "sync", argv: []string{"sync"}},
		{name: "nproc", argv: []string{"nproc"}, stdout: "2\n"},
	})
}

func TestEnv(t *testing.T) {
	runCases(t, []tc{
		{name: "env prints", argv: []string{"env"}, stdout: "PATH=/bin\nHOME=/root\n"},
		// A name given twice has its last value where it was first (putenv).
		{name: "env last of a name wins", argv: []string{"env"}, env: []string{"A=1", "B=2", "A=3"}, stdout: "A=3\nB=2\n"},
		{name: "env assignments", argv: []string{"env", "HOME=/x", "A=1"}, stdout: "PATH=/bin\nHOME=/x\nA=1\n"},
		{name: "env -i", argv: []string{"env", "-i", "A=1", "B=2", "/bin/env"}, stdout: "A=1\nB=2\n"},
		{name: "env -", argv: []string{"env", "-", "A=1"}, stdout: "A=1\n"},
		{name: "env -u", argv: []string{"env", "-u", "HOME", "env"}, stdout: "PATH=/bin\n"},
		{name: "env runs", argv: []string{"env", "HOME=/x", "printenv", "HOME"}, stdout: "/x\n"},
		{name: "env status", argv: []string{"env", "false"}, status: 1},
		{name: "env not found", argv: []string{"env", "nosuch"}, stderr: "env: can't execute 'nosuch': No such file or directory\n", status: 127},
		{name: "env not executable", argv: []string{"env", "/etc/passwd"}, stderr: "env: can't execute '/etc/passwd': Permission denied\n", status: 126},
		{name: "env -0", argv: []string{"env", "-i", "-0", "A=1", "B=2"}, stdout: "A=1\x00B=2\x00"},
		{name: "printenv all", argv: []string{"printenv"}, stdout: "PATH=/bin\nHOME=/root\n"},
		{name: "printenv names", argv: []string{"printenv", "HOME", "NOPE", "PATH"}, stdout: "/root\n/bin\n", status: 1},
	})
}

func TestIdentity(t *testing.T) {
	runCases(t, []tc{
		{name: "id", argv: []string{"id"}, stdout: "uid=0(root) gid=0(root) groups=0(root),10(wheel)\n"},
		{name: "id -u", argv: []string{"id", "-u"}, stdout: "0\n"},
		{name: "id -un", argv: []string{"id", "-un"}, stdout: "root\n"},
		{name: "id -g", argv: []string{"id", "-g"}, stdout: "0\n"},
		{name: "id -gn", argv: []string{"id", "-g", "-n"}, stdout: "root\n"},
		{name: "id -G", argv: []string{"id", "-G"}, stdout: "0 10\n"},
		{name: "id -Gn", argv: []string{"id", "-Gn"}, stdout: "root wheel\n"},
		{name: "id given groups", argv: []string{"id"}, id: shell.Identity{UID: 33, GID: 33, Groups: []int64{33, 1234}},
			stdout: "uid=33(www-data) gid=33(www-data) groups=33(www-data),1234\n"},
		{name: "id unnamed", argv: []string{"id"}, id: shell.Identity{UID: 1000, GID: 1000}, stdout: "uid=1000 gid=1000 groups=1000\n"},
		{name: "id -un unnamed", argv: []string{"id", "-un"}, id: shell.Identity{UID: 1000, GID: 1000},
			stdout: "1000\n", stderr: "id: unknown ID 1000\n", status: 1},
		{name: "id user", argv: []string{"id", "www-data"}, stdout: "uid=33(www-data) gid=33(www-data) groups=33(www-data)\n"},
		{name: "id unknown user", argv: []string{"id", "nosuch"}, stderr: "id: unknown user nosuch\n", status: 1},
		{name: "id -n alone", argv: []string{"id", "-n"}, stderr: usage("id"), status: 1},
		{name: "id bad option", argv: []string{"id", "-q"}, stderr: "id: invalid option -- 'q'\n" + usage("id"), status: 1},
		{name: "whoami", argv: []string{"whoami"}, stdout: "root\n"},
		{name: "whoami unnamed", argv: []string{"whoami"}, id: shell.Identity{UID: 1000, GID: 1000}, stderr: "whoami: unknown uid 1000\n", status: 1},
		{name: "no passwd", argv: []string{"id"}, id: shell.Identity{UID: 0, GID: 0, Groups: []int64{0}},
			setup: func(v *vfs.View, _ func(time.Time)) { v.Remove("/etc/passwd", false); v.Remove("/etc/group", false) }, stdout: "uid=0 gid=0 groups=0\n"},
	})
}

func TestHostUname(t *testing.T) {
	runCases(t, []tc{
		{name: "hostname", argv: []string{"hostname"}, stdout: "pod-1\n"},
		{name: "hostname -s", argv: []string{"hostname", "-s"}, stdout: "pod-1\n"},
		{name: "hostname -i", argv: []string{"hostname", "-i"}, stdout: "10.244.0.7\n"},
		{name: "hostname -f", argv: []string{"hostname", "-f"}, stdout: "pod-1.sub.ns.svc.cluster.local\n"},
		{name: "hostname -d", argv: []string{"hostname", "-d"}, stdout: "sub.ns.svc.cluster.local\n"},
		{name: "hostname -i unresolved", argv: []string{"hostname", "-i"}, setup: func(v *vfs.View, _ func(time.Time)) { v.Remove("/etc/hosts", false) },
			stderr: "hostname: pod-1: Unknown host\n", status: 1},
		{name: "hostname set", argv: []string{"hostname", "other"}, stderr: "hostname: sethostname: Operation not permitted\n", status: 1},
		{name: "uname", argv: []string{"uname"}, stdout: "Linux\n"},
		{name: "uname -n", argv: []string{"uname", "-n"}, stdout: "pod-1\n"},
		{name: "uname -r", argv: []string{"uname", "-r"}, stdout: kernelRelease + "\n"},
		{name: "uname -snm", argv: []string{"uname", "-snm"}, stdout: "Linux pod-1 x86_64\n"},
		{name: "uname -p", argv: []string{"uname", "-p"}, stdout: "unknown\n"},
		{name: "uname -a", argv: []string{"uname", "-a"}, stdout: "Linux pod-1 " + kernelRelease + " " + kernelVersion + " x86_64 GNU/Linux\n"},
		{name: "uname --machine", argv: []string{"uname", "--machine"}, stdout: "x86_64\n"},
		{name: "uname operand", argv: []string{"uname", "x"}, stderr: usage("uname"), status: 1},
	})
}

func TestDate(t *testing.T) {
	runCases(t, []tc{
		{name: "default", argv: []string{"date"}, stdout: "Tue Mar  5 14:07:09 UTC 2024\n"},
		{name: "-u format", argv: []string{"date", "-u", "+%Y-%m-%dT%H:%M:%SZ"}, stdout: "2024-03-05T14:07:09Z\n"},
		{name: "epoch seconds", argv: []string{"date", "+%s"}, stdout: fmt.Sprint(epoch.Unix(), "\n")},
		{name: "directives", argv: []string{"date", "+%a %A %b %B %e %j %T %F %D %Z %z %N %3N %y %H%M%S %I %p %u %w %%"},
			stdout: "Tue Tuesday Mar March  5 065 14:07:09 2024-03-05 03/05/24 UTC +0000 000000000 000 24 140709 02 PM 2 2 %\n"},
		{name: "padding flags", argv: []string{"date", "+%-d|%_m|%-H"}, stdout: "5| 3|14\n"},
		{name: "-d @N", argv: []string{"date", "-d", "@0"}, stdout: "Thu Jan  1 00:00:00 UTC 1970\n"},
		{name: "-d datetime", argv: []string{"date", "-d", "2023-12-25 08:30", "+%F %T"}, stdout: "2023-12-25 08:30:00\n"},
		{name: "-d time today", argv: []string{"date", "-d", "09:15:30"}, stdout: "Tue Mar  5 09:15:30 UTC 2024\n"},
		{name: "-d bad", argv: []string{"date", "-d", "tomorrow"}, stderr: "date: invalid date 'tomorrow'\n", status: 1},
		{name: "-I", argv: []string{"date", "-I"}, stdout: "2024-03-05\n"},
		{name: "-Iseconds", argv: []string{"date", "-Iseconds"}, stdout: "2024-03-05T14:07:09+00:00\n"},
		{name: "-R", argv: []string{"date", "-R"}, stdout: "Tue, 05 Mar 2024 14:07:09 +0000\n"},
		{name: "-r file", argv: []string{"date", "-r", "/etc/passwd", "+%s"}, stdout: fmt.Sprint(epoch.Unix(), "\n")},
		{name: "set", argv: []string{"date", "-s", "2024-01-01"}, stdout: "Mon Jan  1 00:00:00 UTC 2024\n",
			stderr: "date: can't set date: Operation not permitted\n"},
		{name: "extra operand", argv: []string{"date", "+%s", "x", "y"}, stderr: usage("date"), status: 1},
	})
}

func TestKillPsPidof(t *testing.T) {
	runCases(t, []tc{
		{name: "kill -l", argv: []string{"kill", "-l"}, stdout: " 1) HUP\n 2) INT\n 3) QUIT\n 4) ILL\n 5) TRAP\n 6) ABRT\n 7) BUS\n 8) FPE\n" +
			" 9) KILL\n10) USR1\n11) SEGV\n12) USR2\n13) PIPE\n14) ALRM\n15) TERM\n16) STKFLT\n17) CHLD\n18) CONT\n19) STOP\n" +
			"20) TSTP\n21) TTIN\n22) TTOU\n23) URG\n24) XCPU\n25) XFSZ\n26) VTALRM\n27) PROF\n28) WINCH\n29) POLL\n30) PWR\n31) SYS\n" +
			"34) RTMIN\n64) RTMAX\n"},
		{name: "kill -l names", argv: []string{"kill", "-l", "9", "TERM", "137", "sigint"}, stdout: "KILL\n15\nKILL\n2\n"},
		{name: "kill -l unknown", argv: []string{"kill", "-l", "FOO"}, stderr: "kill: unknown signal 'FOO'\n", status: 1},
		{name: "no such process", argv: []string{"kill", "99"}, stderr: "kill: can't kill pid 99: No such process\n", status: 1},
		{name: "bad signal", argv: []string{"kill", "-s", "FOO", "1"}, stderr: "kill: bad signal name 'FOO'\n", status: 1},
		{name: "bad pid", argv: []string{"kill", "abc"}, stderr: "kill: invalid number 'abc'\n", status: 1},
		{name: "nobody", argv: []string{"kill"}, stderr: "kill: you need to specify whom to kill\n", status: 1},
		{name: "-0 probes", argv: []string{"kill", "-0", "1"}},
		{name: "itself", argv: []string{"kill", "1"}, status: 128 + shell.SIGTERM},
		{name: "itself -9", argv: []string{"kill", "-9", "1"}, status: 128 + shell.SIGKILL},
		{name: "itself -s", argv: []string{"kill", "-s", "INT", "1"}, status: 128 + shell.SIGINT},
		{name: "ps", argv: []string{"ps"}, stdout: "PID   USER     TIME  COMMAND\n    1 root      0:00 ps\n"},
		{name: "ps as nobody", argv: []string{"ps", "aux"}, id: shell.Identity{UID: 65534, GID: 65534},
			stdout: "PID   USER     TIME  COMMAND\n    1 nobody    0:00 ps aux\n"},
		{name: "ps -o", argv: []string{"ps", "-o", "pid,comm"}, stdout: "PID   COMMAND\n    1 ps\n"},
		{name: "ps -o header", argv: []string{"ps", "-o", "user=WHO,args"}, stdout: "WHO COMMAND\nroo ps -o user=WHO,args\n"},
		{name: "ps -o no header", argv: []string{"ps", "-o", "pid="}, stdout: "    1\n"},
		{name: "ps -o bad", argv: []string{"ps", "-o", "foo"},
			stderr: "ps: bad -o argument 'foo', supported arguments: user,group,comm,args,pid,ppid,pgid,etime,nice,rgroup,ruser,time,tty,vsz,sid,stat,rss\n", status: 1},
		{name: "ps -ef", argv: []string{"ps", "-ef"}, stdout: "PID   USER     TIME  COMMAND\n    1 root      0:00 ps -ef\n"},
		{name: "pidof", argv: []string{"pidof", "pidof"}, stdout: "1\n"},
		{name: "pidof none", argv: []string{"pidof", "nosuch"}, status: 1},
	})
}

// TestProcesses runs several processes on one machine: ps and pidof see them, kill ends
// one.
func TestProcesses(t *testing.T) {
	v := newFS(t, nil)
	m := shell.NewMachine(shell.Config{FS: v, Programs: Lookup, Hostname: "pod-1"})
	sleepStatus := -1
	start := func(argv []string, out *strings.Builder, status *int) {
		t.Helper()
		if _, err := m.Start(shell.Spec{Argv: argv, Env: []string{"PATH=/bin"}, Stdout: out, Stderr: out, OnExit: func(s int) { *status = s }}); err != nil {
			t.Fatal(err)
		}
	}
	var sleepOut strings.Builder
	start([]string{"/bin/sleep", "100"}, &sleepOut, &sleepStatus)
	now := epoch.UnixNano()
	m.Step(now)

	var psOut strings.Builder
	psStatus := -1
	start([]string{"ps"}, &psOut, &psStatus)
	m.Step(now)
	if want := "PID   USER     TIME  COMMAND\n    1 root      0:00 /bin/sleep 100\n    2 root      0:00 ps\n"; psOut.String() != want || psStatus != 0 {
		t.Errorf("ps: %d %q, want %q", psStatus, psOut.String(), want)
	}
	var pidofOut strings.Builder
	pidofStatus := -1
	start([]string{"pidof", "sleep"}, &pidofOut, &pidofStatus)
	m.Step(now)
	if pidofOut.String() != "1\n" || pidofStatus != 0 {
		t.Errorf("pidof sleep: %d %q", pidofStatus, pidofOut.String())
	}
	var killOut strings.Builder
	killStatus := -1
	start([]string{"kill", "-TERM", "1"}, &killOut, &killStatus)
	m.Step(now)
	m.Step(now)
	if killStatus != 0 || killOut.String() != "" {
		t.Errorf("kill: %d %q", killStatus, killOut.String())
	}
	if sleepStatus != 128+shell.SIGTERM {
		t.Errorf("sleep ended with %d, want %d", sleepStatus, 128+shell.SIGTERM)
	}
}

func TestWhichGetent(t *testing.T) {
	runCases(t, []tc{
		{name: "which", argv: []string{"which", "ls"}, stdout: "/bin/ls\n"},
		{name: "which some missing", argv: []string{"which", "nosuch", "cat"}, stdout: "/bin/cat\n", status: 1},
		{name: "which path", argv: []string{"which", "/bin/cat"}, stdout: "/bin/cat\n"},
		{name: "which not executable", argv: []string{"which", "/etc/passwd"}, status: 1},
		{name: "which -a", argv: []string{"which", "-a", "sh2"}, env: []string{"PATH=/usr/bin:/bin"},
			files:  map[string]string{"/usr/bin/sh2": "", "/bin/sh2": ""},
			setup:  func(v *vfs.View, _ func(time.Time)) { v.Chmod("/usr/bin/sh2", 0o755); v.Chmod("/bin/sh2", 0o755) },
			stdout: "/usr/bin/sh2\n/bin/sh2\n"},
		{name: "which nothing", argv: []string{"which"}, stderr: usage("which"), status: 1},
		{name: "getent hosts", argv: []string{"getent", "hosts", "pod-1"}, stdout: "10.244.0.7      pod-1.sub.ns.svc.cluster.local pod-1\n"},
		{name: "getent hosts first", argv: []string{"getent", "hosts", "localhost"}, stdout: "127.0.0.1       localhost\n"},
		{name: "getent hosts all", argv: []string{"getent", "hosts"},
			stdout: "127.0.0.1       localhost\n::1             localhost ip6-localhost\n10.244.0.7      pod-1.sub.ns.svc.cluster.local pod-1\n"},
		{name: "getent passwd", argv: []string{"getent", "passwd", "root"}, stdout: "root:x:0:0:root:/root:/bin/sh\n"},
		{name: "getent group by id", argv: []string{"getent", "group", "10"}, stdout: "wheel:x:10:root\n"},
		{name: "getent missing", argv: []string{"getent", "passwd", "nosuch"}, status: 2},
		{name: "getent unknown", argv: []string{"getent", "foo"},
			stderr: "Unknown database: foo\nTry `getent --help' or `getent --usage' for more information.\n", status: 1},
	})
}

func TestFreeDf(t *testing.T) {
	runCases(t, []tc{
		{name: "free", argv: []string{"free"}, stdout: "" +
			"              total        used        free      shared  buff/cache   available\n" +
			"Mem:        8388608      524288     6815744        4096     1048576     7864320\n" +
			"Swap:             0           0           0\n"},
		{name: "free -m", argv: []string{"free", "-m"}, stdout: "" +
			"              total        used        free      shared  buff/cache   available\n" +
			"Mem:           8192         512        6656           4        1024        7680\n" +
			"Swap:             0           0           0\n"},
		{name: "free -h", argv: []string{"free", "-h"}, stdout: "" +
			"              total        used        free      shared  buff/cache   available\n" +
			"Mem:           8.0G      512.0M        6.5G        4.0M        1.0G        7.5G\n" +
			"Swap:             0           0           0\n"},
		{name: "df", argv: []string{"df"}, stdout: "" +
			"Filesystem           1K-blocks      Used Available Use% Mounted on\n" +
			"overlay              104857600  10485760  94371840  10% /\n"},
		{name: "df -h", argv: []string{"df", "-h", "/etc"}, stdout: "" +
			"Filesystem                Size      Used Available Use% Mounted on\n" +
			"overlay                 100.0G     10.0G     90.0G  10% /\n"},
		{name: "df of a memory-backed emptyDir", argv: []string{"df", "/data"}, setup: func(v *vfs.View, _ func(time.Time)) {
			tmpfs := vfs.New(func() time.Time { return time.Unix(0, 0) })
			must(tmpfs.MkdirAll("/vol", 0o777, 0, 0))
			must(tmpfs.SetFSType("/vol", "tmpfs"))
			must(tmpfs.SetFSSize("/vol", 10<<20))
			must(tmpfs.WriteFile("/vol/f", make([]byte, 3000), 0o644, false, 0, 0))
			must(v.MkdirAll("/data", 0o755, 0, 0))
			must(v.Bind("/data", tmpfs, "/vol", false))
		}, stdout: "" +
			"Filesystem           1K-blocks      Used Available Use% Mounted on\n" +
			"tmpfs                    10240         3     10237   0% /data\n"},
		{name: "df missing", argv: []string{"df", "/nope"}, stdout: "Filesystem           1K-blocks      Used Available Use% Mounted on\n",
			stderr: "df: /nope: No such file or directory\n"},
	})
}

func TestTimeoutNohupNice(t *testing.T) {
	runCases(t, []tc{
		{name: "timeout kills", argv: []string{"timeout", "1", "sleep", "5"}, status: 128 + shell.SIGTERM, elapsed: time.Second},
		{name: "timeout -s KILL", argv: []string{"timeout", "-s", "KILL", "2", "sleep", "5"}, status: 128 + shell.SIGKILL, elapsed: 2 * time.Second},
		// timeout looks whether its command has ended after 1ms, 2ms more, 4ms... up to
		// every 100ms: at 1, 3, 7... 127, 227... 927, 1027ms.
		{name: "command ends first", argv: []string{"timeout", "5", "sleep", "1"}, elapsed: 1027 * time.Millisecond},
		{name: "command status", argv: []string{"timeout", "5", "false"}, status: 1, elapsed: firstPoll},
		{name: "not found", argv: []string{"timeout", "1", "nosuch"}, stderr: "timeout: can't execute 'nosuch': No such file or directory\n", status: 127},
		{name: "bad duration", argv: []string{"timeout", "x", "sleep", "1"}, stderr: "timeout: invalid number 'x'\n", status: 1},
		{name: "missing command", argv: []string{"timeout", "1"}, stderr: usage("timeout"), status: 1},
		{name: "nohup", argv: []string{"nohup", "echo", "hi"}, stdout: "hi\n"},
		{name: "nohup status", argv: []string{"nohup", "false"}, status: 1},
		{name: "nohup missing", argv: []string{"nohup", "nosuch"}, stderr: "nohup: can't execute 'nosuch': No such file or directory\n", status: 127},
		{name: "nohup nothing", argv: []string{"nohup"}, stderr: usage("nohup"), status: 1},
		{name: "timeout passes signals on", argv: []string{"timeout", "100", "sleep", "50"}, signals: map[time.Duration]int{time.Second: shell.SIGTERM},
			status: 128 + shell.SIGTERM, elapsed: time.Second + firstPoll},
		{name: "env passes signals on", argv: []string{"env", "sleep", "50"}, signals: map[time.Duration]int{time.Second: shell.SIGINT},
			status: 128 + shell.SIGINT, elapsed: time.Second},
		{name: "nohup ignores HUP", argv: []string{"nohup", "sleep", "5"}, signals: map[time.Duration]int{time.Second: shell.SIGHUP},
			elapsed: 5 * time.Second},
		{name: "nohup passes TERM on", argv: []string{"nohup", "sleep", "5"}, signals: map[time.Duration]int{time.Second: shell.SIGTERM},
			status: 128 + shell.SIGTERM, elapsed: time.Second},
		{name: "nice", argv: []string{"nice"}, stdout: "0\n"},
		{name: "nice runs", argv: []string{"nice", "-n", "5", "echo", "x"}, stdout: "x\n"},
	})
}

func TestXargs(t *testing.T) {
	in := "a b\nc d\nc d\ne\n"
	runCases(t, []tc{
		{name: "default echo", argv: []string{"xargs"}, stdin: in, stdout: "a b c d c d e\n"},
		{name: "-n", argv: []string{"xargs", "-n", "2", "echo"}, stdin: in, stdout: "a b\nc d\nc d\ne\n"},
		{name: "-I", argv: []string{"xargs", "-I", "{}", "echo", "[{}]"}, stdin: "x y\n\nz\n", stdout: "[x y]\n[z]\n"},
		{name: "quotes", argv: []string{"xargs", "-n1"}, stdin: `'a b' "c d" e\ f`, stdout: "a b\nc d\ne f\n"},
		{name: "-0", argv: []string{"xargs", "-0", "echo"}, stdin: "a b\x00c\x00", stdout: "a b c\n"},
		{name: "empty input runs once", argv: []string{"xargs", "echo", "x"}, stdout: "x\n"},
		{name: "-r", argv: []string{"xargs", "-r", "echo", "x"}},
		{name: "-t", argv: []string{"xargs", "-t", "echo"}, stdin: "a", stdout: "a\n", stderr: "echo a\n"},
		{name: "failure", argv: []string{"xargs", "false"}, stdin: "x", status: 123},
		{name: "not found", argv: []string{"xargs", "nosuch"}, stdin: "x", stderr: "xargs: nosuch: No such file or directory\n", status: 127},
		{name: "unmatched quote", argv: []string{"xargs"}, stdin: "'a", stderr: "xargs: unmatched single quote\n", status: 1},
	})
}

func TestBusybox(t *testing.T) {
	asBusybox := func(v *vfs.View, _ func(time.Time)) {
		v.WriteFile("/bin/busybox", nil, 0o755, false, 0, 0)
		v.SetProgram("/bin/busybox", "busybox")
		v.Remove("/bin/ls", false)
		v.Symlink("busybox", "/bin/ls")
		v.WriteFile("/bin/frob", nil, 0o755, false, 0, 0)
		v.SetProgram("/bin/frob", "busybox")
	}
	runCases(t, []tc{
		{name: "applet", argv: []string{"busybox", "echo", "hi"}, stdout: "hi\n"},
		{name: "by link name", argv: []string{"/bin/ls", "/root"}, setup: asBusybox},
		{name: "unknown link name", argv: []string{"frob"}, setup: asBusybox, stderr: "frob: applet not found\n", status: 127},
		{name: "unknown applet", argv: []string{"busybox", "nosuch"}, stderr: "nosuch: applet not found\n", status: 127},
		{name: "list", argv: []string{"busybox", "--list"}, stdout: strings.Join(Names(), "\n") + "\n"},
	})
}

// must fails the test process at a setup step that cannot fail on a fresh filesystem.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

func TestMount(t *testing.T) {
	mounts := map[string]string{"/proc/mounts": "overlay / overlay rw,relatime 0 0\n" +
		"cgroup /sys/fs/cgroup cgroup2 ro,nosuid,nodev,noexec,relatime 0 0\n" +
		"tmpfs /my\\040dir tmpfs rw,relatime 0 0\n"}
	runCases(t, []tc{
		{name: "list", argv: []string{"mount"}, files: mounts, stdout: "overlay on / type overlay (rw,relatime)\n" +
			"cgroup on /sys/fs/cgroup type cgroup2 (ro,nosuid,nodev,noexec,relatime)\n" +
			"tmpfs on /my dir type tmpfs (rw,relatime)\n"},
		{name: "-t", argv: []string{"mount", "-t", "cgroup2"}, files: mounts, stdout: "cgroup on /sys/fs/cgroup type cgroup2 (ro,nosuid,nodev,noexec,relatime)\n"},
		{name: "-t a list", argv: []string{"mount", "-t", "tmpfs,overlay"}, files: mounts, stdout: "overlay on / type overlay (rw,relatime)\ntmpfs on /my dir type tmpfs (rw,relatime)\n"},
		{name: "-t no", argv: []string{"mount", "-t", "nocgroup2,overlay"}, files: mounts, stdout: "tmpfs on /my dir type tmpfs (rw,relatime)\n"},
		{name: "-t none", argv: []string{"mount", "-t", "cgroup"}, files: mounts},
		{name: "mounting", argv: []string{"mount", "-t", "tmpfs", "tmpfs", "/mnt"}, files: mounts, stderr: "mount: permission denied (are you root?)\n", status: 1},
		{name: "no fstab", argv: []string{"mount", "-a"}, files: mounts, stderr: "mount: can't read '/etc/fstab': No such file or directory\n", status: 1},
		{name: "no /proc/mounts", argv: []string{"mount"}, stderr: "mount: /proc/mounts: No such file or directory\n", status: 1},
	})
}
