package programs

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// applet is one busybox applet: what it does. Its usage text is in usage.txt.
type applet struct {
	run func(c *cmd) int
	// noHelp marks the applets for which --help is an ordinary argument (test, [, true,
	// false, echo), as busybox's show_usage_if_dash_dash_help exempts them.
	noHelp bool
}

// applets is every applet by name. It is filled in init because the busybox applet reads
// the table itself, which a variable's initializer may not.
var applets map[string]applet

// programs is every applet as the shell.Program Lookup returns, made once (in init, after
// applets) rather than at every lookup: a loop's echo and sleep look theirs up each turn.
var programs map[string]shell.Program

func makePrograms() {
	programs = make(map[string]shell.Program, len(applets))
	for name, a := range applets {
		programs[name] = func(p *shell.Proc) int { return runApplet(p, name, a, p.Args()) }
	}
}

// Lookup returns the program an executable named name runs (the name a vfs file's
// Program carries), or nil when there is no such applet.
func Lookup(name string) shell.Program {
	return programs[name]
}

// Names lists every applet name, sorted: what an image's /bin holds.
func Names() []string {
	names := make([]string, 0, len(applets))
	for name := range applets {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// banner is the first line busybox prints before a usage text.
const banner = "BusyBox v1.36.1 (simulated) multi-call binary.\n"

// waiting are the applets that mostly wait (for the clock or a child) and print little:
// their output buffer is small, since a container's sleeping shell holds its sleep's
// buffer for as long as it sleeps (8 KiB each would be 80 MB at 10,000 pods).
var waiting = map[string]bool{"sleep": true, "watch": true, "usleep": true, "timeout": true, "nohup": true, "nice": true, "env": true, "xargs": true}

// Output buffers are reused from one applet run to the next (a loop's echo runs every
// turn): allocating 8 KiB per echo made most of a busy node's garbage.
var (
	smallBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64) }}
	largeBuffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 8192) }}
)

func outputBuffers(name string) *sync.Pool {
	if waiting[name] {
		return &smallBuffers
	}
	return &largeBuffers
}

// cmds are reused as the output buffers are: a run's state is garbage once it returns.
var cmds = sync.Pool{New: func() any { return new(cmd) }}

func runApplet(p *shell.Proc, name string, a applet, argv []string) int {
	c := cmds.Get().(*cmd)
	*c = cmd{p: p, name: name, argv0: argv[0], args: argv[1:], errStatus: 1}
	pool := outputBuffers(name)
	c.out = pool.Get().(*bufio.Writer)
	c.out.Reset(p.Stdout())
	defer func() {
		// Also when the applet exits or is killed (both unwind through here); what it left
		// unflushed is dropped, as a killed process's stdio buffer is.
		c.out.Reset(nil)
		pool.Put(c.out)
		*c = cmd{}
		cmds.Put(c)
	}()
	if !a.noHelp && len(c.args) > 0 && c.args[0] == "--help" {
		c.showUsage(0)
	}
	status := a.run(c)
	c.out.Flush()
	return status
}

// cmd is one run of an applet: its process, its operands and its buffered stdout.
type cmd struct {
	p     *shell.Proc
	name  string // the applet, which prefixes its messages
	argv0 string
	args  []string // argv[1:]
	// errStatus is the status die and a usage error exit with: 1, or 2 for the applets
	// whose 1 means something else (grep's "no match"), as busybox's xfunc_error_retval.
	errStatus int
	// out buffers stdout as stdio does; it is flushed before anything goes to stderr (so
	// that 2>&1 keeps busybox's order), before the program blocks and when it ends.
	out *bufio.Writer

	users  []passwdEntry
	groups []groupEntry
	dbRead bool
}

// exit ends the applet now with status, its output flushed.
func (c *cmd) exit(status int) {
	c.out.Flush()
	c.p.Exit(status)
}

// errorf prints "applet: message" on stderr (bb_error_msg).
func (c *cmd) errorf(format string, a ...any) {
	c.out.Flush()
	prefix := c.name
	if b := c.p.BuiltinOf(); b != "" { // ash's builtin echo, printf, test: "sh: ..."
		prefix = b
	}
	fmt.Fprintf(c.p.Stderr(), prefix+": "+format+"\n", a...)
}

// perror prints "applet: message: strerror" (bb_perror_msg); an empty message prints
// "applet: strerror".
func (c *cmd) perror(err error, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if msg == "" {
		c.errorf("%s", errText(err))
		return
	}
	c.errorf("%s: %s", msg, errText(err))
}

// die prints the message and exits with errStatus (bb_error_msg_and_die).
func (c *cmd) die(format string, a ...any) {
	c.errorf(format, a...)
	c.exit(c.errStatus)
}

// showUsage prints the banner and the applet's usage text on stderr and exits with status.
func (c *cmd) showUsage(status int) {
	c.out.Flush()
	io.WriteString(c.p.Stderr(), banner+usageText(c.name)+"\n")
	c.exit(status)
}

// usageFile is what each applet prints after the banner when it shows its usage: busybox
// 1.36.1's texts (FEATURE_VERBOSE_USAGE), generated by hack/usagetext. A section
// "-- NAME --" holds NAME's text, which starts with a blank line ("\nUsage: NAME ...").
//
//go:embed usage.txt
var usageFile string

// usageTexts is usageFile by applet, made on first use.
var usageTexts = sync.OnceValue(func() map[string]string {
	texts := map[string]string{}
	name := ""
	var text strings.Builder
	flush := func() {
		if name != "" {
			texts[name] = strings.TrimSuffix(text.String(), "\n")
		}
		text.Reset()
	}
	for _, line := range strings.SplitAfter(usageFile, "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "-- "); ok && strings.HasSuffix(n, " --") {
			flush()
			name = strings.TrimSuffix(n, " --")
			continue
		}
		text.WriteString(line)
	}
	flush()
	return texts
})

// usageText is what applet name prints after the banner: its Usage line alone when it has
// no text.
func usageText(name string) string {
	if t, ok := usageTexts()[name]; ok {
		return t
	}
	return "\nUsage: " + name
}

// errText is what an error prints as: strerror for a filesystem errno.
func errText(err error) string {
	return err.Error()
}

// printf writes to the applet's stdout.
func (c *cmd) printf(format string, a ...any) { fmt.Fprintf(c.out, format, a...) }

// write writes s to stdout.
func (c *cmd) write(s string) { c.out.WriteString(s) }

// tick counts a unit of work, so that a long loop lets the machine preempt it.
func (c *cmd) tick() { c.p.Tick() }

// sleep waits d on the machine's clock, output flushed first so that what was printed
// before the wait is seen before it.
func (c *cmd) sleep(d time.Duration) bool {
	c.out.Flush()
	return c.p.Sleep(d)
}

// abs is name resolved from the working directory.
func (c *cmd) abs(name string) string { return c.p.Abs(name) }

func (c *cmd) fs() *vfs.View { return c.p.FS() }

// stdin is the process's standard input; reading it first flushes stdout, since the
// program may block there while someone waits for what it printed.
func (c *cmd) stdin() io.Reader { return flushingReader{c} }

type flushingReader struct{ c *cmd }

func (r flushingReader) Read(b []byte) (int, error) {
	if r.c.out.Buffered() > 0 {
		r.c.out.Flush()
	}
	return r.c.p.Stdin().Read(b)
}

// open opens name for reading: "-" is stdin, read as it comes; a file is a *vfs.Reader,
// read in pieces from its content as it was when opened (a 4 GB file is never copied
// whole, and ReaderAt and Size let an applet read only its end). A directory opens, but
// reading it fails with EISDIR, as read(2) does. The devices a
// container has are there even when its filesystem lacks them: /dev/null, /dev/zero,
// /dev/urandom (from the machine's seeded source), /dev/stdin.
func (c *cmd) open(name string) (io.Reader, error) {
	switch c.abs(name) {
	case "/dev/stdin", "/proc/self/fd/0":
		return c.stdin(), nil
	case "/dev/null":
		return bytes.NewReader(nil), nil
	case "/dev/zero":
		return zeroReader{c}, nil
	case "/dev/random", "/dev/urandom":
		return randomReader{c}, nil
	}
	if name == "-" {
		return c.stdin(), nil
	}
	if name == "" { // open("") is ENOENT, not the working directory
		return nil, vfs.ENOENT
	}
	f, err := c.fs().Open(c.abs(name))
	if err != nil {
		if vfs.ErrnoOf(err) == vfs.EISDIR {
			return errReader{vfs.EISDIR}, nil
		}
		return nil, err
	}
	return f, nil
}

// openOrWarn is busybox's fopen_or_warn_stdin: name opened, or its error printed as
// "applet: NAME: strerror" and false, for the applets that go on to their next operand.
func (c *cmd) openOrWarn(name string) (io.Reader, bool) {
	r, err := c.open(name)
	if err != nil {
		c.perror(err, "%s", name)
		return nil, false
	}
	return r, true
}

// readAll reads name whole ("-": stdin to its end).
func (c *cmd) readAll(name string) ([]byte, error) {
	r, err := c.open(name)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(c.p.Holding(r)) // what a program reads whole it holds
}

// isDevice reports whether p is one of the devices open and writeFile emulate.
func isDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return true
	}
	return false
}

// zeroReader and randomReader are endless: they tick per read, so that "cat /dev/zero"
// is preempted like any busy program.
type zeroReader struct{ c *cmd }

func (r zeroReader) Read(b []byte) (int, error) {
	r.c.tick()
	clear(b)
	return len(b), nil
}

type randomReader struct{ c *cmd }

func (r randomReader) Read(b []byte) (int, error) {
	r.c.tick()
	rng := r.c.p.Rand()
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return len(b), nil
}

// writeFile writes data to the file name (appending or not), created with mode 0666 less
// the umask and owned by the process. /dev/null takes anything, and /dev/stdout and
// /dev/stderr are the process's streams.
func (c *cmd) writeFile(name string, data []byte, appending bool) error {
	switch c.abs(name) {
	case "/dev/null":
		return nil
	case "/dev/stdout", "/proc/self/fd/1":
		_, err := c.out.Write(data)
		return err
	case "/dev/stderr", "/proc/self/fd/2":
		c.out.Flush()
		_, err := c.p.Stderr().Write(data)
		return err
	}
	if name == "" {
		return vfs.ENOENT
	}
	id := c.p.Identity()
	return c.fs().WriteFile(c.abs(name), data, 0o666&^c.umask(), appending, id.UID, id.GID)
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// lines calls f with each line of r (with its newline, if it had one), ticking per line;
// f returns false to stop. Read errors end the input, as fgets treats them.
func (c *cmd) lines(r io.Reader, f func(line string) bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		c.tick()
		line, err := br.ReadString('\n')
		if line != "" && !f(line) {
			return
		}
		if err != nil {
			return
		}
	}
}

// passwdEntry is a line of /etc/passwd.
type passwdEntry struct {
	name     string
	uid, gid int64
	gecos    string
	home     string
	shell    string
	line     string
}

// groupEntry is a line of /etc/group.
type groupEntry struct {
	name    string
	gid     int64
	members []string
	line    string
}

// readDB reads the container's /etc/passwd and /etc/group, once per run.
func (c *cmd) readDB() {
	if c.dbRead {
		return
	}
	c.dbRead = true
	if data, err := c.fs().ReadFile("/etc/passwd"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Split(line, ":")
			if len(f) < 7 {
				continue
			}
			uid, err1 := parseID(f[2])
			gid, err2 := parseID(f[3])
			if err1 != nil || err2 != nil {
				continue
			}
			c.users = append(c.users, passwdEntry{name: f[0], uid: uid, gid: gid, gecos: f[4], home: f[5], shell: f[6], line: line})
		}
	}
	if data, err := c.fs().ReadFile("/etc/group"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Split(line, ":")
			if len(f) < 4 {
				continue
			}
			gid, err := parseID(f[2])
			if err != nil {
				continue
			}
			var members []string
			if f[3] != "" {
				members = strings.Split(f[3], ",")
			}
			c.groups = append(c.groups, groupEntry{name: f[0], gid: gid, members: members, line: line})
		}
	}
}

func parseID(s string) (int64, error) {
	var n int64
	if s == "" {
		return 0, fmt.Errorf("empty id")
	}
	for _, r := range s {
		if r < '0' || r > '9' || n > 1<<40 {
			return 0, fmt.Errorf("bad id %q", s)
		}
		n = n*10 + int64(r-'0')
	}
	return n, nil
}

func (c *cmd) userByID(uid int64) (passwdEntry, bool) {
	c.readDB()
	for _, u := range c.users {
		if u.uid == uid {
			return u, true
		}
	}
	return passwdEntry{}, false
}

func (c *cmd) userByName(name string) (passwdEntry, bool) {
	c.readDB()
	for _, u := range c.users {
		if u.name == name {
			return u, true
		}
	}
	return passwdEntry{}, false
}

func (c *cmd) groupByID(gid int64) (groupEntry, bool) {
	c.readDB()
	for _, g := range c.groups {
		if g.gid == gid {
			return g, true
		}
	}
	return groupEntry{}, false
}

func (c *cmd) groupByName(name string) (groupEntry, bool) {
	c.readDB()
	for _, g := range c.groups {
		if g.name == name {
			return g, true
		}
	}
	return groupEntry{}, false
}

// userName is uid's name, or the number when /etc/passwd has none (as ls prints it).
func (c *cmd) userName(uid int64) string {
	if u, ok := c.userByID(uid); ok {
		return u.name
	}
	return fmt.Sprint(uid)
}

// groupName is gid's name, or the number.
func (c *cmd) groupName(gid int64) string {
	if g, ok := c.groupByID(gid); ok {
		return g.name
	}
	return fmt.Sprint(gid)
}

// groupsOf is the process's supplementary groups. When the runtime gave none, they are
// what a container runtime gives a process: its gid and the groups /etc/group lists its
// user in (containerd's additionalGids), so id prints what it prints in a real container.
func (c *cmd) groupsOf() []int64 {
	id := c.p.Identity()
	if id.Groups != nil {
		return id.Groups
	}
	gids := []int64{id.GID}
	if u, ok := c.userByID(id.UID); ok {
		c.readDB()
		for _, g := range c.groups {
			if slices.Contains(g.members, u.name) && !slices.Contains(gids, g.gid) {
				gids = append(gids, g.gid)
			}
		}
	}
	return gids
}

// modeString is ls -l's mode column ("drwxr-xr-x"), as busybox's bb_mode_string.
func modeString(m fs.FileMode) string {
	b := []byte("?rwxrwxrwx")
	switch {
	case m.IsDir():
		b[0] = 'd'
	case m&fs.ModeSymlink != 0:
		b[0] = 'l'
	case m&fs.ModeNamedPipe != 0:
		b[0] = 'p'
	case m&fs.ModeSocket != 0:
		b[0] = 's'
	case m&fs.ModeCharDevice != 0:
		b[0] = 'c'
	case m&fs.ModeDevice != 0:
		b[0] = 'b'
	default:
		b[0] = '-'
	}
	for i := 0; i < 9; i++ {
		if m&(1<<(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	special := func(bit fs.FileMode, at int, set, unset byte) {
		if m&bit != 0 {
			if b[at] == 'x' {
				b[at] = set
			} else {
				b[at] = unset
			}
		}
	}
	special(fs.ModeSetuid, 3, 's', 'S')
	special(fs.ModeSetgid, 6, 's', 'S')
	special(fs.ModeSticky, 9, 't', 'T')
	return string(b)
}

// unixMode is m as st_mode's permission bits (with setuid 04000, setgid 02000, sticky
// 01000), which chmod and stat %a speak.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// fileMode is st_mode's permission bits as an fs.FileMode.
func fileMode(u uint32) fs.FileMode {
	m := fs.FileMode(u & 0o777)
	if u&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if u&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if u&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// access reports whether the process may read (4), write (2) or execute (1) a file with
// info, by the permission bits as the kernel checks them (root may do all but execute a
// file nobody may execute).
func (c *cmd) access(info vfs.Info, want uint32) bool {
	id := c.p.Identity()
	id.Groups = c.groupsOf()
	return id.May(info, want)
}

// lastComponent is busybox's bb_get_last_path_component_strip: the name after the last
// slash, trailing slashes ignored ("/" stays "/").
func lastComponent(s string) string {
	t := strings.TrimRight(s, "/")
	if t == "" {
		if s == "" {
			return ""
		}
		return "/"
	}
	return path.Base(t)
}

// joinPath is busybox's concat_path_file: dir and name joined by one slash.
func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// umask is the process's file creation mask.
func (c *cmd) umask() fs.FileMode { return c.p.Umask() }
