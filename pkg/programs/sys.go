package programs

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// The node as uname, nproc, free and df describe it. A container sees its node's kernel,
// but the simulated node has none: these are fixed, plausible values.
const (
	// kernelRelease is uname -r: simulated, so it says so.
	kernelRelease = "6.6.0-minikubelet"
	kernelVersion = "#1 SMP PREEMPT_DYNAMIC Mon Jan  1 00:00:00 UTC 2024"
	machineArch   = "x86_64"
	// simulatedCPUs is what nproc prints: the machine knows no CPU count.
	simulatedCPUs = 2
	// Memory that free prints, in bytes.
	memTotal = 8 << 30
	memUsed  = 512 << 20
	memCache = 1 << 30
	memShare = 4 << 20
)

func runEcho(c *cmd) int {
	args := c.args
	newline, escapes := true, false
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' || strings.Trim(a[1:], "neE") != "" {
			break
		}
		for _, r := range a[1:] {
			switch r {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if !escapes {
			b.WriteString(a)
			continue
		}
		for j := 0; j < len(a); j++ {
			if a[j] != '\\' || j+1 >= len(a) {
				b.WriteByte(a[j])
				continue
			}
			if a[j+1] == 'c' {
				c.write(b.String())
				return 0
			}
			k := j + 1
			if a[k] == '0' && k+1 < len(a) && a[k+1] >= '0' && a[k+1] <= '7' {
				k++
			}
			ch, next := escape(a, k)
			b.WriteByte(ch)
			j = next - 1
		}
	}
	if newline {
		b.WriteByte('\n')
	}
	c.write(b.String())
	return 0
}

// escape decodes the backslash escape whose first character after the backslash is
// s[i], as busybox's bb_process_escape_sequence: \a \b \e \f \n \r \t \v \\, up to three
// octal digits, \x and up to two hex digits; anything else is a backslash, and what
// follows it stays. It returns the byte and the index after the sequence.
func escape(s string, i int) (byte, int) {
	if i >= len(s) {
		return '\\', i
	}
	if s[i] == 'x' {
		n, j := 0, i+1
		for ; j < len(s) && j < i+3; j++ {
			d := hexDigit(s[j])
			if d < 0 {
				break
			}
			n = n*16 + d
		}
		if j == i+1 {
			return '\\', i
		}
		return byte(n), j
	}
	if s[i] >= '0' && s[i] <= '7' {
		n, j := 0, i
		for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
			if n*8+int(s[j]-'0') > 255 {
				break
			}
			n = n*8 + int(s[j]-'0')
		}
		return byte(n), j
	}
	if k := strings.IndexByte("abefnrtv\\", s[i]); k >= 0 {
		return "\a\b\x1b\f\n\r\t\v\\"[k], i + 1
	}
	return '\\', i
}

func hexDigit(b byte) int {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0')
	case b >= 'a' && b <= 'f':
		return int(b-'a') + 10
	case b >= 'A' && b <= 'F':
		return int(b-'A') + 10
	}
	return -1
}

// parseDuration parses sleep's and timeout's N[smhd] (fractions allowed) as busybox's
// parse_duration_str, in seconds. A bad number dies with busybox's message.
func (c *cmd) parseDuration(s string) float64 {
	mult := func(sfx string, orig string) float64 {
		switch sfx {
		case "", "s":
			return 1
		case "m":
			return 60
		case "h":
			return 3600
		case "d":
			return 86400
		}
		c.die("invalid number '%s'", orig)
		return 0
	}
	if strings.Contains(s, ".") {
		n := 0
		for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '.') {
			n++
		}
		d, err := strconv.ParseFloat(s[:n], 64)
		if err != nil {
			c.showUsage(1)
		}
		// busybox checks the suffix on "1" followed by it, and complains about that.
		return d * mult(s[n:], "1"+s[n:])
	}
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 {
		c.die("invalid number '%s'", s)
	}
	v, err := strconv.ParseUint(s[:n], 10, 64)
	if err != nil {
		c.die("invalid number '%s'", s)
	}
	return float64(v) * mult(s[n:], s)
}

// seconds is a number of seconds as a Duration, saturating instead of overflowing.
func seconds(s float64) time.Duration {
	if s*1e9 >= math.MaxInt64 {
		return math.MaxInt64
	}
	if s <= 0 {
		return 0
	}
	return time.Duration(s * 1e9)
}

func runSleep(c *cmd) int {
	if len(c.args) == 0 {
		c.showUsage(1)
	}
	c.out.Flush()
	if len(c.args[0]) >= 3 && strings.EqualFold(c.args[0][:3], "inf") {
		// Busybox sleeps INT_MAX seconds again and again; one wait to the end of the
		// clock is the same for ever.
		return c.p.SleepThenExit(shell.Forever, 0)
	}
	total := 0.0
	for _, a := range c.args {
		total += c.parseDuration(a)
	}
	// The sleep is the applet's last act: a shell's loop asleep in it, or a container
	// whose command is sleep, needs no goroutine until it wakes.
	return c.p.SleepThenExit(seconds(total), 0)
}

func runYes(c *cmd) int {
	line := "y\n"
	if len(c.args) > 0 {
		line = strings.Join(c.args, " ") + "\n"
	}
	for {
		c.tick()
		if _, err := c.out.WriteString(line); err != nil {
			return 1
		}
	}
}

func runPwd(c *cmd) int {
	c.getopt("LP", nil) // the directory is always the logical one here
	c.write(c.p.Dir() + "\n")
	return 0
}

// setenv sets name=value in env in place (putenv), or appends it; "name" alone unsets.
func setenv(env []string, kv string) []string {
	name, _, hasValue := strings.Cut(kv, "=")
	out := env[:0:0]
	replaced := false
	for _, e := range env {
		if k, _, _ := strings.Cut(e, "="); k == name {
			if hasValue && !replaced {
				out = append(out, kv)
				replaced = true
			}
			continue
		}
		out = append(out, e)
	}
	if hasValue && !replaced {
		out = append(out, kv)
	}
	return out
}

// environ is the process's environment as its program sees it: one entry per name, the
// last given (the machine's getenv takes the last).
func (c *cmd) environ() []string {
	env := []string{}
	for _, e := range c.p.Environ() {
		env = setenv(env, e)
	}
	return env
}

// execute runs argv as a child and waits for it, as busybox's BB_EXECVP_or_die: its exit
// status, or 127 (not found) or 126 with "can't execute" when it cannot start. A nil env
// inherits the process's.
func (c *cmd) execute(argv []string, env []string) int {
	child, status := c.start(argv, env)
	if child == nil {
		return status
	}
	return c.waitExec(child, nil)
}

// forwarded are the signals an applet that stands for the command it runs (env, nice,
// nohup, timeout: busybox execs the command in their process) passes on to it, so that a
// kill of its pid reaches the command.
var forwarded = []int{shell.SIGHUP, shell.SIGINT, shell.SIGTERM, shell.SignalNames["QUIT"],
	shell.SignalNames["USR1"], shell.SignalNames["USR2"], shell.SignalNames["ALRM"]}

// waitExec waits for child as if the applet had exec'ed it: the signals sent to the
// applet go to the child (but those in ignore, which are dropped), and the child's
// status is the applet's.
func (c *cmd) waitExec(child *shell.Proc, ignore map[int]bool) int {
	for _, sig := range forwarded {
		c.p.Trap(sig, true)
	}
	for {
		c.p.Wait(child)
		if done, _ := child.Exited(); done {
			return c.p.ExitAs(child)
		}
		for _, sig := range c.p.Pending() {
			if !ignore[sig] {
				c.p.Kill(child.PID(), sig)
			}
		}
	}
}

func (c *cmd) start(argv []string, env []string) (*shell.Proc, int) {
	child, status, err := c.spawn(argv, env)
	if err != nil {
		c.perror(err, "can't execute '%s'", argv[0])
	}
	return child, status
}

// spawn starts argv as a child; when it cannot, the status a failed exec gives (127 not
// found, 126 otherwise) and the error, worded as strerror.
func (c *cmd) spawn(argv []string, env []string) (*shell.Proc, int, error) {
	c.out.Flush()
	child, err := c.p.StartChild(shell.Spec{Argv: argv, Env: env})
	if err != nil {
		status := 126
		var ee *shell.ExecError
		if errors.As(err, &ee) {
			if ee.NotFound {
				status = 127
			}
			err = ee.Err
		}
		return nil, status, err
	}
	return child, 0, nil
}

func runEnv(c *cmd) int {
	o, args := c.getopt("+i0u:", map[string]byte{"ignore-environment": 'i', "null": '0', "unset=": 'u'})
	env := c.environ()
	if len(args) > 0 && args[0] == "-" {
		o.n['i']++
		args = args[1:]
	}
	if o.has('i') {
		env = []string{}
	}
	for _, name := range o.vals('u') {
		env = setenv(env, name)
	}
	for len(args) > 0 && strings.Contains(args[0], "=") {
		env = setenv(env, args[0])
		args = args[1:]
	}
	if len(args) > 0 {
		return c.execute(args, env)
	}
	end := "\n"
	if o.has('0') {
		end = "\x00"
	}
	for _, e := range env {
		c.write(e + end)
	}
	return 0
}

func runPrintenv(c *cmd) int {
	env := c.environ()
	if len(c.args) == 0 {
		for _, e := range env {
			c.write(e + "\n")
		}
		return 0
	}
	status := 0
	for _, name := range c.args {
		found := false
		for _, e := range env {
			if k, v, _ := strings.Cut(e, "="); k == name {
				c.write(v + "\n")
				found = true
				break
			}
		}
		if !found {
			status = 1
		}
	}
	return status
}

func runID(c *cmd) int {
	o, args := c.getopt("rnugG", nil)
	if len(args) > 1 {
		c.showUsage(1)
	}
	exclusive := 0
	for _, b := range []byte("ugG") {
		if o.has(b) {
			exclusive++
		}
	}
	if exclusive > 1 || (o.has('n') || o.has('r')) && exclusive == 0 {
		c.showUsage(1)
	}
	id := c.p.Identity()
	uid, gid := id.UID, id.GID
	groups := c.groupsOf()
	if len(args) == 1 {
		u, ok := c.userByName(args[0])
		if !ok {
			c.die("unknown user %s", args[0])
		}
		uid, gid = u.uid, u.gid
		groups = []int64{u.gid}
		c.readDB()
		for _, g := range c.groups {
			if slices.Contains(g.members, u.name) && !slices.Contains(groups, g.gid) {
				groups = append(groups, g.gid)
			}
		}
	}
	anyOpt := len(o.n) > 0
	status := 0
	// print is busybox's print_common: the number, the name, or both as "0(root)".
	print := func(n int64, name string, known bool, prefix string) {
		c.write(prefix)
		if !o.has('n') || !known {
			c.printf("%d", n)
		}
		if !anyOpt || o.has('n') {
			switch {
			case known && anyOpt:
				c.write(name)
			case known:
				c.printf("(%s)", name)
			case anyOpt:
				c.errorf("unknown ID %d", n)
				status = 1
			}
		}
	}
	user := func(n int64, prefix string) {
		u, ok := c.userByID(n)
		print(n, u.name, ok, prefix)
	}
	group := func(n int64, prefix string) {
		g, ok := c.groupByID(n)
		print(n, g.name, ok, prefix)
	}
	switch {
	case o.has('u'):
		user(uid, "")
	case o.has('g'):
		group(gid, "")
	case o.has('G'):
		group(gid, "")
		for _, g := range groups {
			if g != gid {
				group(g, " ")
			}
		}
	default:
		user(uid, "uid=")
		group(gid, " gid=")
		prefix := " groups="
		for _, g := range groups {
			group(g, prefix)
			prefix = ","
		}
	}
	c.write("\n")
	return status
}

func runWhoami(c *cmd) int {
	if len(c.args) > 0 {
		c.showUsage(1)
	}
	uid := c.p.Identity().UID
	u, ok := c.userByID(uid)
	if !ok {
		c.die("unknown uid %d", uid)
	}
	c.write(u.name + "\n")
	return 0
}

func runHostname(c *cmd) int {
	o, args := c.getopt("dfisF:v", map[string]byte{"domain": 'd', "fqdn": 'f', "file": 'F'})
	name := c.p.Hostname()
	switch {
	case o.has('d') || o.has('f') || o.has('i'):
		// The full name and addresses come from resolving the name, which in a pod is
		// the kubelet's /etc/hosts.
		addrs, canonical := c.resolveHost(name)
		if len(addrs) == 0 && c.p.PodIP() != "" {
			addrs, canonical = []string{c.p.PodIP()}, name
		}
		if len(addrs) == 0 {
			c.die("%s: Unknown host", name)
		}
		short, domain, _ := strings.Cut(canonical, ".")
		switch {
		case o.has('f'):
			c.write(canonical + "\n")
		case o.has('s'):
			c.write(short + "\n")
		case o.has('d'):
			if domain != "" {
				c.write(domain + "\n")
			}
		default:
			c.write(strings.Join(addrs, " ") + "\n")
		}
	case o.has('s'):
		short, _, _ := strings.Cut(name, ".")
		c.write(short + "\n")
	case o.has('F') || len(args) > 0:
		// A container has no CAP_SYS_ADMIN: the UTS namespace is the pod's.
		c.die("sethostname: Operation not permitted")
	default:
		c.write(name + "\n")
	}
	return 0
}

// hostsEntry is a line of /etc/hosts.
type hostsEntry struct {
	addr  string
	names []string
}

func (c *cmd) hosts() []hostsEntry {
	data, err := c.fs().ReadFile("/etc/hosts")
	if err != nil {
		return nil
	}
	var out []hostsEntry
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		out = append(out, hostsEntry{addr: f[0], names: f[1:]})
	}
	return out
}

// resolveHost looks name up in /etc/hosts as gethostbyname does (IPv4 only): the
// addresses of the first line that names it, and that line's canonical name.
func (c *cmd) resolveHost(name string) ([]string, string) {
	for _, h := range c.hosts() {
		if strings.Contains(h.addr, ":") || !slices.Contains(h.names, name) {
			continue
		}
		return []string{h.addr}, h.names[0]
	}
	return nil, ""
}

func runUname(c *cmd) int {
	o, args := c.getopt("snrvmpioa", map[string]byte{
		"all": 'a', "kernel-name": 's', "nodename": 'n', "kernel-release": 'r', "release": 'r',
		"kernel-version": 'v', "machine": 'm', "processor": 'p', "hardware-platform": 'i', "operating-system": 'o',
	})
	if len(args) > 0 {
		c.showUsage(1)
	}
	fields := []struct {
		opt   byte
		value string
	}{
		{'s', "Linux"}, {'n', c.p.Hostname()}, {'r', kernelRelease}, {'v', kernelVersion},
		{'m', machineArch}, {'p', "unknown"}, {'i', "unknown"}, {'o', "GNU/Linux"},
	}
	var out []string
	for _, f := range fields {
		if o.has('a') && (f.opt == 'p' || f.opt == 'i') {
			continue // -a leaves the unknown ones out
		}
		if o.has(f.opt) || o.has('a') || len(o.n) == 0 && f.opt == 's' {
			out = append(out, f.value)
		}
	}
	c.write(strings.Join(out, " ") + "\n")
	return 0
}

func runNproc(c *cmd) int {
	o, _ := c.getopt("", map[string]byte{"all": 'a', "ignore=": 'i'})
	n := simulatedCPUs
	if v := o.val('i'); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 {
			c.die("invalid number '%s'", v)
		}
		n = max(n-k, 1)
	}
	c.printf("%d\n", n)
	return 0
}

func runFree(c *cmd) int {
	unit := int64(1024)
	human := false
	if len(c.args) > 0 && strings.HasPrefix(c.args[0], "-") && len(c.args[0]) > 1 {
		switch c.args[0][1] {
		case 'b':
			unit = 1
		case 'k':
		case 'm':
			unit = 1 << 20
		case 'g':
			unit = 1 << 30
		case 'h':
			human = true
		default:
			c.showUsage(1)
		}
	}
	scale := func(v int64) string {
		if human {
			return humanSize(uint64(v), 1, 0)
		}
		return strconv.FormatInt(v/unit, 10)
	}
	free := int64(memTotal - memUsed - memCache)
	c.printf("       %12s%12s%12s%12s%12s%12s\n", "total", "used", "free", "shared", "buff/cache", "available")
	c.printf("Mem:   %12s%12s%12s%12s%12s%12s\n", scale(memTotal), scale(memUsed), scale(free), scale(memShare), scale(memCache), scale(free+memCache))
	c.printf("Swap:  %12s%12s%12s\n", scale(0), scale(0), scale(0))
	return 0
}

// humanSize is busybox's make_human_readable_str: val blocks of blockSize bytes, in
// displayUnit units, or (displayUnit 0) scaled with one decimal and K, M, G...
func humanSize(val uint64, blockSize, displayUnit uint64) string {
	if val == 0 {
		return "0"
	}
	if blockSize > 1 {
		val *= blockSize
	}
	if displayUnit != 0 {
		val += displayUnit / 2
		return strconv.FormatUint(val/displayUnit, 10)
	}
	units := "\x00KMGTPEZY"
	u, frac := 0, uint64(0)
	for val >= 1024 {
		u++
		frac = ((val%1024)*10 + 512) / 1024
		val /= 1024
	}
	if frac >= 10 {
		val++
		frac = 0
	}
	if u == 0 {
		return strconv.FormatUint(val, 10)
	}
	if blockSize == 0 {
		if frac >= 5 {
			val++
		}
		return fmt.Sprintf("%d%c", val, units[u])
	}
	return fmt.Sprintf("%d.%d%c", val, frac, units[u])
}

// signals are the Linux signal names by number, as kill -l lists them.
var signals = []string{1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS", 8: "FPE", 9: "KILL",
	10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM", 16: "STKFLT", 17: "CHLD", 18: "CONT",
	19: "STOP", 20: "TSTP", 21: "TTIN", 22: "TTOU", 23: "URG", 24: "XCPU", 25: "XFSZ", 26: "VTALRM", 27: "PROF",
	28: "WINCH", 29: "POLL", 30: "PWR", 31: "SYS"}

const sigRTMIN, sigRTMAX = 34, 64

// signum is busybox's get_signum: a number below NSIG, or a name with or without SIG,
// in any case; -1 when it is neither.
func signum(s string) int {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		if n < 65 {
			return int(n)
		}
		return -1
	}
	name := s
	if len(name) >= 3 && strings.EqualFold(name[:3], "SIG") {
		name = name[3:]
	}
	for i, sig := range signals {
		if sig != "" && strings.EqualFold(name, sig) {
			return i
		}
	}
	switch strings.ToUpper(name) {
	case "IO":
		return 29
	case "IOT":
		return 6
	case "CLD":
		return 17
	case "RTMIN":
		return sigRTMIN
	case "RTMAX":
		return sigRTMAX
	}
	return -1
}

func signame(n int) string {
	switch {
	case n > 0 && n < len(signals):
		return signals[n]
	case n == sigRTMIN:
		return "RTMIN"
	case n == sigRTMAX:
		return "RTMAX"
	}
	return strconv.Itoa(n)
}

func runKill(c *cmd) int {
	args := c.args
	sig := shell.SIGTERM
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' {
		a := args[0][1:]
		switch {
		case a == "l":
			return c.listSignals(args[1:])
		case a == "-":
			args = args[1:]
		default:
			if a == "s" && len(args) > 1 {
				args = args[1:]
				a = args[0]
			}
			if sig = signum(a); sig < 0 {
				c.errorf("bad signal name '%s'", a)
				return 1
			}
			args = args[1:]
		}
	}
	if len(args) == 0 {
		c.errorf("you need to specify whom to kill")
		return 1
	}
	errs := 0
	for _, a := range args {
		pid, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			c.errorf("invalid number '%s'", a)
			errs++
			continue
		}
		if err := c.p.Kill(pid, sig); err != nil {
			c.out.Flush()
			fmt.Fprintf(c.p.Stderr(), "%s: %v\n", c.name, err)
			errs++
		}
	}
	return errs
}

// psColumns are ps -o's columns: their width, header and value. The machine keeps no
// times, sizes or terminals: those columns show what an idle, just started process shows.
var psColumns = []struct {
	name, header string
	width        int
	value        func(c *cmd, q shell.ProcInfo) string
}{
	{"user", "USER", 8, func(c *cmd, q shell.ProcInfo) string { return c.userName(q.UID) }},
	{"group", "GROUP", 8, func(c *cmd, q shell.ProcInfo) string { return c.primaryGroup(q.UID) }},
	{"comm", "COMMAND", 16, func(_ *cmd, q shell.ProcInfo) string { return path.Base(firstArg(q.Argv)) }},
	{"args", "COMMAND", 0, func(_ *cmd, q shell.ProcInfo) string { return strings.Join(q.Argv, " ") }},
	{"pid", "PID", 5, func(_ *cmd, q shell.ProcInfo) string { return fmt.Sprintf("%5d", q.PID) }},
	{"ppid", "PPID", 5, func(_ *cmd, q shell.ProcInfo) string { return fmt.Sprintf("%5d", q.PPID) }},
	{"pgid", "PGID", 5, func(_ *cmd, q shell.ProcInfo) string { return fmt.Sprintf("%5d", 1) }},
	{"etime", "ELAPSED", 7, func(*cmd, shell.ProcInfo) string { return " 0:00" }},
	{"nice", "NI", 5, func(*cmd, shell.ProcInfo) string { return fmt.Sprintf("%5d", 0) }},
	{"rgroup", "RGROUP", 8, func(c *cmd, q shell.ProcInfo) string { return c.primaryGroup(q.UID) }},
	{"ruser", "RUSER", 8, func(c *cmd, q shell.ProcInfo) string { return c.userName(q.UID) }},
	{"time", "TIME", 5, func(*cmd, shell.ProcInfo) string { return " 0:00" }},
	{"tty", "TT", 6, func(*cmd, shell.ProcInfo) string { return "?" }},
	{"vsz", "VSZ", 4, func(*cmd, shell.ProcInfo) string { return "0" }},
	{"sid", "SID", 5, func(_ *cmd, q shell.ProcInfo) string { return fmt.Sprintf("%5d", 1) }},
	{"stat", "STAT", 4, func(c *cmd, q shell.ProcInfo) string {
		if q.PID == c.p.PID() {
			return "R"
		}
		return "S"
	}},
	{"rss", "RSS", 4, func(*cmd, shell.ProcInfo) string { return "0" }},
}

func firstArg(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	return argv[0]
}

// primaryGroup is the name (or number) of uid's group in /etc/passwd: the machine does
// not say which group a process runs as.
func (c *cmd) primaryGroup(uid int64) string {
	if u, ok := c.userByID(uid); ok {
		return c.groupName(u.gid)
	}
	return fmt.Sprint(uid)
}

func runPs(c *cmd) int {
	// busybox's ps lists every process whatever the options; -o picks the columns.
	o, _ := c.getopt("Zo:aAdeflT", nil)
	type col struct {
		header string
		width  int
		value  func(c *cmd, q shell.ProcInfo) string
	}
	var cols []col
	spec := "pid,user,time,args"
	if o.has('o') {
		spec = strings.Join(o.vals('o'), ",")
	}
	for _, item := range strings.Split(spec, ",") {
		name, header, hasHeader := strings.Cut(item, "=")
		found := false
		for _, pc := range psColumns {
			if pc.name == name {
				cl := col{pc.header, pc.width, pc.value}
				if hasHeader {
					cl.header = header
					if header != "" {
						cl.width = len(header)
					}
				}
				cols = append(cols, cl)
				found = true
			}
		}
		if !found {
			var names []string
			for _, pc := range psColumns {
				names = append(names, pc.name)
			}
			c.die("bad -o argument '%s', supported arguments: %s", name, strings.Join(names, ","))
		}
	}
	header := false
	for _, cl := range cols {
		if cl.header != "" {
			header = true
		}
	}
	line := func(field func(cl col) string) {
		var b strings.Builder
		for i, cl := range cols {
			v := field(cl)
			if v == "" {
				v = "-"
			}
			if i == len(cols)-1 {
				b.WriteString(v)
				break
			}
			b.WriteString(v + strings.Repeat(" ", max(cl.width-len(v)+1, 1)))
		}
		c.write(b.String() + "\n")
	}
	if header {
		line(func(cl col) string { return cl.header })
	}
	for _, q := range c.p.Procs() {
		c.tick()
		line(func(cl col) string {
			v := cl.value(c, q)
			if cl.width > 0 && len(v) > cl.width {
				v = v[:cl.width]
			}
			return v
		})
	}
	return 0
}

func runPidof(c *cmd) int {
	o, args := c.getopt("so:", nil)
	omit := map[int]bool{}
	for _, v := range o.vals('o') {
		for _, s := range strings.Split(v, ",") {
			if s == "%PPID" {
				omit[c.p.PPID()] = true
			} else if n, err := strconv.Atoi(s); err == nil {
				omit[n] = true
			}
		}
	}
	status := 1
	first := true
	for _, name := range args {
		procs := c.p.Procs()
		// Newest first, as busybox scans /proc and lists in reverse.
		for i := len(procs) - 1; i >= 0; i-- {
			q := procs[i]
			if omit[q.PID] || len(q.Argv) == 0 {
				continue
			}
			if path.Base(q.Argv[0]) != name && q.Argv[0] != name {
				continue
			}
			if !first {
				c.write(" ")
			}
			c.printf("%d", q.PID)
			first = false
			status = 0
			if o.has('s') {
				break
			}
		}
	}
	if !first {
		c.write("\n")
	}
	return status
}

func runWhich(c *cmd) int {
	o, args := c.getopt("a", nil)
	if len(args) == 0 {
		c.showUsage(1)
	}
	pathVar, ok := c.lookupEnv("PATH")
	if !ok {
		pathVar = "/sbin:/usr/sbin:/bin:/usr/bin"
	}
	status := 0
	for _, name := range args {
		found := false
		if strings.Contains(name, "/") {
			if c.executable(name) {
				c.write(name + "\n")
				found = true
			}
		} else {
			for _, dir := range strings.Split(pathVar, ":") {
				if dir == "" {
					dir = "."
				}
				f := joinPath(dir, name)
				if c.executable(f) {
					c.write(f + "\n")
					found = true
					if !o.has('a') {
						break
					}
				}
			}
		}
		if !found {
			status = 1
		}
	}
	return status
}

func (c *cmd) lookupEnv(name string) (string, bool) {
	for _, e := range c.environ() {
		if k, v, _ := strings.Cut(e, "="); k == name {
			return v, true
		}
	}
	return "", false
}

// executable reports whether name is a regular file the process may execute.
func (c *cmd) executable(name string) bool {
	info, err := c.fs().Stat(c.abs(name))
	return err == nil && info.Mode.IsRegular() && c.access(info, 1)
}

func runGetent(c *cmd) int {
	if len(c.args) == 0 {
		c.errorf("wrong number of arguments")
		return 1
	}
	db, keys := c.args[0], c.args[1:]
	status := 0
	switch db {
	case "hosts", "ahosts", "ahostsv4":
		entries := c.hosts()
		show := func(h hostsEntry) {
			c.printf("%-15s %s\n", h.addr, strings.Join(h.names, " "))
		}
		if len(keys) == 0 {
			for _, h := range entries {
				show(h)
			}
			return 0
		}
		for _, k := range keys {
			found := false
			for _, h := range entries {
				if h.addr == k || slices.Contains(h.names, k) {
					show(h)
					found = true
					break
				}
			}
			if !found {
				status = 2
			}
		}
	case "passwd", "group":
		c.readDB()
		var lines []string
		match := func(line, name string, id int64, key string) bool {
			return key == name || key == strconv.FormatInt(id, 10)
		}
		type ent struct {
			line, name string
			id         int64
		}
		var ents []ent
		if db == "passwd" {
			for _, u := range c.users {
				ents = append(ents, ent{u.line, u.name, u.uid})
			}
		} else {
			for _, g := range c.groups {
				ents = append(ents, ent{g.line, g.name, g.gid})
			}
		}
		if len(keys) == 0 {
			for _, e := range ents {
				lines = append(lines, e.line)
			}
		}
		for _, k := range keys {
			found := false
			for _, e := range ents {
				if match(e.line, e.name, e.id, k) {
					lines = append(lines, e.line)
					found = true
					break
				}
			}
			if !found {
				status = 2
			}
		}
		for _, l := range lines {
			c.write(l + "\n")
		}
	default:
		c.out.Flush()
		fmt.Fprintf(c.p.Stderr(), "Unknown database: %s\nTry `getent --help' or `getent --usage' for more information.\n", db)
		return 1
	}
	return status
}

func runNice(c *cmd) int {
	o, args := c.getopt("+n:", nil)
	if v := o.val('n'); v != "" {
		if _, err := strconv.Atoi(v); err != nil {
			c.die("invalid number '%s'", v)
		}
	}
	if len(args) == 0 {
		// Every simulated process runs at niceness 0.
		c.write("0\n")
		return 0
	}
	return c.execute(args, nil)
}

func runNohup(c *cmd) int {
	args := c.args
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		c.showUsage(1)
	}
	// stdout is a pipe or a log, never a terminal, so nohup.out is never made.
	child, status := c.start(args, nil)
	if child == nil {
		return status
	}
	child.Trap(shell.SIGHUP, true) // handled by doing nothing: ignored
	return c.waitExec(child, map[int]bool{shell.SIGHUP: true})
}

// The machine has no wait with a deadline, so timeout sleeps in steps and looks whether
// its command has ended: first after firstPoll (a command that ends at once is seen at
// once), each step twice the last, up to pollInterval.
const (
	firstPoll    = time.Millisecond
	pollInterval = 100 * time.Millisecond
)

func runTimeout(c *cmd) int {
	o, args := c.getopt("+s:k:", nil)
	sig := shell.SIGTERM
	if s := o.val('s'); s != "" {
		if sig = signum(s); sig < 0 {
			c.die("unknown signal '%s'", s)
		}
	}
	var killAfter time.Duration
	if k := o.val('k'); k != "" {
		killAfter = seconds(c.parseDuration(k))
	}
	if len(args) < 2 {
		c.showUsage(1)
	}
	limit := seconds(c.parseDuration(args[0]))
	child, status := c.start(args[1:], nil)
	if child == nil {
		return status
	}
	for _, s := range forwarded {
		c.p.Trap(s, true)
	}
	if !c.waitFor(child, limit) {
		c.p.Kill(child.PID(), sig)
		if killAfter > 0 && !c.waitFor(child, killAfter) {
			c.p.Kill(child.PID(), shell.SIGKILL)
		}
	}
	// busybox's timeout execs the command itself, so its status is the command's: 143
	// when TERM killed it.
	return c.waitExec(child, nil)
}

// waitFor waits up to d for child to exit and reports whether it did.
func (c *cmd) waitFor(child *shell.Proc, d time.Duration) bool {
	deadline := c.p.Now().Add(d)
	step := firstPoll
	for {
		if done, _ := child.Exited(); done {
			return true
		}
		left := deadline.Sub(c.p.Now())
		if left <= 0 || d == 0 {
			return false
		}
		if !c.sleep(min(left, step)) {
			for _, sig := range c.p.Pending() {
				c.p.Kill(child.PID(), sig)
			}
			step = firstPoll // the command may be ending now
			continue
		}
		step = min(2*step, pollInterval)
	}
}

func runBusybox(c *cmd) int {
	// Invoked by an applet's name (a link to busybox), busybox is that applet.
	if base := path.Base(c.argv0); base != "busybox" {
		if a, ok := applets[base]; ok {
			return runApplet(c.p, base, a, append([]string{c.argv0}, c.args...))
		}
		c.out.Flush()
		fmt.Fprintf(c.p.Stderr(), "%s: applet not found\n", base)
		return 127
	}
	if len(c.args) == 0 || c.args[0] == "--help" {
		c.out.Flush()
		io.WriteString(c.p.Stderr(), banner+"\nUsage: busybox [function [arguments]...]\n   or: busybox --list\n   or: function [arguments]...\n\nCurrently defined functions:\n\t"+strings.Join(Names(), ", ")+"\n")
		if len(c.args) == 0 {
			return 1
		}
		return 0
	}
	if c.args[0] == "--list" {
		for _, n := range Names() {
			c.write(n + "\n")
		}
		return 0
	}
	name := c.args[0]
	a, ok := applets[name]
	if !ok || name == "busybox" {
		c.out.Flush()
		fmt.Fprintf(c.p.Stderr(), "%s: applet not found\n", name)
		return 127
	}
	return runApplet(c.p, name, a, c.args)
}
