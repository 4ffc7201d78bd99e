package shell

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minikubelet/minikubelet/pkg/memcg"
	"github.com/minikubelet/minikubelet/pkg/simnet"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// Program is what an executable does: it runs on its process (reading, writing, sleeping
// through p) and returns its exit status. It runs as a coroutine: p's blocking calls
// (Sleep, reading an empty pipe) give control back to the machine's Step, which resumes
// the program when what it waits for has happened, so a program that sleeps costs nothing
// until it wakes and never holds up the caller of Step.
type Program func(p *Proc) int

// Limits bound what a container's programs may do to the node.
const (
	// DefaultMaxProcs is how many processes a machine may run at once: a fork bomb meets
	// it as a pids cgroup limit ("can't fork").
	DefaultMaxProcs = 1024
	// DefaultSlice is how many steps (commands, loop turns) a process runs before it is
	// preempted, so that a busy loop cannot hold the node's loops up.
	DefaultSlice = 10000
	// Quantum is how long (on the machine's clock) a preempted process waits before it runs
	// again: a busy loop runs DefaultSlice steps every Quantum.
	Quantum = 100 * time.Millisecond
	// MaxOutput bounds what a command substitution or a variable may hold.
	MaxOutput = 1 << 20
)

// Config configures a Machine.
type Config struct {
	// FS is the container's filesystem: executables are looked up in it by PATH, and files
	// read and written through it.
	FS *vfs.View
	// Programs returns the program a simulated executable runs, by the name its file
	// carries (vfs.Info.Program): "sh", "cat", "agnhost". Nil for a name it does not know.
	Programs func(name string) Program
	// Hostname is what hostname and $HOSTNAME say.
	Hostname string
	// Seed seeds $RANDOM, so that a replay is deterministic.
	Seed uint64
	// MaxProcs: default DefaultMaxProcs.
	MaxProcs int
	// Slice: default DefaultSlice.
	Slice int
	// Net is the network namespace the processes share (their pod's) and Network what it
	// reaches; nil: no network (listening and connecting fail).
	Net     *simnet.Namespace
	Network *simnet.Network
	// Workers lends the processes their coroutines; nil: each run of a program starts a
	// goroutine of its own.
	Workers *Workers
	// Memory is the container's memory cgroup, charged for what its programs hold
	// (memory.go); nil: not accounted.
	Memory *memcg.Group
	// Pids is the pod's pids cgroup, shared by its containers' machines; nil: only
	// MaxProcs bounds the machine.
	Pids *Pids
	// OnDetached is called, from any goroutine, when a handler wrote a line for the owner
	// to drain (DrainDetached). It must not block or take the owner's locks.
	OnDetached func()
}

// Machine is the process table of one container: its programs, the pipes between them
// and what each waits for. Step runs every process that can run at an instant; nothing
// runs between Steps. Not safe for concurrent use: its owner (the runtime, under its
// lock) calls every method.
type Machine struct {
	cfg     Config
	procs   []*Proc
	nextPID int
	now     int64
	// rng is the seeded random source, made at the first draw: most machines of a big
	// node never draw, and one each was 100 bytes of 10,000 pods' 20,000 machines.
	rng     *rand.Rand
	stepped bool // a Step is running: a kill from a program is carried out after it
	busy    bool // a process used its whole slice in the last Step
	oom     bool // the cgroup's OOM kill ended the machine
	// neverPark keeps every process on its coroutine (tests compare both ways).
	neverPark bool
	stepID    uint64
	budget    int      // what the processes together may still do in this Step
	again     int64    // when to step again for processes left ready by a spent budget (0: none)
	looked    []looked // recent PATH searches, valid while the FS's generation holds
	held      int64    // charged for what no process holds (pipes' buffers)

	// mailbox guards detached: lines servers' handlers wrote from other goroutines.
	mailbox  sync.Mutex
	detached []detachedLine
}

// NewMachine returns a machine with no processes.
func NewMachine(cfg Config) *Machine {
	if cfg.MaxProcs <= 0 {
		cfg.MaxProcs = DefaultMaxProcs
	}
	if cfg.Slice <= 0 {
		cfg.Slice = DefaultSlice
	}
	if cfg.FS == nil {
		cfg.FS = vfs.New(nil)
	}
	m := &Machine{cfg: cfg, nextPID: 1}
	if cfg.Memory != nil {
		// A memory-backed emptyDir's files are the container's memory (memory.go).
		cfg.FS.SetTmpfsAccount(m.chargeMachine)
	}
	return m
}

// FS is the machine's filesystem.
func (m *Machine) FS() *vfs.View { return m.cfg.FS }

// Hostname is the machine's host name.
func (m *Machine) Hostname() string { return m.cfg.Hostname }

// Now is the machine's clock: the instant of the current or last Step.
func (m *Machine) Now() time.Time { return time.Unix(0, m.now) }

// Busy reports whether a process ran out of its slice in the last Step (a busy loop): its
// container's CPU shows at its limit.
func (m *Machine) Busy() bool { return m.busy }

// Identity is who a process runs as.
type Identity struct {
	UID, GID int64
	Groups   []int64 // supplementary groups
	// Privileged is a privileged container's process: it may change the network (ip link).
	Privileged bool
	// NoNewPrivs is no_new_privs: executing a setuid file does not change the effective user.
	NoNewPrivs bool
	// EUID is the effective user when it is not UID (a setuid executable's owner): set by
	// the machine when it starts such a program; -1 or UID otherwise.
	EUID int64
}

// Spec says how to start a process.
type Spec struct {
	Argv []string
	// Path, when set, is the file to run, as execv's path: Argv[0] is then only the
	// name the program is given (popen runs "/bin/sh" as "sh").
	Path string
	Env  []string // NAME=value, in order (the last of a name wins)
	Dir  string   // working directory; default /
	Identity
	// Stdin is the process's standard input: nil is /dev/null; an *Input is fed from outside.
	Stdin *Input
	// Stdout and Stderr receive its output; nil discards it.
	Stdout, Stderr Output
	// OnExit is called (inside Step) with the exit status when the process ends.
	OnExit func(status int)
}

// Output is where a process's output goes outside the machine (a container log, an exec
// session). Write is called inside Step and must not block.
type Output interface {
	Write(b []byte) (int, error)
}

// Signals a process can be sent.
const (
	SIGHUP  = 1
	SIGINT  = 2
	SIGKILL = 9
	SIGPIPE = 13
	SIGTERM = 15
)

// SignalNames maps the names kill and trap accept to numbers.
var SignalNames = map[string]int{"HUP": SIGHUP, "INT": SIGINT, "KILL": SIGKILL, "PIPE": SIGPIPE, "TERM": SIGTERM, "QUIT": 3, "USR1": 10, "USR2": 12, "ALRM": 14, "CHLD": 17, "STOP": 19, "CONT": 18, "WINCH": 28}

// waitKind is what a suspended process waits for.
type waitKind uint8

const (
	running    waitKind = iota
	sleeping            // until wakeAt
	reading             // its pipe has data or no writer
	writing             // its pipe has room or no reader
	waitingFor          // children to exit
	preempted           // its slice ran out; runs again at wakeAt
)

// Proc is a running process. Programs call its methods from their own coroutine.
type Proc struct {
	m      *Machine
	pid    int
	parent *Proc
	argv   []string
	env    []string
	dir    string
	id     Identity
	fds    [10]*fd
	onExit func(int)

	// w is the worker running p's program (nil before it first runs and while it is
	// parked), prog what a worker runs next for p: its program, or where a parked
	// program goes on.
	w     *worker
	prog  Program
	yield func(struct{}) bool

	wakeAt    int64
	pipe      *pipe
	waitFor   []*Proc
	sliceStep uint64 // the Step whose slice p is using

	status  int
	pending []int // signals delivered, not yet handled
	// traps are the signals the program handles itself (a shell's trap), bit sig-1 for
	// signals 1 to 64; others kill it.
	traps   uint64
	killSig int // the signal killing it, carried out by the machine
	// signaled is the signal p died of (its status 128+signaled), 0 when it exited: what
	// a waiting shell reports ("Terminated").
	signaled int

	// The small fields together, in one word: a node of 10,000 pods keeps 20,000
	// processes, and each bool apart took eight bytes.
	wait   waitKind
	exited bool
	// collected: its parent waited for it and took its status (wait(2)): the machine
	// forgets it; a zombie until then.
	collected bool
	// reaped marks a background job its shell reaped while waiting for a foreground one,
	// so that its wait says nothing of it.
	reaped bool
	// umask is the file creation mask, inherited from the parent (0022 for a process
	// started from outside, a container's default).
	umask fs.FileMode
	// interrupted is set when a signal ends a sleep early (a trapped signal).
	interrupted bool
	slice       int32 // the steps left of p's slice (see sliceStep)
	jobNo       int32 // its number among its shell's background jobs (%1)
	inPlace     int32 // the no-fork applets running in p (see parker)
	// cleanups run when the process exits (its listening sockets close).
	cleanups  []func()
	listening []Listener // what it listens on (netstat -p)

	// held is what p's charges hold (memory.go), given back when it exits; transient the
	// part of it the expansion under way has copied.
	held, transient int64

	// parker is the shell running a no-fork applet in p: whether, and how, it goes on
	// after the applet if the applet parks.
	parker parker
	// builtinOf is the name of the shell running the program in place as one of its own
	// builtins (ash's echo, printf, test, [), which prefixes the program's errors.
	builtinOf string
}

// parker is a program that can give up its coroutine while a no-fork applet it runs
// waits, and go on from the heap (the shell: park.go).
type parker interface {
	park(status int) (Program, bool)
}

// parkPanic unwinds a parking program's coroutine.
type parkPanic struct{}

// errKilled unwinds a killed program's coroutine.
type errKilled struct{}

// Start starts a process. An argv[0] that is no executable fails with the error the
// runtime reports (127-style: not found, or not executable).
func (m *Machine) Start(s Spec) (int, error) {
	p, err := m.spawn(nil, s)
	if err != nil {
		return 0, err
	}
	return p.pid, nil
}

// ExecError is why a program could not be started: the executable is missing or not one.
type ExecError struct {
	Name string
	Err  error
	// NotFound is true when no file was found (exit 127), false when one was found but
	// cannot run (126).
	NotFound bool
}

func (e *ExecError) Error() string {
	if e.NotFound && !strings.Contains(e.Name, "/") {
		return fmt.Sprintf("exec: %q: executable file not found in $PATH", e.Name)
	}
	return fmt.Sprintf("exec: %q: %v", e.Name, e.Err)
}

// Status is the exit status an ExecError gives a shell: 127 not found, 126 cannot run.
func (e *ExecError) Status() int {
	if e.NotFound {
		return 127
	}
	return 126
}

func (m *Machine) spawn(parent *Proc, s Spec) (*Proc, error) {
	if len(s.Argv) == 0 {
		return nil, &ExecError{Name: "", Err: vfs.ENOENT, NotFound: true}
	}
	if !m.mayFork() {
		return nil, errFork
	}
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	run := s.Argv
	if s.Path != "" {
		run = append([]string{s.Path}, s.Argv[1:]...)
	}
	prog, argv, info, err := m.resolve(run, envLookup(s.Env, "PATH"), dir)
	if err != nil {
		return nil, err
	}
	if s.Path != "" && argv[0] == s.Path {
		argv = append([]string{s.Argv[0]}, argv[1:]...)
	}
	p := &Proc{m: m, pid: m.nextPID, parent: parent, argv: argv, env: s.Env, dir: dir, id: s.Identity, onExit: s.OnExit}
	p.id.EUID = p.id.UID
	p.umask = DefaultUmask
	if parent != nil {
		p.umask = parent.umask
	}
	if info.Mode&fs.ModeSetuid != 0 && !p.id.NoNewPrivs {
		p.id.EUID = info.UID
	}
	m.nextPID++
	p.fds[0] = inputFD(s.Stdin)
	p.fds[1] = outputFD(s.Stdout)
	p.fds[2] = outputFD(s.Stderr)
	p.run(prog)
	return p, nil
}

// run makes prog p's program, ready to run at the next Step.
func (p *Proc) run(prog Program) {
	p.prog = prog
	p.m.procs = append(p.m.procs, p)
	if p.m.cfg.Pids != nil {
		p.m.cfg.Pids.n++
	}
}

// mayFork reports whether another process fits the machine's MaxProcs and its pod's pids
// limit: "can't fork" otherwise, as fork(2) fails with EAGAIN in a full pids cgroup.
func (m *Machine) mayFork() bool {
	return m.Running() < m.cfg.MaxProcs && (m.cfg.Pids == nil || m.cfg.Pids.Max <= 0 || m.cfg.Pids.n < m.cfg.Pids.Max)
}

// Pids is a pod's pids cgroup: the processes its containers' machines run together, and
// the most they may (pids.max; 0: no limit). Its owner (the runtime) uses it under its
// lock, as the machines.
type Pids struct {
	Max int
	n   int
}

// Current is how many processes run in the cgroup (pids.current).
func (g *Pids) Current() int { return g.n }

// runProgram runs prog on p's worker and records its exit status, unless it parks.
func (p *Proc) runProgram(prog Program) {
	status := 0
	func() {
		defer func() {
			r := recover()
			if _, ok := r.(parkPanic); ok {
				return // parked: p.prog goes on when p wakes
			}
			if e, ok := r.(execPanic); ok {
				// exec: the new program runs next, on a fresh stack.
				p.prog, p.parker = e.prog, nil
				// The PATH searches were the shell's; a server it execs makes none.
				p.m.looked = nil
				return
			}
			if r != nil {
				if _, ok := r.(errKilled); ok {
					status = 128 + p.killSig
					p.signaled = p.killSig
					return
				}
				if e, ok := r.(exitPanic); ok {
					status = int(e)
					return
				}
				fmt.Fprintf(p.Stderr(), "minikubelet: program %s crashed: %v\n", p.argv[0], r)
				status = 139
			}
		}()
		status = prog(p)
	}()
	if p.prog == nil {
		p.status = status
	}
}

// exitPanic unwinds a program that exits from deep inside (the shell's exit builtin).
type exitPanic int

// execPanic unwinds a program that replaces itself with prog (the shell's exec builtin):
// runProgram makes prog the process's program, which runs next from the top.
type execPanic struct{ prog Program }

// exitedWith is the status of an exit unwinding, r being what recover returned; any other
// panic (a kill, a park, a crash) unwinds on.
func exitedWith(r any) int {
	e, ok := r.(exitPanic)
	if !ok {
		panic(r)
	}
	return int(e)
}

// Exit ends the program now with status.
func (p *Proc) Exit(status int) { panic(exitPanic(status)) }

var errFork = fmt.Errorf("can't fork: %w", errAgain)

var errAgain = fmt.Errorf("Resource temporarily unavailable")

// resolve finds the program argv[0] names: a path, or a name looked up in PATH. A file
// starting with "#!" runs its interpreter with the file as its first argument. info
// describes the executable that runs (its setuid bit and owner), zero for a script sh runs.
func (m *Machine) resolve(argv []string, pathVar, dir string) (Program, []string, vfs.Info, error) {
	name := argv[0]
	file, info, err := m.lookPath(name, pathVar, dir)
	if err != nil {
		return nil, nil, vfs.Info{}, err
	}
	if info.Mode.IsDir() {
		return nil, nil, vfs.Info{}, &ExecError{Name: name, Err: vfs.EACCES}
	}
	if info.Mode&0o111 == 0 {
		return nil, nil, vfs.Info{}, &ExecError{Name: name, Err: vfs.EACCES}
	}
	if info.Program != "" {
		if prog := m.program(info.Program); prog != nil {
			return prog, argv, info, nil
		}
		return nil, nil, vfs.Info{}, &ExecError{Name: name, Err: fmt.Errorf("program %q is not simulated", info.Program)}
	}
	data, err := m.firstLine(file)
	if err != nil {
		return nil, nil, vfs.Info{}, &ExecError{Name: name, Err: err}
	}
	if rest, ok := bytes.CutPrefix(data, []byte("#!")); ok {
		// Only the first line is copied: the interpreter's arguments must not keep the
		// whole script alive for as long as the program runs.
		first, _, _ := bytes.Cut(rest, []byte("\n"))
		fields := strings.Fields(string(first))
		if len(fields) > 0 && !strings.HasPrefix(name, fields[0]) {
			interp := append(fields[:1:1], fields[1:]...)
			prog, iargv, iinfo, err := m.resolve(append(interp, append([]string{file}, argv[1:]...)...), pathVar, dir)
			if err == nil {
				return prog, iargv, iinfo, nil
			}
		}
	}
	// A text file without "#!" runs in sh, as execvp does on ENOEXEC.
	if prog := m.program("sh"); prog != nil {
		return prog, append([]string{"sh", file}, argv[1:]...), vfs.Info{}, nil
	}
	return nil, nil, vfs.Info{}, &ExecError{Name: name, Err: fmt.Errorf("Exec format error")}
}

// firstLine reads the start of file, enough for its "#!" line: the script itself is read
// by the interpreter, and a copy of it all for every command was a fifth of what a
// container's entrypoint allocated.
func (m *Machine) firstLine(file string) ([]byte, error) {
	r, err := m.cfg.FS.Open(file)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 256)
	n, _ := r.ReadAt(buf, 0)
	if n == len(buf) && bytes.HasPrefix(buf, []byte("#!")) && bytes.IndexByte(buf, '\n') < 0 {
		return m.cfg.FS.ReadFile(file) // a longer "#!" line, read whole
	}
	return buf[:n], nil
}

// lookPath finds the file name runs and describes it (following links): name itself when
// it has a slash (relative to dir), else the first executable regular file of that name
// in pathVar's directories. A search's answer is kept until the filesystem's paths change
// (vfs Generation), so a loop's commands are searched for once, not at every turn, and
// still found afresh after any change, as execvp finds them.
func (m *Machine) lookPath(name, pathVar, dir string) (string, vfs.Info, error) {
	if strings.Contains(name, "/") {
		file := name
		if !strings.HasPrefix(file, "/") {
			file = path.Join(dir, file)
		}
		info, err := m.cfg.FS.Stat(file)
		if err != nil {
			return "", vfs.Info{}, &ExecError{Name: name, Err: err, NotFound: vfs.ErrnoOf(err) == vfs.ENOENT}
		}
		return file, info, nil
	}
	if pathVar == "" {
		pathVar = DefaultPath
	}
	gen := m.cfg.FS.Generation()
	for _, e := range m.looked {
		if e.name == name && e.path == pathVar && e.dir == dir && e.gen == gen {
			return e.answer(name)
		}
	}
	e := looked{name: name, path: pathVar, dir: dir, gen: gen}
	if name != "" {
		for d := range strings.SplitSeq(pathVar, ":") {
			if d == "" {
				d = dir
			}
			f := path.Join(d, name)
			if info, err := m.cfg.FS.Stat(f); err == nil && info.Mode.IsRegular() && info.Mode&0o111 != 0 {
				e.file, e.mode, e.uid, e.program = f, info.Mode, info.UID, info.Program
				break
			}
		}
	}
	// Replace a stale answer for the same name, else add (a bounded few: a loop calls the
	// same handful of commands).
	i := slices.IndexFunc(m.looked, func(o looked) bool { return o.name == name && o.path == pathVar && o.dir == dir })
	switch {
	case i >= 0:
		m.looked[i] = e
	case len(m.looked) < maxLooked:
		m.looked = append(m.looked, e)
	default:
		m.looked[int(gen+uint64(len(name)))%maxLooked] = e
	}
	return e.answer(name)
}

// maxLooked bounds a machine's remembered PATH searches.
const maxLooked = 8

// looked is a PATH search's answer (file "" when nothing was found), valid while the
// filesystem's generation is gen.
type looked struct {
	name, path, dir string
	gen             uint64
	file            string
	mode            fs.FileMode
	uid             int64
	program         string
}

func (e looked) answer(name string) (string, vfs.Info, error) {
	if e.file == "" {
		return "", vfs.Info{}, &ExecError{Name: name, Err: vfs.ENOENT, NotFound: true}
	}
	return e.file, vfs.Info{Mode: e.mode, UID: e.uid, Program: e.program}, nil
}

func (m *Machine) program(name string) Program {
	if name == "sh" || name == "ash" || name == "bash" || name == "dash" {
		return RunShell
	}
	if m.cfg.Programs == nil {
		return nil
	}
	return m.cfg.Programs(name)
}

// DefaultPath is the PATH of a process whose environment sets none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func envLookup(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}

// Running is how many processes have not exited.
func (m *Machine) Running() int {
	n := 0
	for _, p := range m.procs {
		if !p.exited {
			n++
		}
	}
	return n
}

// Alive reports whether process pid runs.
func (m *Machine) Alive(pid int) bool {
	p := m.find(pid)
	return p != nil && !p.exited
}

func (m *Machine) find(pid int) *Proc {
	for _, p := range m.procs {
		if p.pid == pid {
			return p
		}
	}
	return nil
}

// Signal sends sig to process pid: a signal its program traps is handled by it, any other
// kills it (128+sig). It takes effect at the next Step. Unknown pids are ignored.
func (m *Machine) Signal(pid, sig int) {
	if p := m.find(pid); p != nil && !p.exited {
		p.deliver(sig)
	}
}

func (p *Proc) deliver(sig int) {
	if ignoredByDefault(sig) && p.traps&sigBit(sig) == 0 {
		return
	}
	if sig != SIGKILL && p.traps&sigBit(sig) != 0 {
		p.pending = append(p.pending, sig)
		p.interrupted = true
		return
	}
	if p.killSig == 0 {
		p.killSig = sig
	}
}

// ignoredByDefault reports whether sig's default action is to ignore it (SIGCHLD,
// SIGCONT, SIGURG, SIGWINCH): an untrapped one does nothing.
func ignoredByDefault(sig int) bool {
	return sig == 17 || sig == 18 || sig == 23 || sig == 28
}

// KillAll kills every process at once (the container is gone): their coroutines unwind now.
func (m *Machine) KillAll() {
	for _, p := range m.procs {
		if !p.exited {
			p.killSig = SIGKILL
			p.finish()
		}
	}
	m.procs = nil
}

// Step runs, at instant now, every process that can run until each waits again or exits,
// and returns the instant something will next be due (0: nothing until an outside event
// such as input or a signal).
func (m *Machine) Step(now int64) int64 {
	if now > m.now {
		m.now = now
	}
	m.busy = false
	m.stepped = true
	m.stepID++
	m.again = 0
	// The machine as a whole gets a few slices per Step: a loop that forks (and so
	// waits, which a slice alone would not count) cannot keep a Step going either.
	m.budget = 4 * m.cfg.Slice
	for progress := true; progress && m.budget > 0; {
		progress = false
		for i := 0; i < len(m.procs) && m.budget > 0; i++ { // processes started during the pass run in it
			p := m.procs[i]
			if p.exited {
				continue
			}
			if p.killSig != 0 {
				p.finish()
				progress = true
				continue
			}
			if !p.ready() {
				continue
			}
			progress = true
			p.resume()
		}
	}
	m.stepped = false
	if m.budget <= 0 {
		// Out of budget with work left: what could run is preempted until the next quantum.
		m.busy = true
		for _, p := range m.procs {
			if !p.exited && p.ready() {
				m.again = m.now + int64(Quantum)
				break
			}
		}
	}
	// Forget exited processes their parent waited for, or that no parent will.
	live := m.procs[:0]
	for _, p := range m.procs {
		if !p.exited || !p.collected && p.parent != nil && !p.parent.exited {
			live = append(live, p)
		}
	}
	clear(m.procs[len(live):])
	m.procs = live
	return m.NextDue()
}

// NextDue is when a sleeping or preempted process wakes (0: none).
func (m *Machine) NextDue() int64 {
	next := m.again
	for _, p := range m.procs {
		// A sleep that never ends (sleep infinity, a server waiting for signals) is due never.
		if !p.exited && (p.wait == sleeping || p.wait == preempted) && p.wakeAt != math.MaxInt64 && (next == 0 || p.wakeAt < next) {
			next = p.wakeAt
		}
		if !p.exited && p.killSig != 0 {
			return m.now
		}
	}
	return next
}

// ready reports whether p can run now.
func (p *Proc) ready() bool {
	switch p.wait {
	case running:
		return true
	case sleeping:
		return p.wakeAt <= p.m.now || p.interrupted
	case preempted:
		return p.wakeAt <= p.m.now
	case reading:
		return len(p.pipe.buf) > 0 || p.pipe.writers == 0 || p.interrupted
	case writing:
		return len(p.pipe.buf) < pipeSize || p.pipe.readers == 0
	case waitingFor:
		return p.interrupted || allExited(p.waitFor)
	}
	return false
}

// resume runs p until it waits again or ends.
func (p *Proc) resume() {
	p.wait = running
	if p.sliceStep != p.m.stepID {
		p.slice, p.sliceStep = int32(p.m.cfg.Slice), p.m.stepID
	}
	w := p.w
	if w == nil { // its program starts, or goes on after parking, on a worker
		w = p.m.cfg.Workers.get()
		w.p, w.prog = p, p.prog
		p.prog = nil
		p.w = w
	}
	w.next()
	if w.p == nil { // the program returned or parked: its worker is free
		p.w = nil
		p.m.cfg.Workers.put(w)
		if p.prog == nil {
			p.done()
		}
	}
}

// finish kills p now: its coroutine unwinds (deferred redirections close) and it exits.
func (p *Proc) finish() {
	if p.exited {
		return
	}
	if p.killSig == 0 {
		p.killSig = SIGKILL
	}
	if p.w != nil {
		// The pending yield returns false: the program unwinds with errKilled, and its
		// worker ends with it.
		p.w.stop()
		p.w = nil
	}
	p.prog = nil
	p.status = 128 + p.killSig
	p.signaled = p.killSig
	p.done()
}

// done records p's exit: its pipes close, its parent may stop waiting.
func (p *Proc) done() {
	if p.exited {
		return
	}
	p.exited = true
	p.parker, p.prog = nil, nil
	if p.m.cfg.Pids != nil {
		p.m.cfg.Pids.n--
	}
	if p.held > 0 && p.m.cfg.Memory != nil {
		p.m.cfg.Memory.Uncharge(p.held)
	}
	p.held, p.transient = 0, 0
	for _, f := range p.fds {
		f.close()
	}
	for _, f := range p.cleanups {
		f()
	}
	p.cleanups = nil
	if p.onExit != nil {
		p.onExit(p.status)
	}
}

// suspend gives control back to Step until p is ready again. A kill unwinds the program.
func (p *Proc) suspend(w waitKind) {
	p.wait = w
	if !p.yield(struct{}{}) || p.killSig != 0 {
		panic(errKilled{})
	}
}

// Tick counts one step of p's work; when its slice is used up it waits a Quantum, as a
// process the scheduler preempts.
func (p *Proc) Tick() {
	if p.killSig != 0 {
		panic(errKilled{})
	}
	p.slice--
	p.m.budget--
	if p.slice > 0 && p.m.budget > 0 {
		return
	}
	p.m.busy = true
	p.wakeAt = p.m.now + int64(Quantum)
	p.suspend(preempted)
}

// Forever is a sleep that never ends by itself.
const Forever = time.Duration(math.MaxInt64)

// Sleep waits d on the machine's clock. It returns false when a trapped signal ended it
// early.
func (p *Proc) Sleep(d time.Duration) bool {
	if d <= 0 {
		p.Tick()
		return true
	}
	p.interrupted = false
	p.wakeAt = addNS(p.m.now, d)
	p.suspend(sleeping)
	return !p.takeInterrupt()
}

// SleepThenExit is the program's last act: it waits d, which a trapped signal does not cut
// short, and returns status for the program to return at once. When nothing but that
// return comes after it (p's own program, or a shell that can park), p gives up its
// coroutine while it waits: a process asleep costs no goroutine.
func (p *Proc) SleepThenExit(d time.Duration, status int) int {
	if d <= 0 {
		return status
	}
	if resume := p.parkable(status); resume != nil {
		p.parker = nil // the shell's run would have cleared it after the applet
		p.wakeAt = addNS(p.m.now, d)
		p.park(sleeping, resume)
	}
	until := addNS(p.m.now, d)
	for p.m.now < until {
		p.Sleep(time.Duration(until - p.m.now))
	}
	return status
}

// SleepThen waits d, or until a trapped signal ends the wait (slept false), then runs then
// as the rest of p's program: a server waiting for its stop signal. Called by p's own
// program (not a no-fork applet), p gives up its coroutine while it waits.
func (p *Proc) SleepThen(d time.Duration, then func(p *Proc, slept bool) int) int {
	if d > 0 && p.ownProgramCanPark() {
		p.wakeAt = addNS(p.m.now, d)
		p.park(sleeping, func(p *Proc) int { return then(p, !p.takeInterrupt()) })
	}
	return then(p, p.Sleep(d))
}

// parkWaiting parks p until its children have exited or a trapped signal ends the wait
// (then with 128+SIGTERM, as Wait), then runs then with the status Wait would return.
func (p *Proc) parkWaiting(children []*Proc, then func(p *Proc, status int) int) {
	p.waitFor = children
	p.park(waitingFor, func(p *Proc) int {
		p.waitFor = nil
		status := 0
		switch {
		case p.takeInterrupt():
			status = 128 + SIGTERM
		case len(children) > 0:
			status = children[len(children)-1].status
		}
		collect(children)
		return then(p, status)
	})
}

// park gives up p's coroutine: p waits (w, with wakeAt or waitFor set) without one, and
// then runs on a worker when it is ready. A signal that arrived before does not end the
// wait, as in Sleep and Wait.
func (p *Proc) park(w waitKind, then Program) {
	p.interrupted = false
	p.wait = w
	p.prog = then
	panic(parkPanic{})
}

// ownProgramCanPark reports whether what runs in p now is p's own program, nothing after
// it on the Go stack but its return, and p may park.
func (p *Proc) ownProgramCanPark() bool {
	return p.inPlace == 0 && p.parker == nil && !p.m.neverPark && p.killSig == 0
}

// parkable returns what p runs on when it wakes if it can park now, else nil.
func (p *Proc) parkable(status int) Program {
	if p.m.neverPark || p.killSig != 0 || p.traps != 0 || len(p.pending) > 0 {
		return nil
	}
	switch {
	case p.ownProgramCanPark():
		return func(*Proc) int { return status }
	case p.inPlace == 1 && p.parker != nil:
		if resume, ok := p.parker.park(status); ok {
			return resume
		}
	}
	return nil
}

func (p *Proc) takeInterrupt() bool {
	i := p.interrupted
	p.interrupted = false
	return i
}

// Pending returns and clears the trapped signals delivered to p.
func (p *Proc) Pending() []int {
	s := p.pending
	p.pending = nil
	return s
}

// Trap makes p handle sig itself (true) or die of it (false).
func (p *Proc) Trap(sig int, handle bool) {
	if handle {
		p.traps |= sigBit(sig)
	} else {
		p.traps &^= sigBit(sig)
	}
}

// sigBit is signal sig's bit in a set of signals 1 to 64 (none for others).
func sigBit(sig int) uint64 {
	if sig < 1 || sig > 64 {
		return 0
	}
	return 1 << (sig - 1)
}

func addNS(at int64, d time.Duration) int64 {
	if at > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return at + int64(d)
}

// PID is p's process id.
func (p *Proc) PID() int { return p.pid }

// PPID is p's parent's process id (0 for a process started from outside).
func (p *Proc) PPID() int {
	if p.parent == nil {
		return 0
	}
	return p.parent.pid
}

// Args is the program's argv.
func (p *Proc) Args() []string { return p.argv }

// BuiltinOf is the name of the shell that runs the program as its builtin, as ash runs
// echo, printf, test and [ ("sh"): its errors are prefixed with it, not the program's
// name. Empty when the program runs as itself.
func (p *Proc) BuiltinOf() string { return p.builtinOf }

// Environ is p's environment, NAME=value.
func (p *Proc) Environ() []string { return p.env }

// Getenv is an environment variable of p.
func (p *Proc) Getenv(name string) string { return envLookup(p.env, name) }

// Dir is p's working directory.
func (p *Proc) Dir() string { return p.dir }

// Abs is name made absolute from p's working directory.
func (p *Proc) Abs(name string) string {
	if strings.HasPrefix(name, "/") {
		return path.Clean(name)
	}
	return path.Join(p.dir, name)
}

// FS is p's filesystem.
func (p *Proc) FS() *vfs.View { return p.m.cfg.FS }

// Identity is who p runs as.
func (p *Proc) Identity() Identity { return p.id }

// Now is the machine's clock.
func (p *Proc) Now() time.Time { return p.m.Now() }

// Hostname is the machine's host name.
func (p *Proc) Hostname() string { return p.m.cfg.Hostname }

// Rand is the machine's seeded random source.
func (p *Proc) Rand() *rand.Rand {
	if p.m.rng == nil {
		p.m.rng = rand.New(rand.NewPCG(p.m.cfg.Seed, 0x7368656c6c))
	}
	return p.m.rng
}

// StartChild starts a child process with p's standard streams unless s says otherwise;
// Wait waits for it.
func (p *Proc) StartChild(s Spec) (*Proc, error) {
	if s.Dir == "" {
		s.Dir = p.dir
	}
	if s.Env == nil {
		s.Env = p.env
	}
	if s.Identity.UID == 0 && s.Identity.GID == 0 && s.Identity.Groups == nil {
		s.Identity = p.id
	}
	c, err := p.m.spawn(p, s)
	if err != nil {
		return nil, err
	}
	for i := range c.fds {
		if s.Stdin == nil && i == 0 || s.Stdout == nil && i == 1 || s.Stderr == nil && i == 2 {
			c.fds[i] = p.fds[i].dup()
		}
	}
	return c, nil
}

// Run runs argv as a child with p's streams and waits for it: its exit status, or the
// status a shell gives a command it cannot start (127 or 126, with the message on stderr,
// prefixed by who).
func (p *Proc) Run(who string, argv []string) int {
	c, err := p.StartChild(Spec{Argv: argv})
	if err != nil {
		return p.execFailed(who, argv[0], err)
	}
	return p.Wait(c)
}

func (p *Proc) execFailed(who, name string, err error) int {
	if ee, ok := err.(*ExecError); ok {
		if ee.NotFound {
			fmt.Fprintf(p.Stderr(), "%s: %s: not found\n", who, name)
		} else {
			fmt.Fprintf(p.Stderr(), "%s: %s: %v\n", who, name, ee.Err)
		}
		return ee.Status()
	}
	fmt.Fprintf(p.Stderr(), "%s: %v\n", who, err)
	return 2
}

// Wait waits for children to exit and returns the last one's status; a trapped signal
// ends the wait early with 128+15, as in a shell's wait builtin.
func (p *Proc) Wait(children ...*Proc) int {
	p.waitFor = children
	p.interrupted = false
	defer func() { p.waitFor = nil }()
	for !allExited(children) {
		p.suspend(waitingFor)
		if p.takeInterrupt() {
			return 128 + SIGTERM
		}
	}
	collect(children)
	if len(children) == 0 {
		return 0
	}
	return children[len(children)-1].status
}

// collect marks the children a wait has collected: the machine forgets them (no zombie
// stays behind a loop that runs a command at every turn).
func collect(children []*Proc) {
	for _, c := range children {
		if c.exited {
			c.collected = true
		}
	}
}

func allExited(ps []*Proc) bool {
	for _, c := range ps {
		if !c.exited {
			return false
		}
	}
	return true
}

// DefaultUmask is a container's processes' file creation mask unless they change it.
const DefaultUmask fs.FileMode = 0o022

// Umask is p's file creation mask: what a file or directory it creates lacks of 0666 or
// 0777.
func (p *Proc) Umask() fs.FileMode { return p.umask }

// SetUmask sets p's file creation mask (umask), which its children inherit.
func (p *Proc) SetUmask(m fs.FileMode) { p.umask = m & 0o777 }

// ExitAs makes p end as child did, having exec'd what child runs (env, nice, timeout):
// child's status, and the signal that killed it, for p's parent to report.
func (p *Proc) ExitAs(child *Proc) int {
	p.signaled = child.signaled
	return child.status
}

// Exited reports whether p has exited, and its status.
func (p *Proc) Exited() (bool, int) { return p.exited, p.status }

// KilledBy is the signal p died of, 0 when it exited (or runs).
func (p *Proc) KilledBy() int { return p.signaled }

// Kill sends sig to another process of the machine (kill).
func (p *Proc) Kill(pid, sig int) error {
	q := p.m.find(pid)
	if q == nil || q.exited {
		return fmt.Errorf("can't kill pid %d: No such process", pid)
	}
	if sig == 0 {
		return nil
	}
	q.deliver(sig)
	if q == p && p.killSig != 0 {
		panic(errKilled{})
	}
	return nil
}

// Procs lists the live processes: pid, ppid and argv (ps).
func (p *Proc) Procs() []ProcInfo {
	var out []ProcInfo
	for _, q := range p.m.procs {
		if !q.exited {
			out = append(out, ProcInfo{PID: q.pid, PPID: q.PPID(), Argv: q.argv, UID: q.id.UID, Listening: q.listening})
		}
	}
	return out
}

// ProcInfo describes a process for ps.
type ProcInfo struct {
	PID, PPID int
	Argv      []string
	UID       int64
	// Listening are the ports it listens on.
	Listening []Listener
}

// setFD installs f as descriptor n of p, closing what was there.
func (p *Proc) setFD(n int, f *fd) {
	p.fds[n].close()
	p.fds[n] = f
}

// forkProc starts a child running prog, a copy of p (a subshell): same environment,
// directory, identity and descriptors.
func (p *Proc) forkProc(prog Program) (*Proc, error) {
	m := p.m
	if !m.mayFork() {
		return nil, errFork
	}
	c := &Proc{m: m, pid: m.nextPID, parent: p, argv: p.argv, env: p.env, dir: p.dir, id: p.id, umask: p.umask}
	m.nextPID++
	for i, f := range p.fds {
		c.fds[i] = f.dup()
	}
	c.run(prog)
	return c, nil
}

// runInPlace runs prog in p itself with argv and env, as a shell runs a no-fork applet:
// the applet's exit ends only the applet.
func (p *Proc) runInPlace(prog Program, argv, env []string) (status int) {
	savedArgv, savedEnv := p.argv, p.env
	p.argv, p.env = argv, env
	p.inPlace++
	defer func() {
		p.inPlace--
		p.env = savedEnv
		if p.prog != nil {
			// Parking: the panic unwinds on (recovering it costs a panic more). The
			// process is still the applet (ps and pgrep see "sleep 10") until it wakes.
			then := p.prog
			p.prog = func(p *Proc) int {
				p.argv = savedArgv
				return then(p)
			}
			return
		}
		p.argv = savedArgv
		if r := recover(); r != nil {
			status = exitedWith(r)
		}
	}()
	return prog(p)
}

// waitAll waits for a foreground job: trapped signals wait for it to end, as a shell's
// traps run only once its foreground command is done.
func (p *Proc) waitAll(children []*Proc) int {
	p.waitFor = children
	defer func() { p.waitFor = nil }()
	for !allExited(children) {
		p.suspend(waitingFor)
		p.interrupted = false
	}
	collect(children)
	if len(children) == 0 {
		return 0
	}
	return children[len(children)-1].status
}

// ReadLine reads one line (without its newline) from descriptor n, never reading past
// it, as a shell's read does; io.EOF with what was read when the input ends first.
func (p *Proc) ReadLine(n int) (string, error) {
	f := p.fds[n]
	if f == nil {
		return "", errBadFD
	}
	var line []byte
	for {
		switch f.kind {
		case fdBytes:
			if f.off >= len(f.data) {
				return string(line), io.EOF
			}
			rest := f.data[f.off:]
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				f.off += i + 1
				return string(append(line, rest[:i]...)), nil
			}
			f.off = len(f.data)
			return string(append(line, rest...)), io.EOF
		case fdReader:
			// A piece at a time, what follows the newline given back: the next read
			// starts after it.
			var buf [512]byte
			n, err := f.file.Read(buf[:])
			if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
				f.file.Seek(int64(i+1-n), io.SeekCurrent)
				return string(append(line, buf[:i]...)), nil
			}
			line = append(line, buf[:n]...)
			if err != nil {
				return string(line), io.EOF
			}
		case fdPipeR:
			if i := bytes.IndexByte(f.pipe.buf, '\n'); i >= 0 {
				line = append(line, f.pipe.buf[:i]...)
				f.pipe.buf = f.pipe.buf[i+1:]
				f.pipe.drained(p, i+1)
				return string(line), nil
			}
			f.pipe.drained(p, len(f.pipe.buf))
			if f.pipe.writers == 0 {
				line = append(line, f.pipe.buf...)
				f.pipe.buf = nil
				return string(line), io.EOF
			}
			line = append(line, f.pipe.buf...)
			f.pipe.buf = nil
			p.pipe = f.pipe
			p.interrupted = false
			p.suspend(reading)
			if p.takeInterrupt() && len(f.pipe.buf) == 0 {
				return string(line), errInterrupted
			}
		default:
			return "", io.EOF
		}
	}
}

// errNoNetwork is the error of network calls on a machine without a network.
var errNoNetwork = fmt.Errorf("network is unreachable")

// Listen makes h answer on proto ("tcp", "udp") port of the pod's network until the
// process exits.
func (p *Proc) Listen(proto string, port int, h simnet.Handler) error {
	if p.m.cfg.Net == nil {
		return errNoNetwork
	}
	closeFn, err := p.m.cfg.Net.Listen(proto, port, h)
	if err != nil {
		return err
	}
	p.cleanups = append(p.cleanups, closeFn)
	p.listening = append(p.listening, Listener{Proto: proto, Port: port})
	return nil
}

// Listener is a port a process listens on (netstat -p).
type Listener struct {
	Proto string
	Port  int
}

// HTTP sends an HTTP request to host:port (a pod IP, or localhost: the pod itself).
func (p *Proc) HTTP(host string, port int, req *simnet.Request) (*simnet.Response, error) {
	if p.m.cfg.Network == nil {
		return nil, errNoNetwork
	}
	if req.Now.IsZero() {
		req.Now = p.Now()
	}
	return p.m.cfg.Network.HTTP(p.m.cfg.Net, host, port, req)
}

// Exchange sends payload to host:port over proto and returns the reply (nc, UDP clients).
func (p *Proc) Exchange(proto, host string, port int, payload []byte) ([]byte, error) {
	if p.m.cfg.Network == nil {
		return nil, errNoNetwork
	}
	return p.m.cfg.Network.Exchange(p.m.cfg.Net, proto, host, port, payload, p.Now())
}

// Connect reports whether a TCP connection to host:port would be accepted.
func (p *Proc) Connect(host string, port int) error {
	if p.m.cfg.Network == nil {
		return errNoNetwork
	}
	return p.m.cfg.Network.Connect(p.m.cfg.Net, host, port)
}

// PodIP is the first IP of the process's network namespace ("" without one).
func (p *Proc) PodIP() string {
	if p.m.cfg.Net == nil || len(p.m.cfg.Net.IPs()) == 0 {
		return ""
	}
	return p.m.cfg.Net.IPs()[0]
}

// May reports whether id may read (4), write (2) or search/execute (1) what info
// describes, by its permission bits as the kernel checks them: root may do anything but
// execute a file nobody may execute. Programs that check access themselves (test -r,
// mounttest, wget's output file) share it.
func (id Identity) May(info vfs.Info, want uint32) bool {
	perm := uint32(info.Mode.Perm())
	if id.UID == 0 {
		return want&1 == 0 || info.Mode.IsDir() || perm&0o111 != 0
	}
	var bits uint32
	switch {
	case info.UID == id.UID:
		bits = perm >> 6
	case info.GID == id.GID || slices.Contains(id.Groups, info.GID):
		bits = perm >> 3
	default:
		bits = perm
	}
	return bits&want == want
}
