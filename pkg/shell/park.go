package shell

import (
	"fmt"
	"sync"
)

// A shell parks: when its no-fork sleep is the last thing it waits for and everything it
// is in the middle of (the script or a forked subshell's command, statement lists, loops,
// if and case branches, && and ||, function calls, simple commands) keeps its place in
// frames on the heap, the process gives up its coroutine until the sleep ends, and the
// shell then re-enters the same frames on a worker. A shell in its wait builtin parks the
// same way until its jobs end or a trapped signal comes. A loop that sleeps, what most
// containers run, then costs no goroutine stack (8 KiB) while it sleeps. Anything whose
// place is only on the Go stack (a builtin such as eval or ., a trap action, a command
// substitution, a ( ) subshell run in the shell's own process, time) sets noPark or has
// no root frame: the sleep then waits on the coroutine as before.

// frameKind is which function of the walk a frame belongs to.
type frameKind uint8

const (
	frameScript frameKind = iota + 1
	frameForked
	frameStmts
	frameStmt
	frameWhile
	frameFor
	frameIf
	frameCase
	frameBinary
	frameCall
	frameFunc
	frameRun
)

// frame is the place of one function of the walk: what it needs, beyond the shell's
// variables and the syntax tree its caller passes again, to go on from where it was.
type frame struct {
	kind frameKind
	// i: stmts, the statement; while, 1 in its condition and 2 in its body; for, the
	// item (a C-style loop: 1 in the body); if, the clause; case, the item; && and ||,
	// 1 in the right side; run, the branch taken (runFunc, runInPlace).
	i int
	// n: while, the loop's status so far; if, 1 in the condition and 2 in the branch.
	n       int
	restore func()     // stmt: undoes its redirections
	saved   []savedVar // call: the variables its assignments replaced
	params  []string   // func: the caller's positional parameters; for: the words
	node    any        // script: its *syntax.File; func: the body
	word    string     // case: the word matched
}

const (
	runFunc = iota + 1
	runInPlace
	runWait // the wait builtin
)

// enter starts frame k of the walk and returns its index. While a parked shell resumes,
// the frame is already there (resumed true) and holds the place to go on from.
func (s *shell) enter(k frameKind) (i int, resumed bool) {
	if s.resumeAt > 0 {
		i = s.resumeAt - 1
		if i >= len(s.frames) || s.frames[i].kind != k {
			panic(fmt.Sprintf("shell: resuming a parked shell: frame %d is not a %d", i, k))
		}
		s.resumeAt++
		return i, true
	}
	if s.frames == nil {
		s.frames = (*framePool.Get().(*[]frame))[:0]
	}
	s.frames = append(s.frames, frame{kind: k})
	return len(s.frames) - 1, false
}

// leave ends frame i and those above it. Leaving the first frame ends the walk: its stack
// goes back to the pool.
func (s *shell) leave(i int) {
	clear(s.frames[i:])
	s.frames = s.frames[:i]
	if i == 0 {
		f := s.frames
		s.frames = nil
		framePool.Put(&f)
	}
}

// framePool holds the frame stacks of ended walks: every command substitution and
// subshell walks its own, and growing each from nothing was a tenth of what a node's
// starting containers allocate.
var framePool = sync.Pool{New: func() any {
	f := make([]frame, 0, 16)
	return &f
}}

// park is called (through Proc.parker) by a no-fork applet's SleepThenExit: it reports
// whether the shell can go on later from its frames, and if so returns the program that
// does, the applet's status being status.
func (s *shell) park(status int) (Program, bool) {
	if !s.canPark(runInPlace) {
		return nil, false
	}
	s.parking = true
	s.leafStatus = status
	return s.resume, true
}

// canPark reports whether the shell's walk, now at a run frame taking branch, is all on
// the heap.
func (s *shell) canPark(branch int) bool {
	n := len(s.frames)
	return s.noPark == 0 && n > 0 && (s.frames[0].kind == frameScript || s.frames[0].kind == frameForked) &&
		s.frames[n-1].kind == frameRun && s.frames[n-1].i == branch
}

// parkWaiting parks the shell in its wait builtin until jobs have exited or a trapped
// signal ends the wait (as Proc.Wait); it returns only when the shell cannot park.
func (s *shell) parkWaiting(argv []string, jobs []*Proc) {
	if !s.canPark(runWait) || !s.p.ownProgramCanPark() {
		return
	}
	s.parking = true
	s.p.parkWaiting(jobs, func(p *Proc, status int) int {
		s.leafStatus = s.waited(argv, status)
		return s.resume(p)
	})
}

// resume goes on with a parked shell: it re-enters its frames down to the no-fork
// applet, which returns the status it parked with, and runs on from there.
func (s *shell) resume(p *Proc) int {
	s.parking = false
	s.resumeAt = 1
	if s.frames[0].kind == frameForked {
		return s.runForked(nil)
	}
	return s.runFile(nil)
}

// resumed ends a resumption at the applet that parked: the walk runs on from here.
func (s *shell) resumed() int {
	s.resumeAt = 0
	return s.leafStatus
}

// leaveUnlessParking is leave for a deferred call: a parking shell keeps its frames.
func (s *shell) leaveUnlessParking(i int) {
	if !s.parking {
		s.leave(i)
	}
}
