package shell

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
)

// builtin is a command the shell runs itself; it returns the status.
type builtin func(s *shell, argv []string) int

var builtins map[string]builtin

func init() {
	builtins = map[string]builtin{
		":":        func(*shell, []string) int { return 0 },
		"true":     func(*shell, []string) int { return 0 },
		"false":    func(*shell, []string) int { return 1 },
		"cd":       (*shell).cd,
		"pwd":      (*shell).pwd,
		"exit":     (*shell).exit,
		"return":   (*shell).ret,
		"break":    (*shell).brk,
		"continue": (*shell).cont,
		"unset":    (*shell).unset,
		"set":      (*shell).set,
		"shift":    (*shell).shift,
		"read":     (*shell).read,
		"trap":     (*shell).trap,
		"wait":     (*shell).wait,
		"eval":     (*shell).evalBuiltin,
		"exec":     (*shell).exec,
		".":        (*shell).source,
		"source":   (*shell).source,
		"command":  (*shell).command,
		"type":     (*shell).typeBuiltin,
		"kill":     (*shell).kill,
		"umask":    func(s *shell, argv []string) int { return s.umask(argv) },
		"ulimit":   func(s *shell, argv []string) int { return s.ulimit(argv) },
		"getopts":  (*shell).getopts,
		"hash":     func(*shell, []string) int { return 0 },
		"alias":    func(*shell, []string) int { return 0 },
		"times": func(s *shell, _ []string) int {
			fmt.Fprint(s.p.Stdout(), "0m0.00s 0m0.00s\n0m0.00s 0m0.00s\n")
			return 0
		},
	}
}

func (s *shell) cd(argv []string) int {
	dir := ""
	if len(argv) > 1 {
		dir = argv[1]
	} else {
		dir = s.vars.get("HOME").String()
		if dir == "" {
			dir = "/"
		}
	}
	if dir == "-" {
		dir = s.vars.get("OLDPWD").String()
		fmt.Fprintln(s.p.Stdout(), dir)
	}
	abs := s.p.Abs(dir)
	info, err := s.p.FS().Stat(abs)
	if err == nil && !info.Mode.IsDir() {
		err = errNotDir
	}
	if err != nil {
		s.builtinError("cd", "can't cd to %s: %v", dir, err)
		return 2
	}
	s.assign("OLDPWD", s.p.dir)
	s.p.dir = abs
	_ = s.setVar("PWD", expand.Variable{Set: true, Kind: expand.String, Str: abs, Exported: true})
	return 0
}

var errNotDir = errors.New("Not a directory")

func (s *shell) pwd([]string) int {
	fmt.Fprintln(s.p.Stdout(), s.p.dir)
	return 0
}

func (s *shell) exit(argv []string) int {
	status := s.status
	if len(argv) > 1 {
		n, err := strconv.Atoi(argv[1])
		if err != nil || n < 0 {
			s.builtinError("exit", "Illegal number: %s", argv[1])
			panic(exitPanic(2))
		}
		status = n & 0xff
	}
	panic(exitPanic(status))
}

func (s *shell) ret(argv []string) int {
	status := s.status
	if len(argv) > 1 {
		n, err := strconv.Atoi(argv[1])
		if err != nil {
			s.builtinError("return", "Illegal number: %s", argv[1])
			return 2
		}
		status = n & 0xff
	}
	if s.depth == 0 && len(s.sourcing) == 0 {
		panic(exitPanic(status)) // return outside a function ends a script, as in ash
	}
	s.returning = true
	return status
}

func loopCount(s *shell, argv []string) (int, bool) {
	n := 1
	if len(argv) > 1 {
		v, err := strconv.Atoi(argv[1])
		if err != nil || v < 1 {
			s.builtinError(argv[0], "Illegal number: %s", argv[1])
			panic(exitPanic(2)) // a special builtin's error ends a non-interactive shell
		}
		n = v
	}
	return n, true
}

func (s *shell) brk(argv []string) int {
	n, ok := loopCount(s, argv)
	if !ok {
		return 2
	}
	s.breakN = min(n, s.loopDepth())
	return 0
}

func (s *shell) cont(argv []string) int {
	n, ok := loopCount(s, argv)
	if !ok {
		return 2
	}
	s.contN = min(n, s.loopDepth())
	return 0
}

// loopDepth is how many loops enclose the running command, within its function: break
// and continue outside a loop do nothing, and break 5 in two loops ends both, as in ash.
func (s *shell) loopDepth() int {
	n := 0
	for i := len(s.frames) - 1; i >= 0; i-- {
		switch s.frames[i].kind {
		case frameWhile, frameFor:
			n++
		case frameFunc:
			return n
		}
	}
	return n
}

func (s *shell) unset(argv []string) int {
	funcs := false
	status := 0
	for _, a := range argv[1:] {
		switch a {
		case "-f":
			funcs = true
			continue
		case "-v":
			continue
		}
		if funcs {
			delete(s.funcs, a)
			continue
		}
		if !validName(a) {
			s.builtinError("unset", "%s: bad variable name", a)
			panic(exitPanic(2)) // a special builtin's error ends a non-interactive shell
		}
		if v, ok := s.vars.lookup(a); ok && v.ReadOnly {
			s.builtinError("unset", "%s: is read only", a)
			status = 2
			continue
		}
		s.vars.del(a)
		s.envCache = nil
		s.account()
	}
	return status
}

func (s *shell) set(argv []string) int {
	args := argv[1:]
	if len(args) == 0 {
		s.vars.each(func(name string, v expand.Variable) bool {
			if v.IsSet() {
				fmt.Fprintf(s.p.Stdout(), "%s=%s\n", name, shellQuote(v.String()))
			}
			return true
		})
		return 0
	}
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			s.setParams(args[1:])
			return 0
		}
		if len(a) < 2 || a[0] != '-' && a[0] != '+' {
			break
		}
		args = args[1:]
		on := a[0] == '-'
		if a[1:] == "o" {
			if len(args) == 0 {
				return 0
			}
			if !s.setOption(args[0], on) {
				s.builtinError("set", "illegal option -o %s", args[0])
				return 1
			}
			args = args[1:]
			continue
		}
		for _, c := range a[1:] {
			switch c {
			case 'e', 'u', 'x', 'f', 'C':
				s.setFlag(c, on)
			case 'v', 'm', 'a', 'b', 'h', 'n':
			default:
				s.builtinError("set", "illegal option -%c", c)
				panic(exitPanic(2)) // a special builtin's error ends a non-interactive shell
			}
		}
	}
	if len(args) > 0 {
		s.setParams(args)
	}
	return 0
}

func (s *shell) shift(argv []string) int {
	n := 1
	if len(argv) > 1 {
		v, err := strconv.Atoi(argv[1])
		if err != nil || v < 0 {
			s.builtinError("shift", "Illegal number: %s", argv[1])
			panic(exitPanic(2)) // a special builtin's error ends a non-interactive shell
		}
		n = v
	}
	if n > len(s.params) {
		return 1 // ash's: no message
	}
	s.setParams(s.params[n:])
	return 0
}

// read [-r] [-p PROMPT] [-t SECS] [-u FD] NAME...: a line of stdin, split by IFS.
func (s *shell) read(argv []string) int {
	raw, fdn := false, 0
	args := argv[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		switch a := args[0]; {
		case a == "-r":
			raw = true
		case a == "-p" && len(args) > 1:
			args = args[1:] // the prompt is for a terminal, which a container's stdin is not
		case (a == "-t" || a == "-n" || a == "-d") && len(args) > 1:
			args = args[1:]
		case a == "-u" && len(args) > 1:
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 0 || n >= len(s.p.fds) {
				s.builtinError("read", "invalid file descriptor")
				return 2
			}
			fdn = n
			args = args[1:]
		case a == "--":
			args = args[1:]
			goto names
		}
		args = args[1:]
	}
names:
	named := len(args) > 0
	if !named {
		args = []string{"REPLY"}
	}
	line, err := s.p.ReadLine(fdn)
	for !raw && err == nil && strings.HasSuffix(line, `\`) {
		more, e := s.p.ReadLine(fdn)
		line, err = line[:len(line)-1]+more, e
	}
	fields := readFields(s.ifs(), line, len(args), raw, named)
	for i, name := range args {
		v := ""
		if i < len(fields) {
			v = fields[i]
		}
		if !s.assign(name, v) {
			return 2
		}
	}
	if err != nil {
		return 1
	}
	return 0
}

// trap [ACTION SIGNAL...]: ” ignores, - resets, anything else runs when the signal comes.
func (s *shell) trap(argv []string) int {
	args := argv[1:]
	if len(args) == 0 {
		// By signal number, as ash lists them: EXIT (0) first.
		names := slices.Collect(maps.Keys(s.traps))
		num := func(name string) int {
			if name == "EXIT" {
				return 0
			}
			if n, ok := SignalNames[name]; ok {
				return n
			}
			n, _ := strconv.Atoi(name)
			return n
		}
		slices.SortFunc(names, func(a, b string) int { return num(a) - num(b) })
		for _, name := range names {
			fmt.Fprintf(s.p.Stdout(), "trap -- %s %s\n", shellQuote(s.traps[name]), name)
		}
		return 0
	}
	if len(args) == 1 && args[0] != "-" {
		args = []string{"-", args[0]}
	}
	action := args[0]
	for _, name := range args[1:] {
		name = strings.TrimPrefix(strings.ToUpper(name), "SIG")
		if name == "0" || name == "EXIT" {
			if action == "-" {
				delete(s.traps, "EXIT")
			} else {
				s.setTrap("EXIT", action)
			}
			continue
		}
		sig, ok := SignalNames[name]
		if !ok {
			n, err := strconv.Atoi(name)
			if err != nil {
				s.builtinError("trap", "%s: invalid signal specification", name)
				return 1
			}
			sig, name = n, signalName(n)
		}
		if sig == SIGKILL || sig == 19 {
			continue // cannot be caught
		}
		switch action {
		case "-":
			delete(s.traps, name)
			s.p.Trap(sig, false)
		default:
			s.setTrap(name, action)
			s.p.Trap(sig, true) // an empty action ignores it: handled, nothing to run
		}
	}
	return 0
}

// wait [PID...]: waits for background jobs; a trapped signal ends it early (128+sig).
func (s *shell) wait(argv []string) int {
	jobs, status, ok := s.waitJobs(argv)
	if !ok {
		return status
	}
	return s.waited(argv, s.p.Wait(jobs...))
}

// waitJobs is the jobs wait's operands name; not ok with the status when one is wrong.
func (s *shell) waitJobs(argv []string) (jobs []*Proc, status int, ok bool) {
	if len(argv) == 1 {
		return s.jobs, 0, true
	}
	for _, a := range argv[1:] {
		pid, err := s.jobPID(a)
		if err != nil {
			s.errorf("wait: %s: invalid job", a)
			return nil, 2, false
		}
		found := false
		for _, j := range s.jobs {
			if j.pid == pid {
				jobs, found = append(jobs, j), true
			}
		}
		if !found {
			return nil, 127, false
		}
	}
	return jobs, 0, true
}

// jobPID is the process a kill or wait operand names: a pid, or a job (%N, %%, %+ the
// last started, %- the one before); -1 for a job that is no more.
func (s *shell) jobPID(a string) (int, error) {
	spec, isJob := strings.CutPrefix(a, "%")
	if !isJob {
		return strconv.Atoi(a)
	}
	var j *Proc
	switch spec {
	case "", "%", "+":
		if len(s.jobs) > 0 {
			j = s.jobs[len(s.jobs)-1]
		}
	case "-":
		if len(s.jobs) > 1 {
			j = s.jobs[len(s.jobs)-2]
		}
	default:
		n, err := strconv.Atoi(spec)
		if err != nil {
			return 0, err
		}
		for _, c := range s.jobs {
			if int(c.jobNo) == n {
				j = c
			}
		}
	}
	if j == nil {
		return -1, nil
	}
	return j.pid, nil
}

// waited is wait's status once the jobs' wait returned status.
// A job named by an operand that a signal killed, and that no foreground wait reaped
// before, is reported as a foreground job's is.
func (s *shell) waited(argv []string, status int) int {
	for _, a := range argv[1:] {
		for _, j := range s.jobs {
			if pid, _ := s.jobPID(a); j.pid == pid && j.exited && !j.reaped {
				s.notice(j)
			}
		}
	}
	s.reap(nil)
	if len(argv) == 1 && allExited(s.jobs) {
		status = 0 // wait without operands: 0 once all are done, 128+N if a trap ended it
	}
	var pids []int
	for _, a := range argv[1:] {
		pid, _ := s.jobPID(a)
		pids = append(pids, pid)
	}
	s.jobs = removeWaited(s.jobs, pids)
	return status
}

// removeWaited drops the jobs a wait is done with: those of operands that have exited,
// or without operands every one that has (another job's status stays for its wait).
func removeWaited(ps []*Proc, operands []int) []*Proc {
	out := ps[:0]
	for _, p := range ps {
		named := len(operands) == 0
		for _, pid := range operands {
			named = named || p.pid == pid
		}
		if !p.exited || !named {
			out = append(out, p)
		}
	}
	return out
}

func (s *shell) evalBuiltin(argv []string) int {
	s.evalAt(strings.Join(argv[1:], " "))
	return s.status
}

// exec CMD replaces the shell with CMD: same process, same pid. Without CMD its
// redirections stay (exec >file): the statement's restore must not undo them.
func (s *shell) exec(argv []string) int {
	if len(argv) == 1 {
		s.keepRedirs = true
		return 0
	}
	args := argv[1:]
	prog, resolved, _, err := s.p.m.resolve(args, s.vars.get("PATH").String(), s.p.dir)
	if err != nil {
		status := s.p.execFailed(fmt.Sprintf("%s: exec: line %d", s.name, s.lineno), args[0], err)
		panic(exitPanic(status))
	}
	s.p.argv, s.p.env = resolved, s.environ()
	if s.inProcess || s.p.inPlace > 0 {
		// A subshell in its parent's process: the program runs in its place and the
		// subshell ends with it.
		panic(exitPanic(prog(s.p)))
	}
	// The shell unwinds and its process runs prog from the top, as execve replaces the
	// image: nothing of the shell (its variables, its script, the children it waited
	// for) stays behind a server it execs, and no EXIT trap runs.
	s.release()
	s.p.releaseTransient()
	panic(execPanic{prog})
}

// source FILE: runs FILE's commands in this shell.
func (s *shell) source(argv []string) int {
	if len(argv) < 2 {
		s.builtinError(argv[0], "filename argument required")
		return 2
	}
	name := argv[1]
	file := name
	if !strings.Contains(name, "/") {
		for _, d := range strings.Split(s.vars.get("PATH").String(), ":") {
			if _, err := s.p.FS().Stat(path.Join(d, name)); err == nil {
				file = path.Join(d, name)
				break
			}
		}
	}
	data, err := s.p.FS().ReadFile(s.p.Abs(file))
	if err != nil {
		s.builtinError(argv[0], "can't open '%s': %v", name, err)
		panic(exitPanic(2))
	}
	s.sourcing = append(s.sourcing, name)
	savedBase := s.lineBase
	s.lineBase = 0 // a file's lines count from 1
	defer func() {
		s.sourcing = s.sourcing[:len(s.sourcing)-1]
		s.lineBase = savedBase
	}()
	saved := s.params
	if len(argv) > 2 {
		s.setParams(argv[2:])
	}
	s.eval(string(data))
	s.setParams(saved)
	s.returning = false
	return s.status
}

// command [-v|-V] CMD: runs CMD skipping functions, or says what it is.
func (s *shell) command(argv []string) int {
	args := argv[1:]
	if len(args) == 0 {
		return 0
	}
	if args[0] == "-v" || args[0] == "-V" {
		status := 0
		for _, name := range args[1:] {
			if w, ok := s.what(name); ok {
				if args[0] == "-v" {
					if strings.HasPrefix(w, "/") || !strings.Contains(w, " ") {
						fmt.Fprintln(s.p.Stdout(), w)
					} else {
						fmt.Fprintln(s.p.Stdout(), name)
					}
				} else {
					fmt.Fprintf(s.p.Stdout(), "%s is %s\n", name, w)
				}
			} else {
				status = 127 // ash's: as if it were run
			}
		}
		return status
	}
	if args[0] == "-p" {
		args = args[1:]
	}
	if b, ok := builtins[args[0]]; ok {
		return b(s, args)
	}
	s.external(args, false)
	return s.status
}

// what says what a name runs: a function, a builtin or a file.
func (s *shell) what(name string) (string, bool) {
	if _, ok := s.funcs[name]; ok {
		return "a function", true
	}
	if _, ok := builtins[name]; ok || appletBuiltins[name] {
		return "a shell builtin", true
	}
	if strings.Contains(name, "/") {
		if info, err := s.p.FS().Stat(s.p.Abs(name)); err == nil && info.Mode&0o111 != 0 {
			return name, true
		}
		return "", false
	}
	for _, d := range strings.Split(s.vars.get("PATH").String(), ":") {
		f := path.Join(d, name)
		if info, err := s.p.FS().Stat(f); err == nil && info.Mode.IsRegular() && info.Mode&0o111 != 0 {
			return f, true
		}
	}
	return "", false
}

// appletBuiltins are the applets busybox's ash runs as its own builtins (the machine runs
// them as programs, found on PATH): command -v and type name them as builtins.
var appletBuiltins = map[string]bool{"echo": true, "printf": true, "test": true, "[": true, "[[": true}

func (s *shell) typeBuiltin(argv []string) int {
	status := 0
	for _, name := range argv[1:] {
		if w, ok := s.what(name); ok {
			fmt.Fprintf(s.p.Stdout(), "%s is %s\n", name, w)
		} else {
			fmt.Fprintf(s.p.Stdout(), "%s: not found\n", name)
			status = 127
		}
	}
	return status
}

// ashSignals is busybox's signal names by number, as its kill -l lists them.
var ashSignals = [...]string{1: "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1",
	"SEGV", "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
	"XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "POLL", "PWR", "SYS"}

// killSignal is the signal a kill argument names: a number, or a name with or without
// SIG, in any case.
func killSignal(name string) (int, bool) {
	if n, ok := parseSignal(name); ok {
		return n, true
	}
	name = strings.TrimPrefix(strings.ToUpper(name), "SIG")
	for n, s := range ashSignals {
		if s != "" && s == name {
			return n, true
		}
	}
	return 0, false
}

// kill [-l [SIG...]] [-s SIG | -SIG] PID...: ash runs busybox's kill applet as its
// builtin, so the messages are the applet's, prefixed with the shell's name ("sh: invalid
// number '$'").
func (s *shell) kill(argv []string) int {
	args := argv[1:]
	sig := SIGTERM
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		switch a := args[0][1:]; {
		case a == "l":
			if len(args) == 1 {
				for n := 1; n < len(ashSignals); n++ {
					fmt.Fprintf(s.p.Stdout(), "%2d) %s\n", n, ashSignals[n])
				}
				return 0
			}
			for _, name := range args[1:] {
				if n, err := strconv.Atoi(name); err == nil {
					if n &= 0x7f; n > 0 && n < len(ashSignals) {
						fmt.Fprintln(s.p.Stdout(), ashSignals[n])
					} else {
						fmt.Fprintln(s.p.Stdout(), n)
					}
					continue
				}
				n, ok := killSignal(name)
				if !ok {
					s.errorf("unknown signal '%s'", name)
					return 1
				}
				fmt.Fprintln(s.p.Stdout(), n)
			}
			return 0
		case a == "-":
			args = args[1:]
		default:
			if a == "s" && len(args) > 1 {
				args = args[1:]
				a = args[0]
			}
			n, ok := killSignal(a)
			if !ok {
				s.errorf("bad signal name '%s'", a)
				return 1
			}
			sig, args = n, args[1:]
		}
	}
	if len(args) == 0 {
		s.errorf("you need to specify whom to kill")
		return 1
	}
	status := 0
	for _, a := range args {
		pid, err := s.jobPID(strings.TrimSpace(a))
		if err != nil {
			s.errorf("invalid number '%s'", a)
			status = 1
			continue
		}
		if pid < 0 {
			s.builtinError("kill", "%s: no such job", a)
			status = 2
			continue
		}
		if err := s.p.Kill(pid, sig); err != nil {
			s.errorf("%v", err)
			status = 1
		}
	}
	return status
}

func parseSignal(name string) (int, bool) {
	if n, err := strconv.Atoi(name); err == nil {
		return n, n >= 0 && n < 65
	}
	n, ok := SignalNames[strings.TrimPrefix(strings.ToUpper(name), "SIG")]
	return n, ok
}

// umask [-S] [MODE]: shows or sets the file creation mask (an octal MODE; a symbolic
// one sets the permissions files may have, u=rwx,g=rx,o=).
func (s *shell) umask(argv []string) int {
	args := argv[1:]
	symbolic := len(args) > 0 && args[0] == "-S"
	if symbolic {
		args = args[1:]
	}
	if len(args) == 0 {
		m := s.p.umask
		if !symbolic {
			fmt.Fprintf(s.p.Stdout(), "%04o\n", uint32(m))
			return 0
		}
		allowed := ^m & 0o777
		var parts []string
		for i, who := range []string{"u", "g", "o"} {
			bits := allowed >> (6 - 3*i) & 7
			p := who + "="
			for j, c := range "rwx" {
				if bits&(4>>j) != 0 {
					p += string(c)
				}
			}
			parts = append(parts, p)
		}
		fmt.Fprintln(s.p.Stdout(), strings.Join(parts, ","))
		return 0
	}
	if n, err := strconv.ParseUint(args[0], 8, 32); err == nil {
		s.p.SetUmask(fs.FileMode(n))
		return 0
	}
	if m, ok := symbolicUmask(args[0], s.p.umask); ok {
		s.p.SetUmask(m)
		return 0
	}
	s.builtinError("umask", "illegal mode: %s", args[0])
	return 2
}

// symbolicUmask is the mask a symbolic umask mode (u=rwx,g=rx,o=) leaves from m.
func symbolicUmask(mode string, m fs.FileMode) (fs.FileMode, bool) {
	allowed := ^m & 0o777
	for _, clause := range strings.Split(mode, ",") {
		who, perms, ok := strings.Cut(clause, "=")
		if !ok || who == "" {
			return 0, false
		}
		var bits fs.FileMode
		for _, c := range perms {
			switch c {
			case 'r':
				bits |= 4
			case 'w':
				bits |= 2
			case 'x':
				bits |= 1
			default:
				return 0, false
			}
		}
		for _, w := range who {
			shift := map[rune]int{'u': 6, 'g': 3, 'o': 0}
			if w == 'a' {
				allowed = bits<<6 | bits<<3 | bits
				continue
			}
			sh, ok := shift[w]
			if !ok {
				return 0, false
			}
			allowed = allowed&^(7<<sh) | bits<<sh
		}
	}
	return ^allowed & 0o777, true
}

func (s *shell) ulimit(argv []string) int {
	if len(argv) == 1 || argv[len(argv)-1] == "-n" {
		fmt.Fprintln(s.p.Stdout(), "unlimited")
	}
	return 0
}

// getopts OPTSTRING NAME [ARGS...]
func (s *shell) getopts(argv []string) int {
	if len(argv) < 3 {
		s.builtinError("getopts", "usage: getopts optstring var [arg]")
		return 2
	}
	optstr, name := argv[1], argv[2]
	args := s.params
	if len(argv) > 3 {
		args = argv[3:]
	}
	optind, _ := strconv.Atoi(s.vars.get("OPTIND").String())
	if optind < 1 {
		optind = 1
	}
	if optind > len(args) || !strings.HasPrefix(args[optind-1], "-") || args[optind-1] == "-" {
		s.assign(name, "?")
		return 1
	}
	arg := args[optind-1]
	if arg == "--" {
		s.assign("OPTIND", strconv.Itoa(optind+1))
		s.assign(name, "?")
		return 1
	}
	pos, _ := strconv.Atoi(s.vars.get("_optpos").String())
	if pos < 1 {
		pos = 1
	}
	c := arg[pos]
	i := strings.IndexByte(optstr, c)
	next := func() {
		if pos+1 < len(arg) {
			s.assign("_optpos", strconv.Itoa(pos+1))
		} else {
			s.assign("_optpos", "1")
			s.assign("OPTIND", strconv.Itoa(optind+1))
		}
	}
	if i < 0 || c == ':' {
		fmt.Fprintf(s.p.Stderr(), "Illegal option -%c\n", c) // ash's words, unprefixed
		s.assign(name, "?")
		next()
		return 0
	}
	if i+1 < len(optstr) && optstr[i+1] == ':' {
		if pos+1 < len(arg) {
			s.assign("OPTARG", arg[pos+1:])
			s.assign("OPTIND", strconv.Itoa(optind+1))
		} else if optind < len(args) {
			s.assign("OPTARG", args[optind])
			s.assign("OPTIND", strconv.Itoa(optind+2))
		} else {
			fmt.Fprintf(s.p.Stderr(), "No arg for -%c option\n", c)
			s.assign(name, "?")
			s.assign("OPTIND", strconv.Itoa(optind+1))
			return 0
		}
		s.assign("_optpos", "1")
		s.assign(name, string(c))
		return 0
	}
	s.assign(name, string(c))
	next()
	return 0
}

func (s *shell) setTrap(name, action string) {
	if s.traps == nil {
		s.traps = map[string]string{}
	}
	s.traps[name] = action
}
