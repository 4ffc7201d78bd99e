package programs

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// The processes pgrep, pkill and killall look at are those of the container's machine: a
// container has a pid namespace of its own, so it sees its own processes only.

// comm is a process's /proc/PID/comm: the base name of what it executes, cut at 15 bytes
// as the kernel cuts it.
func comm(q shell.ProcInfo) string {
	s := path.Base(firstArg(q.Argv))
	if len(s) > 15 {
		s = s[:15]
	}
	return s
}

// printSignals prints the signal list as busybox's print_signames ("kill -l").
func (c *cmd) printSignals() {
	for i := 1; i < len(signals); i++ {
		c.printf("%2d) %s\n", i, signals[i])
	}
	c.printf("%2d) %s\n%2d) %s\n", sigRTMIN, "RTMIN", sigRTMAX, "RTMAX")
}

// listSignals is kill -l and killall -l (busybox's shared code): every signal without
// operands, else each operand's name (a number, its low 7 bits: an exit status works)
// or number.
func (c *cmd) listSignals(operands []string) int {
	if len(operands) == 0 {
		c.printSignals()
		return 0
	}
	for _, s := range operands {
		if s[0] >= '0' && s[0] <= '9' {
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				c.errorf("unknown signal '%s'", s)
				return 1
			}
			c.write(signame(int(n)&0x7f) + "\n")
			continue
		}
		n := signum(s)
		if n < 0 {
			c.errorf("unknown signal '%s'", s)
			return 1
		}
		c.printf("%d\n", n)
	}
	return 0
}

// runPgrep is pgrep and pkill (busybox's pgrep.c): the processes but itself whose argv[0]
// (the whole command line with -f) or comm matches the extended regular expression, in
// pid order; -x anchors it at both ends, -v inverts, -o and -n take the first or last
// only, -s SID and -P PPID narrow. pgrep prints the pids (-l, -a: and the command);
// pkill sends them SIGNAL (a first argument -SIGNAL; -l lists the signals). 1 when none.
func runPgrep(c *cmd) int {
	pkill := c.name == "pkill"
	sig := shell.SIGTERM
	if pkill && len(c.args) > 0 && strings.HasPrefix(c.args[0], "-") {
		if n := signum(c.args[0][1:]); n >= 0 {
			sig = n
			c.args = c.args[1:]
		}
	}
	o, args := c.getopt("vlafxones:P:", nil)
	if pkill && o.Has('l') {
		c.printSignals()
		return 0
	}
	number := func(b byte) int {
		if !o.Has(b) {
			return -1
		}
		v := o.Val(b)
		n, err := strconv.ParseUint(v, 10, 31)
		if err != nil {
			c.die("invalid number '%s'", v)
		}
		return int(n)
	}
	sid, ppid := number('s'), number('P')
	if sid == 0 {
		sid = 1 // the container's one session
	}
	if sid&ppid < 0 && len(args) != 1 {
		c.showUsage(1)
	}
	var re *regexp.Regexp
	if len(args) > 0 {
		var err error
		if re, err = compileRegex(args[0], true, false); err != nil {
			c.die("bad regex '%s': %s", args[0], regexError(err))
		}
	}
	invert := o.Has('v')
	type found struct {
		pid int
		cmd string
	}
	var matched []found
	for _, q := range c.p.Procs() {
		c.tick()
		if q.PID == c.p.PID() {
			continue
		}
		// Every simulated process is in the session of the container's first process.
		const procSID = 1
		filtered := ppid >= 0 && ppid != q.PPID || sid >= 0 && sid != procSID
		if filtered && !invert {
			continue
		}
		cmdline := firstArg(q.Argv)
		if o.Has('f') || o.Has('a') {
			cmdline = strings.Join(q.Argv, " ")
		}
		shown := firstArg(q.Argv)
		if o.Has('a') {
			shown = cmdline
		}
		match := filtered && invert
		if !match {
			ok := re == nil
			if !ok {
				ok = c.rematch(re, cmdline, o.Has('x'))
				if !ok {
					ok = c.rematch(re, comm(q), o.Has('x'))
					shown = comm(q)
				}
			}
			match = ok != invert
		}
		if !match {
			continue
		}
		matched = append(matched, found{q.PID, shown})
		if o.Has('o') && !o.Has('n') {
			break
		}
	}
	if o.Has('n') && len(matched) > 0 {
		matched = matched[len(matched)-1:]
	}
	for _, m := range matched {
		switch {
		case pkill:
			c.p.Kill(m.pid, sig)
			if o.Has('e') {
				c.printf("%s killed (pid %d)\n", m.cmd, m.pid)
			}
		case o.Has('l') || o.Has('a'):
			c.printf("%d %s\n", m.pid, m.cmd)
		default:
			c.printf("%d\n", m.pid)
		}
	}
	if len(matched) == 0 {
		return 1
	}
	return 0
}

// rematch is regexec on s: anywhere, or (anchored) the first match spanning all of s.
func (c *cmd) rematch(re *regexp.Regexp, s string, anchored bool) bool {
	loc := re.FindStringIndex(s)
	if loc == nil {
		return false
	}
	return !anchored || loc[0] == 0 && loc[1] == len(s)
}

// runKillall is busybox's killall (kill.c): SIGNAL (-SIG, -s SIG; default TERM) to every
// process whose comm or argv[0]'s base name is a NAME; "NAME: no process killed" (unless
// -q) for a name none has. The status counts the failures.
func runKillall(c *cmd) int {
	args := c.args
	sig := shell.SIGTERM
	quiet := false
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		a := args[0][1:]
		if a == "l" {
			return c.listSignals(args[1:])
		}
		parse := true
		if a == "q" {
			quiet = true
			args = args[1:]
			if len(args) == 0 {
				c.showUsage(1)
			}
			parse = args[0] != "" && args[0][0] == '-'
			if parse {
				a = args[0][1:]
			}
		}
		if parse {
			switch {
			case a == "-":
			case a == "s" && len(args) > 1:
				args = args[1:]
				a = args[0]
				fallthrough
			default:
				if sig = signum(a); sig < 0 {
					c.errorf("bad signal name '%s'", a)
					return 1
				}
			}
			args = args[1:]
		}
	}
	if len(args) == 0 {
		c.errorf("you need to specify whom to kill")
		return 1
	}
	errs := 0
	for _, name := range args {
		var pids []int
		for _, q := range c.p.Procs() {
			c.tick()
			if nameMatches(q, name) {
				pids = append(pids, q.PID)
			}
		}
		if len(pids) == 0 {
			errs++
			if !quiet {
				c.errorf("%s: no process killed", name)
			}
			continue
		}
		for _, pid := range pids {
			if pid == c.p.PID() {
				continue
			}
			if err := c.p.Kill(pid, sig); err != nil {
				errs++
				if !quiet {
					c.errorf("can't kill pid %d: No such process", pid)
				}
			}
		}
	}
	return errs
}

// nameMatches is busybox's find_pid_by_name test: the comm (a name of 15 bytes or more
// matching its first 15 when argv[1]'s base name is the name, as a script's), or
// argv[0]'s base name.
func nameMatches(q shell.ProcInfo, name string) bool {
	cm := comm(q)
	prefix := name
	if len(prefix) > 15 {
		prefix = prefix[:15]
	}
	if cm == prefix {
		if len(cm) < 15 {
			return true
		}
		if len(q.Argv) > 1 && path.Base(q.Argv[1]) == name {
			return true
		}
	}
	return len(q.Argv) > 0 && path.Base(q.Argv[0]) == name
}
