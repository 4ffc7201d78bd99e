package shell

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"
)

// The interpreter walks mvdan.cc/sh's syntax tree itself rather than using its interp
// package: interp runs a pipeline's commands on goroutines of its own and blocks in them,
// so a sleep inside a pipeline could not give control back to the machine's Step, and its
// time, $RANDOM and file access are the host's. Here each process is a coroutine of the
// machine; the expand package (parameter, arithmetic, brace and glob expansion) is used as
// is, through an Environ backed by the shell's variables.

// MaxFuncDepth bounds function recursion: an endless one ends the shell with a message
// instead of growing without bound.
const MaxFuncDepth = 1000

// shell is one shell's state. A subshell is a copy.
type shell struct {
	p        *Proc
	name     string // $0
	params   []string
	vars     varTable
	funcs    map[string]*syntax.Stmt
	status   int
	traps    map[string]string // "EXIT", "TERM", ... -> command
	errexit  bool
	nounset  bool
	xtrace   bool
	noglob   bool
	pipefail bool

	breakN, contN int
	returning     bool
	inCond        int  // inside an if/while condition or && ||: errexit does not apply
	shortCircuit  bool // the && or || list just run stopped before its last command
	noclobber     bool // set -C: > does not overwrite an existing file
	scriptFrom    byte // where the script comes from, as $- says it: 'c' (sh -c), 's' (stdin), 0 (a file)
	depth         int
	jobs          []*Proc
	lastBG        int
	envCache      []string
	substStatus   int
	localFrames   []*[]savedVar // variables a function's local saved, innermost last
	pid           int           // $$: the shell's own, subshells included
	started       int64         // for $SECONDS
	sourcing      []string      // files being sourced (return ends one)
	keepRedirs    bool          // exec without a command: its redirections stay
	// inProcess: a subshell run in its parent's process (( ... ), $(...)): an exec there
	// replaces only the subshell, so the program runs in its place on the Go stack.
	inProcess bool
	// execTail is the command ash would exec rather than fork, being the shell's last (sh
	// -c's final command on the script's last line, a pipeline's or a background job's
	// command): a signal killing it kills the shell, which says nothing of it.
	execTail  *syntax.CallExpr
	execNow   bool   // run is running execTail
	lateError string // the syntax error after the script's good lines (lateSyntaxError)
	// lineno is the line of the simple command running, as ash counts it for its builtins'
	// errors ("sh: cd: line 0: ..."): lineBase plus the parser's line in the text being
	// run (-1 for sh -c's script, which ash counts from 0; an eval's from its own line).
	lineno, lineBase int
	extraEnv         []string // inherited NAME=value entries whose names are no identifiers
	ecfg             *expand.Config

	// Memory (memory.go): what the positional parameters and the variables saved by
	// local and prefix assignments hold, what the shell inherited from its parent (shared
	// until changed), and what it has charged its process.
	paramBytes, savedBytes, inherited, charged int64

	// Parking (park.go).
	frames     []frame // the walk's places, outermost first
	resumeAt   int     // while resuming: 1 + the frame to re-enter next; 0 otherwise
	noPark     int     // inside something whose place is only on the Go stack
	parking    bool    // unwinding to park: deferred work is left for the resumption
	leafStatus int     // the status of the applet that parked
}

// RunShell is sh (busybox ash; bash and dash run it too): sh -c SCRIPT [NAME [ARGS...]],
// sh FILE [ARGS...], or a script on stdin. Flags -e, -u, -x and -o errexit/nounset/xtrace
// may precede them.
func RunShell(p *Proc) int {
	s := newShell(p)
	args := p.Args()[1:]
	s.name = p.Args()[0]
	var script, file string
	hasScript := false
	for len(args) > 0 && len(args[0]) > 1 && (args[0][0] == '-' || args[0][0] == '+') && args[0] != "--" {
		a := args[0]
		args = args[1:]
		on := a[0] == '-'
		if a[1:] == "o" && len(args) > 0 {
			s.setOption(args[0], on)
			args = args[1:]
			continue
		}
		for _, c := range a[1:] {
			switch c {
			case 'c':
				hasScript = true
			case 'e', 'u', 'x', 'f':
				s.setFlag(c, on)
			case 's', 'i', 'l':
			default:
				fmt.Fprintf(p.Stderr(), "%s: -%c: invalid option\n", path.Base(s.name), c)
				return 2
			}
		}
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	switch {
	case hasScript:
		s.scriptFrom = 'c'
		s.lineBase = -1 // ash counts sh -c's lines from 0, as bash
		if len(args) == 0 {
			fmt.Fprintf(p.Stderr(), "%s: -c requires an argument\n", path.Base(s.name))
			return 2
		}
		script, args = args[0], args[1:]
		if len(args) > 0 {
			s.name, args = args[0], args[1:]
		}
	case len(args) > 0:
		file, args = args[0], args[1:]
		data, err := p.FS().ReadFileString(p.Abs(file))
		if err != nil {
			fmt.Fprintf(p.Stderr(), "%s: can't open '%s': %v\n", path.Base(s.name), file, err)
			return 127
		}
		script, s.name = data, file
	default:
		s.scriptFrom = 's'
		data, _ := p.ReadAll()
		script = string(data)
	}
	s.setParams(args)
	return s.runScript(script, hasScript)
}

func newShell(p *Proc) *shell {
	// funcs and traps are made when the first is set: most shells of a node set none.
	s := &shell{p: p, pid: p.PID(), started: p.m.now}
	env := p.Environ()
	s.vars.vars = make([]shellVar, 0, len(env)+4) // and IFS, PATH, PWD, PPID
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case ok && validName(k):
			_ = s.setVar(k, expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: v})
		case ok:
			// A name that is no shell identifier (a ConfigMap key "data-1" in envFrom) is
			// no variable, but stays in the environment children get, as in ash.
			s.extraEnv = append(s.extraEnv, kv)
		}
	}
	if _, ok := s.vars.lookup("IFS"); !ok {
		s.vars.set("IFS", expand.Variable{Set: true, Kind: expand.String, Str: " \t\n"})
	}
	if !s.vars.get("PATH").IsSet() {
		s.setVar("PATH", expand.Variable{Set: true, Kind: expand.String, Str: DefaultPath})
	}
	s.setVar("PWD", expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: p.Dir()})
	s.setVar("PPID", expand.Variable{Set: true, Kind: expand.String, Str: strconv.Itoa(p.PPID())})
	s.account()
	return s
}

func (s *shell) setFlag(c rune, on bool) {
	switch c {
	case 'e':
		s.errexit = on
	case 'u':
		s.nounset = on
	case 'x':
		s.xtrace = on
	case 'f':
		s.noglob = on
	case 'C':
		s.noclobber = on
	}
}

func (s *shell) setOption(name string, on bool) bool {
	switch name {
	case "errexit":
		s.errexit = on
	case "nounset":
		s.nounset = on
	case "xtrace":
		s.xtrace = on
	case "noglob":
		s.noglob = on
	case "noclobber":
		s.noclobber = on
	case "pipefail":
		s.pipefail = on
	case "posix", "monitor", "vi", "emacs", "allexport", "notify", "ignoreeof", "verbose":
	default:
		return false
	}
	return true
}

type parsed struct {
	f   *syntax.File
	err error
}

var parseCache = struct {
	sync.Mutex
	m map[string]parsed
}{m: map[string]parsed{}}

// parse parses script, sharing the tree of a script seen before: ten thousand pods
// running one manifest's script hold one tree. Trees are never modified. A script with
// what bash parses and ash does not is a *lateSyntaxError.
func parse(script string) (*syntax.File, error) {
	parseCache.Lock()
	p, ok := parseCache.m[script]
	parseCache.Unlock()
	if ok {
		return p.f, p.err
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	err = notAsh(f)
	parseCache.Lock()
	if len(parseCache.m) >= 4096 {
		clear(parseCache.m)
	}
	parseCache.m[script] = parsed{f, err}
	parseCache.Unlock()
	return f, err
}

// lateSyntaxError is a syntax error ash meets only when it reaches the line: it runs the
// lines before (good), then says msg.
type lateSyntaxError struct {
	good *syntax.File
	msg  string
}

func (e *lateSyntaxError) Error() string { return e.msg }

// notAsh finds what ash cannot parse though bash can: a here-string (<<<), which ash
// reads as a here-document's << and a < with nothing to redirect.
func notAsh(f *syntax.File) error {
	for i, st := range f.Stmts {
		bad := false
		syntax.Walk(st, func(n syntax.Node) bool {
			if r, ok := n.(*syntax.Redirect); ok && r.Op == syntax.WordHdoc {
				bad = true
			}
			return !bad
		})
		if !bad {
			continue
		}
		// ash parses a line at a time: the statements ending on earlier lines run.
		line := st.Pos().Line()
		good := &syntax.File{}
		for _, prev := range f.Stmts[:i] {
			if prev.End().Line() < line {
				good.Stmts = append(good.Stmts, prev)
			}
		}
		return &lateSyntaxError{good: good, msg: "syntax error: unexpected redirection"}
	}
	return nil
}

// runScript parses and runs script, then the EXIT trap; an exit anywhere ends it.
// minusC: the script is sh -c's, whose last command ash execs when it is on the last line.
func (s *shell) runScript(script string, minusC bool) (status int) {
	f, err := parse(script)
	var late *lateSyntaxError
	if errors.As(err, &late) {
		s.lateError = late.msg
		return s.runFile(late.good)
	}
	if err != nil {
		s.syntaxError(err)
		return 2
	}
	if n := len(f.Stmts); minusC && n > 0 && !strings.Contains(script[min(int(f.Stmts[n-1].End().Offset()), len(script)):], "\n") {
		s.execTail = tailCall(f.Stmts[n-1])
	}
	return s.runFile(f)
}

// tailCall is the simple command ash execs when st is the last thing its shell runs: st
// itself, or the last of an && || list.
func tailCall(st *syntax.Stmt) *syntax.CallExpr {
	if st.Background || st.Negated {
		return nil
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		return c
	case *syntax.BinaryCmd:
		if c.Op == syntax.AndStmt || c.Op == syntax.OrStmt {
			return tailCall(c.Y)
		}
	}
	return nil
}

// runFile runs a parsed script, then the EXIT trap. A parked shell resumes here, f nil:
// its frame has the file.
func (s *shell) runFile(f *syntax.File) (status int) {
	fi, resumed := s.enter(frameScript)
	if resumed {
		f = s.frames[fi].node.(*syntax.File)
	} else {
		s.frames[fi].node = f
	}
	defer func() {
		if s.parking {
			return // the frames stay for the resumption; the panic unwinds on
		}
		if r := recover(); r != nil {
			status = exitedWith(r)
			s.status = status
		}
		s.leave(fi)
		s.noPark++ // the trap's place is on the Go stack only
		status = s.runExitTrap(status)
	}()
	s.stmts(f.Stmts)
	if s.lateError != "" {
		s.errorf("%s", s.lateError)
		panic(exitPanic(2))
	}
	return s.status
}

func (s *shell) runExitTrap(status int) int {
	cmd, ok := s.traps["EXIT"]
	if !ok || cmd == "" {
		return status
	}
	delete(s.traps, "EXIT")
	s.status = status
	defer func() {
		if r := recover(); r != nil {
			status = exitedWith(r)
		}
	}()
	s.eval(cmd)
	return status
}

func (s *shell) syntaxError(err error) {
	msg := err.Error()
	var pe syntax.ParseError
	var late *lateSyntaxError
	if errors.As(err, &late) {
		msg = late.msg
	} else if errors.As(err, &pe) {
		msg = fmt.Sprintf("line %d: syntax error: %s", pe.Pos.Line(), pe.Text)
	}
	fmt.Fprintf(s.p.Stderr(), "%s: %s\n", s.name, msg)
}

// errorf reports an error as ash does: prefixed with $0, the name the shell was invoked
// with ("/bin/sh: can't create /file: Read-only file system").
func (s *shell) errorf(format string, args ...any) {
	fmt.Fprintf(s.p.Stderr(), "%s: %s\n", s.name, fmt.Sprintf(format, args...))
}

// builtinError reports an error of builtin name as ash does, with the command's line:
// "sh: cd: line 0: can't cd to /x: No such file or directory".
func (s *shell) builtinError(name, format string, args ...any) {
	prefix := s.name + ": "
	if name != s.name {
		prefix += name + ": "
	}
	fmt.Fprintf(s.p.Stderr(), "%sline %d: %s\n", prefix, s.lineno, fmt.Sprintf(format, args...))
}

// evalAt runs src (eval's argument, a trap's action) as ash does, its lines counted from
// the running command's.
func (s *shell) evalAt(src string) {
	saved := s.lineBase
	s.lineBase = s.lineno - 1
	defer func() { s.lineBase = saved }()
	s.eval(src)
}

// eval runs a string of commands in this shell (eval, trap actions).
func (s *shell) eval(src string) {
	f, err := parse(src)
	if err != nil {
		s.syntaxError(err)
		s.status = 2
		return
	}
	s.stmts(f.Stmts)
}

func (s *shell) stmts(list []*syntax.Stmt) {
	fi, resumed := s.enter(frameStmts)
	start := 0
	if resumed {
		start = s.frames[fi].i
	}
	for i := start; i < len(list); i++ {
		if s.breakN > 0 || s.contN > 0 || s.returning {
			break
		}
		s.frames[fi].i = i
		s.stmt(list[i])
	}
	s.leave(fi)
}

// stopped reports whether break, continue or return is unwinding.
func (s *shell) stopped() bool { return s.breakN > 0 || s.contN > 0 || s.returning }

func (s *shell) stmt(st *syntax.Stmt) {
	fi, resumed := s.enter(frameStmt)
	var restore func()
	ok := true
	if resumed {
		// It parked inside its command: the redirections are in place, the condition
		// counted.
		restore = s.frames[fi].restore
		s.cmd(st.Cmd)
	} else {
		s.p.Tick()
		if st.Background {
			s.background(st)
			s.leave(fi)
			return
		}
		restore, ok = s.redirect(st.Redirs)
		s.frames[fi].restore = restore
		if ok {
			if st.Negated {
				s.inCond++
			}
			if st.Cmd != nil {
				s.cmd(st.Cmd)
			} else {
				s.status = 0
			}
		}
	}
	if ok && st.Negated {
		s.inCond--
	}
	if s.keepRedirs {
		s.keepRedirs = false
	} else {
		restore()
	}
	if st.Negated {
		s.status = boolStatus(s.status != 0)
	}
	s.leave(fi)
	// A list that failed before its last command does not end the shell under set -e.
	short := s.shortCircuit
	s.shortCircuit = false
	s.runTraps()
	if s.errexit && s.status != 0 && s.inCond == 0 && !st.Negated && !short && !s.stopped() {
		panic(exitPanic(s.status))
	}
}

func boolStatus(ok bool) int {
	if ok {
		return 0
	}
	return 1
}

// runTraps runs the actions of the trapped signals delivered since the last statement.
func (s *shell) runTraps() {
	for _, sig := range s.p.Pending() {
		name := signalName(sig)
		if cmd := s.traps[name]; cmd != "" {
			saved := s.status
			s.noPark++
			s.evalAt(cmd)
			s.noPark--
			s.status = saved
		}
	}
}

func signalName(sig int) string {
	for name, n := range SignalNames {
		if n == sig {
			return name
		}
	}
	return strconv.Itoa(sig)
}

func (s *shell) cmd(c syntax.Command) {
	switch c := c.(type) {
	case *syntax.CallExpr:
		s.call(c)
	case *syntax.Block:
		s.stmts(c.Stmts)
	case *syntax.Subshell:
		s.subshell(func(sub *shell) { sub.stmts(c.Stmts) })
	case *syntax.BinaryCmd:
		s.binary(c)
	case *syntax.IfClause:
		s.ifClause(c)
	case *syntax.WhileClause:
		s.whileClause(c)
	case *syntax.ForClause:
		s.forClause(c)
	case *syntax.CaseClause:
		s.caseClause(c)
	case *syntax.FuncDecl:
		if s.funcs == nil {
			s.funcs = map[string]*syntax.Stmt{}
		}
		s.funcs[c.Name.Value] = c.Body
		s.status = 0
	case *syntax.ArithmCmd:
		n, err := expand.Arithm(s.cfg(), c.X)
		if err != nil {
			s.errorf("arithmetic syntax error: %v", err)
			s.status = 2
			return
		}
		s.status = boolStatus(n != 0)
	case *syntax.LetClause:
		n := 0
		for _, x := range c.Exprs {
			var err error
			if n, err = expand.Arithm(s.cfg(), x); err != nil {
				s.errorf("let: %v", err)
				s.status = 2
				return
			}
		}
		s.status = boolStatus(n != 0)
	case *syntax.DeclClause:
		s.decl(c)
	case *syntax.TestClause:
		s.status = boolStatus(s.test(c.X))
	case *syntax.TimeClause:
		start := s.p.Now()
		if c.Stmt != nil {
			s.noPark++ // start is on the Go stack only
			s.stmt(c.Stmt)
			s.noPark--
		}
		d := s.p.Now().Sub(start)
		fmt.Fprintf(s.p.Stderr(), "real\t%dm%.2fs\nuser\t0m0.00s\nsys\t0m0.00s\n", int(d.Minutes()), d.Seconds()-60*float64(int(d.Minutes())))
	default:
		s.errorf("%T: not supported", c)
		s.status = 2
	}
}

func (s *shell) binary(c *syntax.BinaryCmd) {
	switch c.Op {
	case syntax.AndStmt, syntax.OrStmt:
		fi, resumed := s.enter(frameBinary)
		if !resumed || s.frames[fi].i == 0 {
			if !resumed {
				s.inCond++
			}
			s.stmt(c.X)
			s.inCond--
			if s.stopped() || (s.status == 0) != (c.Op == syntax.AndStmt) {
				s.shortCircuit = !s.stopped()
				s.leave(fi)
				return
			}
			s.frames[fi].i = 1
		}
		s.stmt(c.Y)
		s.leave(fi)
	case syntax.Pipe, syntax.PipeAll:
		s.pipeline(c)
	}
}

// pipeline runs each command of a | b | c in a subshell process of its own, connected by
// pipes, and waits for them all: the status is the last one's.
func (s *shell) pipeline(c *syntax.BinaryCmd) {
	var cmds []*syntax.Stmt
	var all []bool // |& : stderr too
	for {
		cmds = append(cmds, c.X)
		all = append(all, c.Op == syntax.PipeAll)
		y, ok := c.Y.Cmd.(*syntax.BinaryCmd)
		if !ok || len(c.Y.Redirs) > 0 || c.Y.Negated || c.Y.Background || (y.Op != syntax.Pipe && y.Op != syntax.PipeAll) {
			cmds = append(cmds, c.Y)
			break
		}
		c = y
	}
	var procs []*Proc
	var prevR *fd
	for i, st := range cmds {
		var r, w *fd
		if i < len(cmds)-1 {
			r, w = newPipe()
		}
		child, err := s.fork(st, func(c *Proc) {
			if prevR != nil {
				c.setFD(0, prevR.dup())
			}
			if w != nil {
				c.setFD(1, w.dup())
				if all[i] {
					c.setFD(2, w.dup())
				}
			}
		})
		if prevR != nil {
			prevR.close()
		}
		if w != nil {
			w.close()
		}
		prevR = r
		if err != nil {
			s.errorf("%v", err)
			if r != nil {
				r.close()
			}
			s.status = 2
			break
		}
		procs = append(procs, child)
	}
	if len(procs) > 0 {
		s.status = s.p.waitAll(procs)
		if s.pipefail {
			for _, c := range procs { // the last non-zero status
				if c.status != 0 {
					s.status = c.status
				}
			}
		}
		s.reap(procs)
	}
}

// fork starts st in a subshell process, its descriptors set up by setup.
func (s *shell) fork(st *syntax.Stmt, setup func(*Proc)) (*Proc, error) {
	sub := s.clone()
	child, err := s.p.forkProc(func(c *Proc) int {
		sub.p = c
		return sub.runForked(st)
	})
	if err != nil {
		return nil, err
	}
	if setup != nil {
		setup(child)
	}
	return child, nil
}

// runForked runs st as a forked subshell's program (a background job, a command of a
// pipeline): exit ends only the subshell. A parked one resumes here, st nil: its frame
// has it.
func (s *shell) runForked(st *syntax.Stmt) (status int) {
	fi, resumed := s.enter(frameForked)
	if resumed {
		st = s.frames[fi].node.(*syntax.Stmt)
	} else {
		s.traps = nil
		s.inProcess = false // a forked child: an exec replaces it
		s.frames[fi].node = st
		s.execTail = tailCall(st)
	}
	defer func() {
		if s.parking {
			return // the frames stay for the resumption; the panic unwinds on
		}
		if r := recover(); r != nil {
			status = exitedWith(r)
		}
		s.leave(fi)
	}()
	s.stmt(st)
	return s.status
}

// runSub runs f as a subshell's body: exit ends only the subshell, its EXIT trap runs.
func (s *shell) runSub(f func(*shell)) (status int) {
	s.traps = nil
	s.inProcess = true
	defer func() {
		if r := recover(); r != nil {
			status = exitedWith(r)
		}
	}()
	f(s)
	return s.status
}

// subshell runs f in a copy of the shell in this process: ( ... ) changes nothing outside.
func (s *shell) subshell(f func(*shell)) {
	sub := s.clone()
	dir := s.p.dir
	env := s.p.env
	s.status = sub.runSub(f)
	sub.release()
	s.p.dir, s.p.env = dir, env
}

func (s *shell) clone() *shell {
	c := *s
	c.ecfg = nil // its Env is the clone
	c.vars = s.vars.clone()
	c.funcs = maps.Clone(s.funcs)
	c.traps = maps.Clone(s.traps)
	c.params = slices.Clone(s.params)
	c.jobs = nil
	c.execTail, c.execNow = nil, false
	c.breakN, c.contN, c.returning = 0, 0, false
	c.frames, c.resumeAt, c.parking = nil, 0, false // a copy has no place of its own to resume
	c.inherited, c.charged = s.vars.bytes+s.savedBytes+s.paramBytes, 0
	return &c
}

func (s *shell) background(st *syntax.Stmt) {
	plain := *st
	plain.Background = false
	child, err := s.fork(&plain, func(c *Proc) {
		if c.fds[0].kind == fdOutput || c.fds[0] == s.p.fds[0] {
			c.fds[0].close()
			c.fds[0] = &fd{kind: fdNull, refs: 1} // a background job reads /dev/null
		}
	})
	if err != nil {
		s.errorf("%v", err)
		s.status = 2
		return
	}
	// Its job number is the lowest no job of the shell has, as ash numbers them.
	child.jobNo = 1
	for taken := true; taken; {
		taken = false
		for _, j := range s.jobs {
			if j.jobNo == child.jobNo {
				child.jobNo++
				taken = true
			}
		}
	}
	s.jobs = append(s.jobs, child)
	s.lastBG = child.pid
	s.status = 0
}

func (s *shell) ifClause(c *syntax.IfClause) {
	fi, resumed := s.enter(frameIf)
	defer s.leaveUnlessParking(fi)
	phase := 0 // 1 in the condition, 2 in the branch
	if resumed {
		for range s.frames[fi].i {
			c = c.Else
		}
		phase = s.frames[fi].n
	}
	for ; c != nil; c, phase = c.Else, 0 {
		if len(c.Cond) == 0 { // else
			s.frames[fi].n = 2
			s.stmts(c.Then)
			return
		}
		if phase < 2 {
			if phase == 0 {
				s.inCond++
				s.frames[fi].n = 1
			}
			s.stmts(c.Cond)
			s.inCond--
			if s.stopped() {
				return
			}
			if s.status != 0 {
				s.frames[fi].i++
				continue
			}
		}
		s.frames[fi].n = 2
		s.stmts(c.Then)
		return
	}
	s.status = 0
}

// loopBody runs a loop's body and reports whether the loop goes on.
func (s *shell) loopBody(body []*syntax.Stmt) bool {
	s.stmts(body)
	switch {
	case s.breakN > 0:
		s.breakN--
		return false
	case s.contN > 1:
		s.contN--
		s.breakN = 0
		return false
	case s.contN == 1:
		s.contN = 0
	}
	return !s.returning
}

func (s *shell) whileClause(c *syntax.WhileClause) {
	fi, resumed := s.enter(frameWhile)
	status, phase := 0, 0 // phase: 1 in the condition, 2 in the body
	if resumed {
		status, phase = s.frames[fi].n, s.frames[fi].i
	}
	for ; ; phase = 0 {
		if phase < 2 {
			if phase == 0 {
				s.p.Tick()
				s.inCond++
				s.frames[fi].i = 1
			}
			s.stmts(c.Cond)
			s.inCond--
			if s.stopped() {
				if s.breakN > 0 {
					s.breakN--
				}
				break
			}
			if (s.status == 0) == c.Until {
				break
			}
			s.frames[fi].i = 2
		}
		more := s.loopBody(c.Do)
		status = s.status
		s.frames[fi].n = status
		if !more {
			break
		}
	}
	s.status = status
	s.leave(fi)
}

func (s *shell) forClause(c *syntax.ForClause) {
	switch loop := c.Loop.(type) {
	case *syntax.WordIter:
		fi, resumed := s.enter(frameFor)
		defer s.leaveUnlessParking(fi)
		items, start := s.params, 0
		if resumed {
			items, start = s.frames[fi].params, s.frames[fi].i
		} else {
			if loop.InPos.IsValid() {
				var ok bool
				if items, ok = s.fields(loop.Items...); !ok {
					return
				}
			}
			s.status = 0
			s.frames[fi].params = items
		}
		for i := start; i < len(items); i++ {
			if !resumed || i != start { // a resumed one is in its body
				s.p.Tick()
				if !s.assign(loop.Name.Value, items[i]) {
					return
				}
			}
			s.frames[fi].i = i
			if !s.loopBody(c.Do) {
				break
			}
		}
	case *syntax.CStyleLoop:
		fi, resumed := s.enter(frameFor)
		defer s.leaveUnlessParking(fi)
		if !resumed {
			if loop.Init != nil {
				if _, err := expand.Arithm(s.cfg(), loop.Init); err != nil {
					s.errorf("arithmetic syntax error: %v", err)
					s.status = 2
					return
				}
			}
			s.status = 0
		}
		for ; ; resumed = false {
			if !resumed { // a resumed one is in its body
				s.p.Tick()
				if loop.Cond != nil {
					n, err := expand.Arithm(s.cfg(), loop.Cond)
					if err != nil || n == 0 {
						break
					}
				}
			}
			if !s.loopBody(c.Do) {
				break
			}
			if loop.Post != nil {
				if _, err := expand.Arithm(s.cfg(), loop.Post); err != nil {
					break
				}
			}
		}
	}
}

func matchPattern(pat, s string) bool {
	re := caseCache.compiled(pat, pattern.EntireString)
	if re == nil {
		return pat == s
	}
	return re.MatchString(s)
}

func (s *shell) caseClause(c *syntax.CaseClause) {
	fi, resumed := s.enter(frameCase)
	defer s.leaveUnlessParking(fi)
	var word string
	start := 0
	if resumed {
		word, start = s.frames[fi].word, s.frames[fi].i
	} else {
		var err error
		if word, err = expand.Literal(s.cfg(), c.Word); err != nil {
			s.expandError(err)
			return
		}
		s.status = 0
		s.frames[fi].word = word
	}
	for i := start; i < len(c.Items); i++ {
		if !resumed || i != start { // a resumed one is in this item's body
			matched, ok := s.caseMatch(c.Items[i], word)
			if !ok {
				return
			}
			if !matched {
				continue
			}
		}
		// ;& falls through to the next item's body; ;;& tests the next patterns.
		for {
			s.frames[fi].i = i
			s.stmts(c.Items[i].Stmts)
			if c.Items[i].Op != syntax.Fallthrough || i+1 >= len(c.Items) {
				break
			}
			i++
		}
		if c.Items[i].Op != syntax.Resume {
			return
		}
	}
}

// caseMatch reports whether one of item's patterns matches word; ok false after an
// expansion error (reported).
func (s *shell) caseMatch(item *syntax.CaseItem, word string) (matched, ok bool) {
	for _, pw := range item.Patterns {
		pat, err := expand.Pattern(s.cfg(), pw)
		if err != nil {
			s.expandError(err)
			return false, false
		}
		if matchPattern(pat, word) {
			return true, true
		}
	}
	return false, true
}

// cfg is the expansion configuration: a fresh one per expansion, as expand keeps state in
// it and a command substitution expands again inside an expansion.
// cfg is the shell's expansion configuration. It is made once per shell and reused, as
// mvdan's interp keeps its own: an expand.Config is a kilobyte, and a loop expands its
// words at every turn. A command substitution runs in a clone, with its own.
func (s *shell) cfg() *expand.Config {
	s.p.releaseTransient() // what the last expansion copied is kept by now, or dropped
	if s.ecfg == nil {
		// The method values are made once a shell: each is an allocation.
		s.ecfg = &expand.Config{Env: (*environ)(s), CmdSubst: s.cmdSubst, ReadDir2: s.readDir}
	}
	s.ecfg.NoUnset = s.nounset
	return s.ecfg
}

func (s *shell) readDir(dir string) ([]fs.DirEntry, error) {
	if s.noglob {
		return nil, nil
	}
	entries, err := s.p.FS().ReadDir(s.p.Abs(dir))
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = e
	}
	return out, nil
}

// cmdSubst runs $(...) in a subshell in this process, its output captured.
func (s *shell) cmdSubst(w io.Writer, cs *syntax.CmdSubst) error {
	buf := limitedBuffer{p: s.p}
	out := &fd{kind: fdOutput, out: &buf, refs: 1}
	saved := s.p.fds[1]
	s.p.fds[1] = out
	sub := s.clone()
	status := sub.runSub(func(sub *shell) { sub.stmts(cs.Stmts) })
	sub.release()
	s.p.fds[1] = saved
	s.substStatus = status
	s.status = status
	// The output becomes part of the expansion's value: charged as the expansion's copy.
	s.p.Charge(-int64(buf.Len()))
	s.p.chargeTransient(int64(buf.Len()))
	_, err := w.Write(buf.Bytes())
	return err
}

// limitedBuffer keeps at most MaxOutput bytes, charged to p as they come.
type limitedBuffer struct {
	bytes.Buffer
	p *Proc
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	n := min(len(p), max(MaxOutput-b.Len(), 0))
	b.p.Charge(int64(n))
	b.Buffer.Write(p[:n])
	return len(p), nil
}

// fields expands words into fields; on an error it reports it and sets the status.
func (s *shell) fields(words ...*syntax.Word) ([]string, bool) {
	if mvdanFieldsOnly {
		return s.mvdanFields(words)
	}
	s.p.releaseTransient() // what the last expansion copied is kept by now, or dropped
	// Word by word, in order: the simple ones here (simpleWord), the others by mvdan's
	// expander, each as it would expand among the rest.
	out := make([]string, 0, len(words))
	for i, w := range words {
		if f, ok := s.simpleWord(w, out); ok {
			out = f
			continue
		}
		// In its place among the others: expansions with effects (${x:=v}, $(...)) run in
		// the words' order, and an error stops the rest, as when mvdan expands them all.
		rest, ok := s.mvdanFields(words[i : i+1])
		if !ok {
			return nil, false
		}
		out = append(out, rest...)
	}
	return out, true
}

// mvdanFields expands words with mvdan's expander, splitting on a non-white IFS as ash.
func (s *shell) mvdanFields(words []*syntax.Word) ([]string, bool) {
	cfg := s.cfg()
	if s.noglob {
		// No globbing at all, rather than globs that match nothing (readDir): a word's
		// pattern characters stay as they are, and no pattern is compiled.
		c := *cfg
		c.ReadDir2 = nil
		cfg = &c
	}
	ifs := s.ifs()
	if !nonWhiteIFS(ifs) {
		out, err := expand.Fields(cfg, words...)
		if err != nil {
			s.expandError(err)
			return nil, false
		}
		return out, true
	}
	// Word by word, so that expansions run in order (split.go).
	var out []string
	for _, w := range words {
		ws := []*syntax.Word{w}
		if splittable(w) {
			var err error
			if ws, err = s.splitWord(cfg, ifs, w); err != nil {
				s.expandError(err)
				return nil, false
			}
		}
		f, err := expand.Fields(cfg, ws...)
		if err != nil {
			s.expandError(err)
			return nil, false
		}
		out = append(out, f...)
	}
	return out, true
}

// ifs is $IFS: space, tab and newline when it is unset.
func (s *shell) ifs() string {
	v, ok := s.vars.lookup("IFS")
	if !ok || !v.IsSet() {
		return " \t\n"
	}
	return v.String()
}

func (s *shell) expandError(err error) {
	var ue expand.UnsetParameterError
	if errors.As(err, &ue) {
		// ${NAME?message} says message; set -u's error (mvdan's "unbound variable") and a
		// bare ${NAME?} are ash's "parameter not set".
		msg := ue.Message
		if msg == "" || msg == "unbound variable" {
			msg = "parameter not set"
		}
		s.errorf("%s: %s", ue.Node.Param.Value, msg)
		panic(exitPanic(2)) // a non-interactive shell exits on an unset variable under -u
	}
	if err.Error() == "division by zero" {
		s.errorf("divide by zero") // ash's words; an arithmetic error ends the shell
		panic(exitPanic(2))
	}
	var re readonlyError
	if errors.As(err, &re) {
		s.errorf("%v", err)
		s.status = 2
		return
	}
	s.errorf("%v", err)
	s.status = 2
}

// call runs a simple command: assignments, then a function, builtin or program.
func (s *shell) call(ce *syntax.CallExpr) {
	fi, resumed := s.enter(frameCall)
	if resumed {
		defer s.endCall(fi)
		s.run(nil)
		return
	}
	s.substStatus = 0
	s.lineno = int(ce.Pos().Line()) + s.lineBase
	fields, ok := s.fields(ce.Args...)
	if !ok {
		return
	}
	if len(fields) == 0 {
		if s.xtrace && len(ce.Assigns) > 0 {
			s.traceAssigns(ce.Assigns)
		}
		for _, as := range ce.Assigns {
			if !s.assignExpr(as, false) {
				panic(exitPanic(s.status)) // a failed assignment ends a non-interactive shell
			}
		}
		s.status = s.substStatus
		s.leave(fi)
		return
	}
	if s.xtrace {
		words := make([]string, len(fields))
		for i, f := range fields {
			words[i] = traceQuote(f, true)
		}
		fmt.Fprintf(s.p.Stderr(), "+ %s\n", strings.Join(words, " "))
	}
	// Assignments before a command are its environment only (a function or regular builtin
	// sees them too, and forgets them after).
	var saved []savedVar
	for _, as := range ce.Assigns {
		saved = append(saved, savedVar{as.Name.Value, s.vars.get(as.Name.Value)})
		s.savedBytes += varBytes(saved[len(saved)-1].name, &saved[len(saved)-1].v)
		if !s.assignExpr(as, true) {
			s.restoreVars(saved)
			s.leave(fi)
			return
		}
	}
	s.frames[fi].saved = saved
	defer s.endCall(fi)
	s.execNow = ce == s.execTail && len(s.traps) == 0
	s.run(fields)
}

// traceAssigns prints set -x's line for assignments without a command: "+ y=2".
func (s *shell) traceAssigns(assigns []*syntax.Assign) {
	words := make([]string, 0, len(assigns))
	for _, as := range assigns {
		v := ""
		if as.Value != nil {
			v, _ = expand.Literal(s.cfg(), as.Value)
		}
		words = append(words, as.Name.Value+"="+traceQuote(v, false))
	}
	fmt.Fprintf(s.p.Stderr(), "+ %s\n", strings.Join(words, " "))
}

// traceQuote is a word as set -x shows it, as ash quotes it: in single quotes when it
// has a character other than + , - . / 0-9 : @ A-Z ] ^ _ a-z, or (a command's word) is
// a reserved word ("+ echo 'in' f").
func traceQuote(w string, command bool) string {
	if command && ashKeywords[w] {
		return singleQuote(w)
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c < '+' || c >= ';' && c <= '?' || c == '`' || c == '[' || c == '\\' || c > 'z' {
			return singleQuote(w)
		}
	}
	return w
}

var ashKeywords = map[string]bool{"!": true, "case": true, "do": true, "done": true, "elif": true, "else": true,
	"esac": true, "fi": true, "for": true, "function": true, "if": true, "in": true, "then": true, "until": true,
	"while": true, "{": true, "}": true}

// singleQuote quotes s as ash's single_quote: runs of ' in double quotes, the rest in
// single quotes ("it's" is 'it'"'"'s').
func singleQuote(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			i = len(s)
		}
		b.WriteString("'" + s[:i] + "'")
		s = s[i:]
		if s == "" {
			return b.String()
		}
		j := 0
		for j < len(s) && s[j] == '\'' {
			j++
		}
		b.WriteString(`"` + s[:j] + `"`)
		s = s[j:]
		if s == "" {
			return b.String()
		}
	}
}

// endCall ends call's frame i, its assignments undone (also when a command exits, for the
// EXIT trap), unless the shell parks: they last until the command resumes and ends.
func (s *shell) endCall(i int) {
	if s.parking {
		return
	}
	s.restoreVars(s.frames[i].saved)
	s.leave(i)
}

type savedVar struct {
	name string
	v    expand.Variable
}

func (s *shell) restoreVars(saved []savedVar) {
	for i := len(saved) - 1; i >= 0; i-- {
		if saved[i].v.Declared() {
			s.vars.set(saved[i].name, saved[i].v)
		} else {
			s.vars.del(saved[i].name)
		}
	}
	if len(saved) > 0 {
		s.envCache = nil
		s.savedBytes = max(s.savedBytes-savedSize(saved), 0)
		s.account()
	}
}

// run runs argv: a function, a builtin, a no-fork applet or a program in a child process.
func (s *shell) run(argv []string) {
	execNow := s.execNow
	s.execNow = false
	fi, resumed := s.enter(frameRun)
	if resumed {
		switch s.frames[fi].i {
		case runFunc:
			s.callFunc(nil, nil)
		case runInPlace, runWait:
			kind := s.frames[fi].i
			s.status = s.resumed()
			if kind == runInPlace {
				s.reap(nil) // the sleep that parked
			}
		}
		s.leave(fi)
		return
	}
	name := argv[0]
	if body, ok := s.funcs[name]; ok {
		s.frames[fi].i = runFunc
		s.callFunc(body, argv)
		s.leave(fi)
		return
	}
	if name == "wait" { // a builtin that parks (background jobs and a trap, as in sleep infinity & wait)
		s.frames[fi].i = runWait
		if jobs, status, ok := s.waitJobs(argv); !ok {
			s.status = status
		} else {
			if !allExited(jobs) {
				s.parkWaiting(argv, jobs) // returns only if the shell cannot park here
			}
			s.status = s.waited(argv, s.p.Wait(jobs...))
		}
		s.leave(fi)
		return
	}
	if b, ok := builtins[name]; ok {
		s.noPark++ // eval, ., exec...: their places are on the Go stack only
		s.status = b(s, argv)
		s.noPark--
		s.leave(fi)
		return
	}
	if noFork[name] && s.p.traps == 0 {
		if prog := s.p.m.program(name); prog != nil && s.inPath(name) {
			s.frames[fi].i = runInPlace
			s.p.parker = s
			if appletBuiltins[name] {
				s.p.builtinOf = s.name
			}
			s.status = s.p.runInPlace(prog, argv, s.environ())
			s.p.parker, s.p.builtinOf = nil, ""
			if !appletBuiltins[name] && name != "true" && name != "false" {
				s.reap(nil) // busybox's sleep is a child the shell waits for
			}
			s.leave(fi)
			return
		}
	}
	s.external(argv, execNow)
	s.leave(fi)
}

// noFork are the applets busybox's shell runs without a new process: they cannot tell.
// sleep is one of them here, so that a loop that sleeps costs one coroutine, not two; it
// forks when the shell traps a signal, so the trap waits for it as it would for a child.
var noFork = map[string]bool{"echo": true, "printf": true, "test": true, "[": true, "sleep": true, "true": true, "false": true}

// inPath reports whether name is an executable of the image (an image without echo has
// no no-fork echo either).
func (s *shell) inPath(name string) bool {
	_, _, _, err := s.p.m.resolve([]string{name}, s.vars.get("PATH").Str, s.p.dir)
	return err == nil
}

// external runs argv as a child and waits for it. exec: the command is one ash would exec
// (execTail), so that the signal killing it kills the shell too, which says nothing.
func (s *shell) external(argv []string, exec bool) {
	child, err := s.p.StartChild(Spec{Argv: argv, Env: s.environ()})
	if err != nil {
		s.status = s.p.execFailed(s.name, argv[0], err)
		if errors.Is(err, errFork) {
			s.status = 2
		}
		return
	}
	job := []*Proc{child}
	s.status = s.p.waitAll(job)
	if exec && child.signaled != 0 {
		s.p.signaled = child.signaled
		job = nil
	}
	s.reap(job)
}

// reap ends a wait for a foreground job: ash prints, on stderr, what killed a process of
// the job (strsignal's words: "Terminated", "Killed"; not for SIGINT and SIGPIPE), and has
// reaped the background jobs that ended meanwhile, so that their wait is silent.
func (s *shell) reap(job []*Proc) {
	for _, c := range job {
		s.notice(c)
	}
	for _, j := range s.jobs {
		if j.exited {
			j.reaped = true
			j.collected = true // waitpid took it: gone from the process table, kept as a job
		}
	}
}

// notice prints what killed c, if a signal did.
func (s *shell) notice(c *Proc) {
	if sig := c.signaled; sig != 0 && sig != SIGINT && sig != SIGPIPE {
		fmt.Fprintf(s.p.Stderr(), "%s\n", strsignal(sig))
	}
}

// strsignal is glibc's strsignal: what a signal is called in the shell's notices.
func strsignal(sig int) string {
	if sig > 0 && sig < len(signalText) {
		return signalText[sig]
	}
	if sig >= 34 && sig <= 64 {
		return "Real-time signal " + strconv.Itoa(sig-34)
	}
	return "Unknown signal " + strconv.Itoa(sig)
}

var signalText = [...]string{1: "Hangup", "Interrupt", "Quit", "Illegal instruction", "Trace/breakpoint trap",
	"Aborted", "Bus error", "Floating point exception", "Killed", "User defined signal 1",
	"Segmentation fault", "User defined signal 2", "Broken pipe", "Alarm clock", "Terminated",
	"Stack fault", "Child exited", "Continued", "Stopped (signal)", "Stopped", "Stopped (tty input)",
	"Stopped (tty output)", "Urgent I/O condition", "CPU time limit exceeded", "File size limit exceeded",
	"Virtual timer expired", "Profiling timer expired", "Window changed", "I/O possible", "Power failure",
	"Bad system call"}

// callFunc runs a function's body; resuming (body nil), the function's frame has it.
func (s *shell) callFunc(body *syntax.Stmt, argv []string) {
	fi, resumed := s.enter(frameFunc)
	if resumed {
		body = s.frames[fi].node.(*syntax.Stmt)
	} else {
		if s.depth >= MaxFuncDepth {
			s.errorf("%s: maximum function nesting level exceeded (%d)", argv[0], MaxFuncDepth)
			panic(exitPanic(2))
		}
		s.frames[fi].params, s.frames[fi].node = s.params, body
		s.setParams(argv[1:])
		s.depth++
		s.localFrames = append(s.localFrames, new([]savedVar))
	}
	s.stmt(body)
	locals := s.localFrames[len(s.localFrames)-1]
	s.localFrames = s.localFrames[:len(s.localFrames)-1]
	s.restoreVars(*locals)
	s.depth--
	s.setParams(s.frames[fi].params)
	s.returning = false
	s.leave(fi)
}

// environ is the environment a program started by the shell gets: exported variables.
func (s *shell) environ() []string {
	if s.envCache != nil {
		return s.envCache
	}
	env := make([]string, 0, len(s.vars.vars)+len(s.extraEnv))
	env = append(env, s.extraEnv...)
	inherited := s.p.Environ()
	s.vars.each(func(name string, v expand.Variable) bool {
		if v.Exported && v.IsSet() {
			env = append(env, entry(inherited, name, v.String()))
		}
		return true
	})
	s.envCache = env
	return env
}

// entry is "name=value", the string of env when it has it (a sleeping shell keeps its
// children's environment, mostly what it inherited), else a new one.
func entry(env []string, name, value string) string {
	for _, kv := range env {
		if len(kv) == len(name)+1+len(value) && kv[len(name)] == '=' && strings.HasPrefix(kv, name) && strings.HasSuffix(kv, value) {
			return kv
		}
	}
	return name + "=" + value
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && (i == 0 || !(c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

type readonlyError struct{ name string }

func (e readonlyError) Error() string { return e.name + ": is read only" }

// setVar sets a variable, keeping its attributes unless vr sets them.
func (s *shell) setVar(name string, vr expand.Variable) error {
	old, had := s.vars.lookup(name)
	if old.ReadOnly && had {
		return readonlyError{name}
	}
	if had {
		vr.Exported = vr.Exported || old.Exported
		vr.ReadOnly = vr.ReadOnly || old.ReadOnly
	}
	if vr.Kind == expand.KeepValue {
		old.Exported, old.ReadOnly, old.Local = vr.Exported, vr.ReadOnly, vr.Local
		vr = old
	}
	s.vars.set(name, vr)
	s.envCache = nil
	s.account()
	return nil
}

// assign sets a string variable, reporting a read-only one.
func (s *shell) assign(name, value string) bool {
	if err := s.setVar(name, expand.Variable{Set: true, Kind: expand.String, Str: value}); err != nil {
		s.errorf("%v", err)
		s.status = 2
		return false
	}
	return true
}

func (s *shell) assignExpr(as *syntax.Assign, export bool) bool {
	name := as.Name.Value
	if as.Array != nil {
		var list []string
		for _, el := range as.Array.Elems {
			f, ok := s.fields(el.Value)
			if !ok {
				return false
			}
			list = append(list, f...)
		}
		if err := s.setVar(name, expand.Variable{Set: true, Kind: expand.Indexed, List: list, Exported: export}); err != nil {
			s.errorf("%v", err)
			s.status = 2
			return false
		}
		return true
	}
	value := ""
	if as.Value != nil {
		v, err := expand.Literal(s.cfg(), as.Value)
		if err != nil {
			s.expandError(err)
			return false
		}
		value = v
	}
	if as.Append {
		value = s.vars.get(name).String() + value
	}
	if err := s.setVar(name, expand.Variable{Set: true, Kind: expand.String, Str: value, Exported: export}); err != nil {
		s.errorf("%v", err)
		s.status = 2
		return false
	}
	return true
}

func (s *shell) decl(c *syntax.DeclClause) {
	variant := c.Variant.Value
	s.status = 0
	s.lineno = int(c.Pos().Line()) + s.lineBase
	for _, as := range c.Args {
		if as.Name == nil {
			// declare -x NAME style flags arrive as values without a name.
			continue
		}
		name := as.Name.Value
		if variant == "local" && len(s.localFrames) == 0 {
			s.builtinError("local", "not in a function")
			panic(exitPanic(2)) // as a special builtin's error, it ends the shell
		}
		if variant == "local" && len(s.localFrames) > 0 {
			frame := s.localFrames[len(s.localFrames)-1]
			*frame = append(*frame, savedVar{name, s.vars.get(name)})
			s.savedBytes += varBytes(name, &(*frame)[len(*frame)-1].v)
		}
		if !as.Naked {
			if !s.assignExpr(as, false) {
				return
			}
		} else if variant == "local" {
			s.vars.del(name)
		}
		vr := expand.Variable{Kind: expand.KeepValue}
		switch variant {
		case "export":
			vr.Exported = true
		case "readonly":
			vr.ReadOnly = true
		}
		if vr.Exported || vr.ReadOnly {
			if err := s.setVar(name, vr); err != nil {
				s.errorf("%v", err)
				s.status = 2
			}
		}
	}
	if len(c.Args) == 0 && (variant == "export" || variant == "readonly") {
		s.vars.each(func(name string, v expand.Variable) bool {
			if variant == "export" && v.Exported || variant == "readonly" && v.ReadOnly {
				fmt.Fprintf(s.p.Stdout(), "%s %s=%s\n", variant, name, shellQuote(v.String()))
			}
			return true
		})
	}
}

func shellQuote(v string) string {
	if q, err := syntax.Quote(v, syntax.LangPOSIX); err == nil {
		if q == v {
			return "'" + v + "'"
		}
		return q
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// test evaluates [[ ... ]].
func (s *shell) test(x syntax.TestExpr) bool {
	switch x := x.(type) {
	case *syntax.Word:
		v, err := expand.Literal(s.cfg(), x)
		if err != nil {
			s.expandError(err)
			return false
		}
		return v != ""
	case *syntax.ParenTest:
		return s.test(x.X)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsNot {
			return !s.test(x.X)
		}
		w, ok := x.X.(*syntax.Word)
		if !ok {
			return false
		}
		v, err := expand.Literal(s.cfg(), w)
		if err != nil {
			s.expandError(err)
			return false
		}
		return s.testProgram([]string{"test", x.Op.String(), v})
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.AndTest:
			return s.test(x.X) && s.test(x.Y)
		case syntax.OrTest:
			return s.test(x.X) || s.test(x.Y)
		}
		lw, _ := x.X.(*syntax.Word)
		rw, _ := x.Y.(*syntax.Word)
		if lw == nil || rw == nil {
			return false
		}
		left, err := expand.Literal(s.cfg(), lw)
		if err != nil {
			s.expandError(err)
			return false
		}
		switch x.Op {
		case syntax.TsMatch, syntax.TsMatchShort, syntax.TsNoMatch:
			pat, err := expand.Pattern(s.cfg(), rw)
			if err != nil {
				s.expandError(err)
				return false
			}
			return matchPattern(pat, left) == (x.Op != syntax.TsNoMatch)
		case syntax.TsReMatch:
			right, err := expand.Literal(s.cfg(), rw)
			if err != nil {
				return false
			}
			re, err := regexp.Compile(right)
			if err != nil {
				return false
			}
			m := re.FindStringSubmatch(left)
			if m != nil {
				_ = s.setVar("BASH_REMATCH", expand.Variable{Set: true, Kind: expand.Indexed, List: m})
			}
			return m != nil
		case syntax.TsBefore:
			right, _ := expand.Literal(s.cfg(), rw)
			return left < right
		case syntax.TsAfter:
			right, _ := expand.Literal(s.cfg(), rw)
			return left > right
		}
		right, err := expand.Literal(s.cfg(), rw)
		if err != nil {
			return false
		}
		return s.testProgram([]string{"test", left, x.Op.String(), right})
	}
	return false
}

// testProgram runs the image's test applet in place, for [[ ]]'s file and number tests.
func (s *shell) testProgram(argv []string) bool {
	prog := s.p.m.program("test")
	if prog == nil {
		s.errorf("[[: test is not available")
		return false
	}
	return s.p.runInPlace(prog, argv, s.environ()) == 0
}
