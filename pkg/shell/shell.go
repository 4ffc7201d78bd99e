package shell

import (
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Env is what a command sees inside its container.
type Env struct {
	Hostname string            // the pod's hostname (`hostname`, $HOSTNAME, /etc/hostname)
	Vars     []Var             // the environment in order, as `env` prints it
	Files    map[string]string // absolute path -> content: the files `cat` can read
	Now      time.Time         // the simulator's clock when the command starts (`date`)
}

// Var is one environment variable. When a name occurs twice in Env.Vars, the last one is
// its value (as with a container's env list), though `env` prints both.
type Var struct{ Name, Value string }

// Step is one thing the command does, in order: write Stdout and Stderr, then (if Stdin)
// copy its stdin to stdout until EOF, then sleep Sleep.
type Step struct {
	Stdout, Stderr []byte
	Stdin          bool
	Sleep          time.Duration
}

// Program is what a command does: its steps and its exit code.
type Program struct {
	Steps    []Step
	ExitCode int
}

// Duration is the sum of the steps' sleeps. It saturates rather than overflows, so that
// `sleep infinity` lasts forever instead of wrapping to a negative time.
func (p Program) Duration() time.Duration {
	var d time.Duration
	for _, s := range p.Steps {
		d = addDuration(d, s.Sleep)
	}
	return d
}

// Output is the concatenated Stdout and Stderr of all steps (stdin copies excluded), as
// ExecSync returns them.
func (p Program) Output() (stdout, stderr []byte) {
	for _, s := range p.Steps {
		stdout = append(stdout, s.Stdout...)
		stderr = append(stderr, s.Stderr...)
	}
	return stdout, stderr
}

// Run interprets cmd (argv, as in a pod's exec probe or kubectl exec) in env.
func Run(cmd []string, env Env) Program {
	m := &machine{env: env}
	if len(cmd) == 0 {
		m.write("", "exec: no command\n")
		return m.program(1)
	}
	code := m.run(cmd, func(name string) string { return name + ": command not found\n" })
	return m.program(code)
}

// Commands lists the simulated commands, sorted (for docs and help).
func Commands() []string {
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// command runs argv (argv[0] is the name as invoked) on m and returns its exit code.
type command func(m *machine, argv []string) int

// commands is the table of simulated commands by base name. It is filled in init because
// sh and env run commands from this very table, and a variable initialiser that refers to
// itself is an initialisation cycle.
var commands map[string]command

func init() {
	commands = map[string]command{
		"cat":      runCat,
		"date":     runDate,
		"echo":     runEcho,
		"env":      runEnv,
		"exit":     runExit,
		"false":    func(*machine, []string) int { return 1 },
		"hostname": runHostname,
		"printenv": runPrintenv,
		"sleep":    runSleep,
		"true":     func(*machine, []string) int { return 0 },
		"sh":       runShell,
		"bash":     runShell,
		"ash":      runShell,
		"dash":     runShell,
	}
}

// machine runs commands and records what they do as steps. Commands run one after another
// and append to the same steps, so a script's output interleaves with its sleeps.
type machine struct {
	env     Env
	steps   []Step
	elapsed time.Duration // the sleeps so far, so `date` sees the simulated clock move
}

// run looks argv[0] up by base name (so /bin/echo is echo) and runs it; notFound words the
// error for a name that is not in the table, since the caller (exec, sh, env) decides it.
func (m *machine) run(argv []string, notFound func(name string) string) int {
	cmd, ok := commands[path.Base(argv[0])]
	if !ok {
		m.write("", notFound(argv[0]))
		return 127
	}
	return cmd(m, argv)
}

func (m *machine) program(code int) Program {
	return Program{Steps: m.steps, ExitCode: code}
}

// write appends output. It joins the last step when that keeps the order a step promises
// (its stdout, then its stderr, then stdin and sleep), so plain output stays one step.
func (m *machine) write(stdout, stderr string) {
	if stdout == "" && stderr == "" {
		return // an empty step would mean nothing to the runner
	}
	if last := m.last(); last != nil && !last.Stdin && last.Sleep == 0 && (stdout == "" || len(last.Stderr) == 0) {
		last.Stdout = append(last.Stdout, stdout...)
		last.Stderr = append(last.Stderr, stderr...)
		return
	}
	m.steps = append(m.steps, Step{Stdout: bytesOf(stdout), Stderr: bytesOf(stderr)})
}

// bytesOf is s as bytes, nil when empty so that steps compare equal however built.
func bytesOf(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// copyStdin appends a copy of stdin to stdout, after the output written so far.
func (m *machine) copyStdin() {
	if last := m.last(); last != nil && !last.Stdin && last.Sleep == 0 {
		last.Stdin = true
		return
	}
	m.steps = append(m.steps, Step{Stdin: true})
}

// sleep appends a sleep. A sleep is the last thing a step does, so it always joins the
// last step.
func (m *machine) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	m.elapsed = addDuration(m.elapsed, d)
	if last := m.last(); last != nil {
		last.Sleep = addDuration(last.Sleep, d)
		return
	}
	m.steps = append(m.steps, Step{Sleep: d})
}

func (m *machine) last() *Step {
	if len(m.steps) == 0 {
		return nil
	}
	return &m.steps[len(m.steps)-1]
}

// now is the simulated clock: the start time plus the sleeps so far.
func (m *machine) now() time.Time {
	return m.env.Now.Add(m.elapsed)
}

// lookupVar finds name in the environment; the last definition wins.
func (m *machine) lookupVar(name string) (string, bool) {
	for i := len(m.env.Vars) - 1; i >= 0; i-- {
		if m.env.Vars[i].Name == name {
			return m.env.Vars[i].Value, true
		}
	}
	return "", false
}

// readFile reads a file of the container. /etc/hostname always exists, as the runtime
// mounts it, unless Files says otherwise. Relative paths are from /, the usual workdir.
func (m *machine) readFile(name string) (string, bool) {
	p := path.Clean("/" + name)
	if content, ok := m.env.Files[p]; ok {
		return content, true
	}
	if p == "/etc/hostname" {
		return m.env.Hostname + "\n", true
	}
	return "", false
}

func addDuration(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// runEcho: echo [-n] ARGS... (no backslash escapes, as GNU echo without -e).
func runEcho(m *machine, argv []string) int {
	args, newline := argv[1:], "\n"
	for len(args) > 0 && args[0] == "-n" {
		args, newline = args[1:], ""
	}
	m.write(strings.Join(args, " ")+newline, "")
	return 0
}

// runCat: cat [FILE|-]...; a missing file is reported and skipped, as cat does.
func runCat(m *machine, argv []string) int {
	files := argv[1:]
	if len(files) == 0 {
		files = []string{"-"}
	}
	code := 0
	for _, f := range files {
		if f == "-" {
			m.copyStdin()
			continue
		}
		content, ok := m.readFile(f)
		if !ok {
			m.write("", "cat: "+f+": No such file or directory\n")
			code = 1
			continue
		}
		m.write(content, "")
	}
	return code
}

// runEnv: env prints the environment; env NAME=VALUE... [CMD ARGS...] sets variables and
// prints the result or runs CMD with it, as env(1) does.
func runEnv(m *machine, argv []string) int {
	args := argv[1:]
	vars := m.env.Vars
	for ; len(args) > 0; args = args[1:] {
		if strings.HasPrefix(args[0], "-") {
			m.write("", "env: option not simulated: "+args[0]+"\n")
			return 125 // env's own failure, as distinct from its command's
		}
		name, value, ok := strings.Cut(args[0], "=")
		if !ok {
			break
		}
		vars = setVar(vars, name, value)
	}
	if len(args) == 0 {
		printVars(m, vars)
		return 0
	}
	saved := m.env.Vars
	m.env.Vars = vars
	defer func() { m.env.Vars = saved }()
	return m.run(args, func(name string) string {
		return "env: '" + name + "': No such file or directory\n"
	})
}

// setVar returns vars with name set to value, replacing it in place if it is there. It
// copies first: vars may be the caller's Env.Vars, which Run must not change.
func setVar(vars []Var, name, value string) []Var {
	out := append([]Var(nil), vars...)
	found := false
	for i := range out {
		if out[i].Name == name {
			out[i].Value, found = value, true
		}
	}
	if !found {
		out = append(out, Var{Name: name, Value: value})
	}
	return out
}

func printVars(m *machine, vars []Var) {
	var b strings.Builder
	for _, v := range vars {
		b.WriteString(v.Name + "=" + v.Value + "\n")
	}
	m.write(b.String(), "")
}

// runPrintenv: printenv prints the environment; printenv NAME... prints the values, and
// fails if any is unset. It sees only the environment (Vars), not the shell's $HOSTNAME.
func runPrintenv(m *machine, argv []string) int {
	if len(argv) == 1 {
		printVars(m, m.env.Vars)
		return 0
	}
	code := 0
	for _, name := range argv[1:] {
		value, ok := m.lookupVar(name)
		if !ok {
			code = 1
			continue
		}
		m.write(value+"\n", "")
	}
	return code
}

// runHostname prints the hostname. Its options (-i, -f, setting the name) are not
// simulated: a wrong answer would be worse than an error.
func runHostname(m *machine, argv []string) int {
	if len(argv) > 1 {
		m.write("", "hostname: arguments not simulated\n")
		return 1
	}
	m.write(m.env.Hostname+"\n", "")
	return 0
}

// dateLayout is date's default output; the clock is always printed in UTC, as in a
// container without a time zone.
const dateLayout = "Mon Jan _2 15:04:05 UTC 2006"

// runDate: date [-u] [+%s]. The time is the simulated clock, which sleeps move on.
func runDate(m *machine, argv []string) int {
	now := m.now().UTC()
	out := now.Format(dateLayout)
	for _, arg := range argv[1:] {
		switch arg {
		case "-u", "--utc", "--universal":
			// Already UTC.
		case "+%s":
			out = strconv.FormatInt(now.Unix(), 10)
		default:
			m.write("", "date: invalid date format "+arg+"\n")
			return 1
		}
	}
	m.write(out+"\n", "")
	return 0
}

// runSleep: sleep NUMBER[SUFFIX]..., summed, as GNU sleep.
func runSleep(m *machine, argv []string) int {
	if len(argv) == 1 {
		m.write("", "sleep: missing operand\n")
		return 1
	}
	var total time.Duration
	for _, arg := range argv[1:] {
		d, ok := parseInterval(arg)
		if !ok {
			// GNU sleep checks every operand before sleeping at all.
			m.write("", "sleep: invalid time interval '"+arg+"'\n")
			return 1
		}
		total = addDuration(total, d)
	}
	m.sleep(total)
	return 0
}

var intervalUnits = map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}

// parseInterval parses GNU sleep's operand: a non-negative decimal number with an optional
// unit suffix s, m, h or d, or "inf"/"infinity". Too long a sleep saturates to forever.
func parseInterval(s string) (time.Duration, bool) {
	unit := time.Second
	if n := len(s); n > 0 {
		if u, ok := intervalUnits[s[n-1]]; ok {
			s, unit = s[:n-1], u
		}
	}
	if s == "inf" || s == "infinity" {
		return math.MaxInt64, true
	}
	if !isDecimal(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	ns := math.Round(f * float64(unit))
	if ns >= math.MaxInt64 {
		return math.MaxInt64, true
	}
	return time.Duration(ns), true
}

// isDecimal reports whether s is digits with at most one '.' and at least one digit:
// ParseFloat alone would also take signs, exponents, hex and NaN.
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// runExit: exit [N] outside a shell. Inside sh -c, exit is a builtin that also stops the
// script (see shell.exit).
func runExit(m *machine, argv []string) int {
	return exitCode(m, argv[1:], 0)
}

// exitCode is the status exit [N] exits with: N mod 256, or last without N. A
// non-numeric N is an error with status 2, as in dash.
func exitCode(m *machine, args []string, last int) int {
	if len(args) == 0 {
		return last
	}
	n := args[0]
	if n == "" || strings.Trim(n, "0123456789") != "" {
		m.write("", "sh: exit: Illegal number: "+n+"\n")
		return 2
	}
	// Digit by digit, so that a huge N wraps like the 8-bit status it becomes.
	code := 0
	for i := 0; i < len(n); i++ {
		code = (code*10 + int(n[i]-'0')) % 256
	}
	return code
}
