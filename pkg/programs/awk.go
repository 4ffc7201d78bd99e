package programs

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// awkKind is what an awk value is: a number, a string, or a string from input that looks
// like a number (a "strnum", compared as a number), or nothing yet.
type awkKind uint8

const (
	akUninit awkKind = iota
	akNum
	akStr
	akStrnum
)

type awkValue struct {
	kind awkKind
	n    float64
	s    string
}

func awkNum(n float64) awkValue { return awkValue{kind: akNum, n: n} }
func awkStr(s string) awkValue  { return awkValue{kind: akStr, s: s} }

// awkInput is a string from input (fields, -v, ARGV): a strnum when it looks numeric.
func awkInput(s string) awkValue {
	if n, ok := awkLooksNumeric(s); ok {
		return awkValue{kind: akStrnum, n: n, s: s}
	}
	return awkStr(s)
}

func awkLooksNumeric(s string) (float64, bool) {
	n, end := awkStrtod(s)
	if end == 0 {
		return 0, false
	}
	// What follows the number may only be blanks (busybox's skip_spaces).
	for rest := s[end:]; rest != ""; {
		switch {
		case rest[0] == ' ' || rest[0] == '\t':
			rest = rest[1:]
		case strings.HasPrefix(rest, "\\\n"):
			rest = rest[2:]
		default:
			return 0, false
		}
	}
	return n, true
}

// awkAtof is a string's number, as C's strtod reads its start.
func awkAtof(s string) float64 {
	n, _ := awkStrtod(s)
	return n
}

// awkStrtod is C's strtod: the number s starts with (after white space: decimal, hex,
// inf or nan) and how many bytes it took, 0 when none.
func awkStrtod(s string) (float64, int) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] >= '\t' && s[i] <= '\r') {
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(v float64) float64 {
		if neg {
			return -v
		}
		return v
	}
	rest := strings.ToLower(s[i:min(len(s), i+8)])
	switch {
	case strings.HasPrefix(rest, "infinity"):
		return sign(math.Inf(1)), i + 8
	case strings.HasPrefix(rest, "inf"):
		return sign(math.Inf(1)), i + 3
	case strings.HasPrefix(rest, "nan"):
		return sign(math.NaN()), i + 3
	case strings.HasPrefix(rest, "0x"):
		j := i + 2
		v, digits := 0.0, 0
		hex := func(c byte) (int, bool) {
			switch {
			case c >= '0' && c <= '9':
				return int(c - '0'), true
			case c >= 'a' && c <= 'f':
				return int(c-'a') + 10, true
			case c >= 'A' && c <= 'F':
				return int(c-'A') + 10, true
			}
			return 0, false
		}
		for ; j < len(s); j++ {
			d, ok := hex(s[j])
			if !ok {
				break
			}
			v = v*16 + float64(d)
			digits++
		}
		if j < len(s) && s[j] == '.' {
			scale := 1.0 / 16
			k := j + 1
			for ; k < len(s); k++ {
				d, ok := hex(s[k])
				if !ok {
					break
				}
				v += float64(d) * scale
				scale /= 16
				digits++
			}
			if digits > 0 {
				j = k
			}
		}
		if digits == 0 {
			return 0, i + 1 // the "0" before the x
		}
		if j < len(s) && (s[j] == 'p' || s[j] == 'P') {
			k := j + 1
			eneg := false
			if k < len(s) && (s[k] == '+' || s[k] == '-') {
				eneg = s[k] == '-'
				k++
			}
			if k < len(s) && s[k] >= '0' && s[k] <= '9' {
				e := 0
				for ; k < len(s) && s[k] >= '0' && s[k] <= '9'; k++ {
					if e < 100000 {
						e = e*10 + int(s[k]-'0')
					}
				}
				if eneg {
					e = -e
				}
				v = math.Ldexp(v, e)
				j = k
			}
		}
		return sign(v), j
	}
	v, ok := strtod(s[start:])
	if !ok {
		return 0, 0
	}
	// strtod took the longest decimal prefix: find where it ended.
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			j = k
		}
	}
	return v, j
}

// awkFormatNum is a number as a string: an integer plainly, anything else with fmt
// (CONVFMT or OFMT).
func awkFormatNum(n float64, format string) string {
	if n == math.Trunc(n) && n >= -(1<<63) && n < 1<<63 {
		return strconv.FormatInt(int64(n), 10)
	}
	if math.IsNaN(n) {
		return "nan"
	}
	if math.IsInf(n, 1) {
		return "inf"
	}
	if math.IsInf(n, -1) {
		return "-inf"
	}
	return awkSprintf(format, []awkValue{awkNum(n)}, "%.6g")
}

// awk is one run of an awk program.
type awk struct {
	c       *cmd
	prog    *awkProgram
	vars    map[string]awkValue
	arrays  map[string]*awkArray
	record  string
	fields  []string // $1..$NF
	split   bool     // fields hold the split of record
	recFS   string   // FS when record was set
	inRange map[*awkRule]bool
	streams map[string]*awkStream // files and commands getline, print and printf opened
	exiting bool
	status  int
	rnd     glibcRandom
	seed    uint32

	// The main input: the file being read (nil between files), the last ARGV operand
	// looked at, and whether one was a file.
	mainIn      *awkReader
	argInd      int
	filesHappen bool

	line   int        // of the statement running, which runtime errors name
	frame  []*awkCell // the parameters of the function running
	depth  int
	retval awkValue
}

// awkCell is a function's parameter: a scalar, or an array (the caller's, shared). An
// untyped variable passed becomes the caller's array when the function uses it as one.
type awkCell struct {
	v      awkValue
	arr    *awkArray
	global string
	parent *awkCell
}

// awkStream is a file or command opened by name: read by getline, or written by print.
type awkStream struct {
	br    *awkReader
	child *shell.Proc
	pipe  *shell.PipeEnd
}

// awkExit unwinds the program from exit, once END has run.
type awkExit struct{}

// Control flow of statements: next, exit, break and continue unwind to where they land.
type awkFlow int

const (
	flowNone awkFlow = iota
	flowNext
	flowBreak
	flowContinue
	flowReturn
	flowNextfile
)

// awkRuntimeError ends the program with busybox's message (after the line, unless raw).
type awkRuntimeError struct {
	msg string
	raw bool
}

// awkRegex compiles a dynamic regex, or ends the program as busybox's xregcomp.
func awkRegex(pat string) *regexp.Regexp {
	re, err := compileRegex(pat, true, false)
	if err != nil {
		panic(&awkRuntimeError{msg: awkRegexError(pat, err), raw: true})
	}
	return re
}

// awkRegexError is busybox's message for a bad regex: glibc's regcomp calls a '[' that
// ends the pattern an invalid expression rather than an unmatched bracket.
func awkRegexError(pat string, err error) string {
	msg := err.Error()
	if strings.HasSuffix(pat, "[") && strings.HasPrefix(msg, "Unmatched [") {
		msg = "Invalid regular expression"
	}
	return fmt.Sprintf("bad regex '%s': %s", pat, msg)
}

func runAwk(c *cmd) int {
	o, args := c.getopt("F:v:f:e:", nil)
	src := ""
	switch {
	case o.Has('f'):
		for _, f := range o.Vals('f') {
			data, err := c.readAll(f)
			if err != nil {
				c.perror(err, "can't open '%s'", f)
				c.exit(1)
			}
			src += string(data) + "\n"
		}
	case o.Has('e'):
		src = strings.Join(o.Vals('e'), "\n")
	default:
		if len(args) == 0 {
			c.showUsage(1)
		}
		src, args = args[0], args[1:]
	}
	prog, err := parseAwk(src)
	if err != nil {
		c.die("%s", err)
	}
	a := &awk{c: c, prog: prog, vars: map[string]awkValue{}, arrays: map[string]*awkArray{},
		inRange: map[*awkRule]bool{}, streams: map[string]*awkStream{}, seed: 1, line: prog.lastLine}
	a.rnd.seed(1)
	for k, v := range map[string]string{"FS": " ", "OFS": " ", "ORS": "\n", "RS": "\n", "SUBSEP": "\x1c",
		"CONVFMT": "%.6g", "OFMT": "%.6g", "FILENAME": ""} {
		a.vars[k] = awkStr(v)
	}
	a.vars["NR"], a.vars["FNR"], a.vars["NF"] = awkNum(0), awkNum(0), awkNum(0)
	env := newAwkArray()
	for _, e := range c.environ() {
		k, v, _ := strings.Cut(e, "=")
		env.set(k, awkInput(v))
	}
	a.arrays["ENVIRON"] = env
	argv := newAwkArray()
	argv.set("0", awkStr("awk"))
	for i, arg := range args {
		argv.set(strconv.Itoa(i+1), awkInput(arg))
	}
	a.arrays["ARGV"] = argv
	a.vars["ARGC"] = awkNum(float64(len(args) + 1))
	if o.Has('F') {
		a.vars["FS"] = awkStr(awkUnescape(o.Val('F')))
	}
	for _, v := range o.Vals('v') {
		if !a.assignArg(v) {
			c.showUsage(1)
		}
	}
	return a.run()
}

// awkUnescape processes the escapes of a -v value or -F separator ("\t": a tab).
func awkUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			ch, next := escape(s, i+1)
			b.WriteByte(ch)
			i = next - 1
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// assignArg performs a NAME=value operand or -v; false when arg is no assignment.
func (a *awk) assignArg(arg string) bool {
	name, val, ok := strings.Cut(arg, "=")
	if !ok || name == "" || !(name[0] == '_' || name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
		return false
	}
	for _, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	a.setVar(name, awkInput(awkUnescape(val)))
	return true
}

func (a *awk) run() (status int) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(awkExit); ok {
				status = a.status
				return
			}
			e, ok := r.(*awkRuntimeError)
			if !ok {
				panic(r)
			}
			if e.raw {
				a.c.errorf("%s", e.msg)
			} else {
				a.c.errorf("cmd. line:%d: %s", a.line, e.msg)
			}
			status = 1
		}
	}()
	a.exec(a.prog.begin)
	if len(a.prog.rules) > 0 || len(a.prog.end) > 0 {
		a.mainLoop()
	}
	a.exit()
	return a.status
}

// exit ends the program as busybox's awk_exit: END runs (unless it is what exits), then
// the commands of pipes are waited for.
func (a *awk) exit() {
	if !a.exiting {
		a.exiting = true
		a.exec(a.prog.end)
	}
	names := make([]string, 0, len(a.streams))
	for name := range a.streams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if a.streams[name].child != nil {
			a.close(name)
		}
	}
	panic(awkExit{})
}

func (a *awk) mainLoop() {
	if a.mainIn == nil && !a.nextInput() {
		return
	}
	for a.mainIn != nil {
		a.vars["FNR"] = awkNum(0)
		for {
			rec, ok := a.readRecord(a.mainIn)
			if !ok {
				if err := a.mainIn.err; err != nil {
					panic(&awkRuntimeError{msg: errText(err)})
				}
				break
			}
			a.vars["NR"] = awkNum(a.num(a.vars["NR"]) + 1)
			a.vars["FNR"] = awkNum(a.num(a.vars["FNR"]) + 1)
			a.setRecord(rec)
			if a.rules() == flowNextfile {
				break
			}
		}
		a.nextInput()
	}
}

// nextInput opens the next file operand (stdin when there is none), performing the
// assignments before it, as busybox's next_input_file; false at the end.
func (a *awk) nextInput() bool {
	if a.mainIn != nil {
		a.mainIn.release()
		a.mainIn = nil
	}
	name := "-"
	for {
		if float64(a.argInd+1) >= a.num(a.getVar("ARGC")) {
			if a.filesHappen {
				return false
			}
			break
		}
		a.argInd++
		arg := a.str(a.array("ARGV").m[strconv.Itoa(a.argInd)])
		if arg != "" && !a.assignArg(arg) {
			name = arg
			break
		}
	}
	r, err := a.c.open(name)
	if err != nil {
		a.c.perror(err, "%s", name)
		a.c.exit(1)
	}
	a.filesHappen = true
	a.vars["FILENAME"] = awkStr(name)
	a.mainIn = &awkReader{p: a.c.p, r: r}
	return true
}

// awkReader is an input read by records: what was read and not yet taken is
// data[off:].
type awkReader struct {
	p    *shell.Proc // charged for the buffer
	r    io.Reader
	data []byte
	off  int
	buf  []byte // data[off:]
	eof  bool
	err  error // a read's error other than the end
}

// fill reads more of the input: false at its end (or on an error, which ends it as
// for busybox's reads).
func (ar *awkReader) fill() bool {
	if ar.eof {
		return false
	}
	if ar.off > 0 {
		n := copy(ar.data, ar.data[ar.off:])
		ar.data, ar.off = ar.data[:n], 0
	}
	if cap(ar.data)-len(ar.data) < 4096 {
		// The buffer is memory the program holds (a record without end grows it until
		// the container's limit).
		size := 2*cap(ar.data) + 64<<10
		ar.p.Charge(int64(size - cap(ar.data)))
		nb := make([]byte, len(ar.data), size)
		copy(nb, ar.data)
		ar.data = nb
	}
	n, err := ar.r.Read(ar.data[len(ar.data):cap(ar.data)])
	ar.data = ar.data[:len(ar.data)+n]
	ar.buf = ar.data[ar.off:]
	if err != nil && n == 0 {
		ar.eof = true
		if err != io.EOF {
			ar.err = err
		}
		return false
	}
	return true
}

// release gives back the buffer's memory.
func (ar *awkReader) release() {
	ar.p.Charge(-int64(cap(ar.data)))
	ar.data, ar.buf, ar.off = nil, nil, 0
}

// take returns the record buf[:end] and drops buf[:next].
func (ar *awkReader) take(end, next int) string {
	rec := string(ar.buf[:end])
	ar.off += next
	ar.buf = ar.data[ar.off:]
	return rec
}

// awkSeparator is where the first non-empty match of re in b is (an empty one would
// separate nothing, forever).
func awkSeparator(re *regexp.Regexp, b []byte) []int {
	for _, m := range re.FindAllIndex(b, -1) {
		if m[1] > m[0] {
			return m
		}
	}
	return nil
}

// readRecord reads one record as RS says: up to its character, a paragraph when it is
// empty, up to a match when it is longer (a regex), as busybox's awk_getline.
func (a *awk) readRecord(ar *awkReader) (string, bool) {
	a.c.tick()
	rs := a.str(a.vars["RS"])
	var re *regexp.Regexp
	if len(rs) > 1 {
		re = awkRegex(rs)
	}
	scanned := 0
	for {
		switch {
		case rs == "":
			skip := 0
			for skip < len(ar.buf) && ar.buf[skip] == '\n' {
				skip++
			}
			if skip > 0 {
				ar.take(0, skip)
			}
			if i := bytes.Index(ar.buf, []byte("\n\n")); i >= 0 {
				return ar.take(i, i+2), true
			}
		case re == nil:
			if i := bytes.IndexByte(ar.buf[scanned:], rs[0]); i >= 0 {
				return ar.take(scanned+i, scanned+i+1), true
			}
			scanned = len(ar.buf)
		default:
			// A match that reaches the end of what was read may go on: read more first.
			if m := awkSeparator(re, ar.buf); m != nil && (m[1] < len(ar.buf) || ar.eof) {
				return ar.take(m[0], m[1]), true
			}
		}
		if !ar.fill() {
			if ar.err != nil {
				// busybox's awk_getline gives up what it read at an error.
				ar.buf = ar.buf[:0]
				return "", false
			}
			if len(ar.buf) == 0 {
				return "", false
			}
			if re != nil {
				if m := awkSeparator(re, ar.buf); m != nil {
					return ar.take(m[0], m[1]), true
				}
			}
			return ar.take(len(ar.buf), len(ar.buf)), true
		}
	}
}

func (a *awk) rules() awkFlow {
	for _, r := range a.prog.rules {
		a.line = r.line
		matched := false
		switch {
		case r.pattern == nil:
			matched = true
		case r.pattern2 != nil:
			if a.inRange[r] {
				matched = true
				if a.truth(a.eval(r.pattern2)) {
					a.inRange[r] = false
				}
			} else if a.truth(a.eval(r.pattern)) {
				matched = true
				a.inRange[r] = !a.truth(a.eval(r.pattern2))
			}
		default:
			matched = a.truth(a.eval(r.pattern))
		}
		if !matched {
			continue
		}
		if !r.hasAction {
			a.output(a.record+a.str(a.vars["ORS"]), nil, false)
			continue
		}
		switch f := a.exec(r.action); f {
		case flowNext:
			return flowNone
		case flowNextfile:
			return f
		}
	}
	return flowNone
}

func (a *awk) exec(body []awkStmt) awkFlow {
	for _, s := range body {
		if f := a.stmt(s); f != flowNone {
			return f
		}
	}
	return flowNone
}

func (a *awk) stmt(s awkStmt) awkFlow {
	a.c.tick()
	switch s := s.(type) {
	case sLine:
		a.line = s.line
		return a.stmt(s.s)
	case sExpr:
		a.eval(s.x)
	case sBlock:
		return a.exec(s.body)
	case sPrint:
		a.print(s)
	case sIf:
		if a.truth(a.eval(s.c)) {
			return a.stmt(s.then)
		} else if s.other != nil {
			return a.stmt(s.other)
		}
	case sWhile:
		for first := true; s.do && first || a.truth(a.eval(s.c)); first = false {
			switch f := a.stmt(s.body); f {
			case flowBreak:
				return flowNone
			case flowNext, flowNextfile, flowReturn:
				return f
			}
		}
	case sFor:
		if s.init != nil {
			a.stmt(s.init)
		}
		for s.c == nil || a.truth(a.eval(s.c)) {
			switch f := a.stmt(s.body); f {
			case flowBreak:
				return flowNone
			case flowNext, flowNextfile, flowReturn:
				return f
			}
			if s.post != nil {
				a.stmt(s.post)
			}
		}
	case sForIn:
		// busybox walks the keys there were when the loop began, in its hash's order,
		// deleted ones too.
		for _, k := range a.array(s.arr).keys() {
			a.setVar(s.v, awkInput(k))
			switch f := a.stmt(s.body); f {
			case flowBreak:
				return flowNone
			case flowNext, flowNextfile, flowReturn:
				return f
			}
		}
	case sNext:
		return flowNext
	case sNextfile:
		return flowNextfile
	case sReturn:
		a.retval = awkValue{}
		if s.x != nil {
			a.retval = a.eval(s.x)
		}
		return flowReturn
	case sExit:
		if s.x != nil {
			a.status = int(a.num(a.eval(s.x)))
		}
		a.exit()
	case sBreak:
		return flowBreak
	case sContinue:
		return flowContinue
	case sDelete:
		if s.subs == nil {
			a.clearArray(a.array(s.arr))
		} else {
			arr, key := a.array(s.arr), a.subscript(s.subs)
			if old, had := arr.m[key]; had {
				a.c.p.Charge(-int64(len(key)+len(old.s)) - awkEntryBytes)
				arr.del(key)
			}
		}
	}
	return flowNone
}

func (a *awk) print(s sPrint) {
	var text string
	if s.printf && len(s.args) == 0 {
		return // busybox prints nothing
	}
	if s.printf {
		vals := make([]awkValue, len(s.args)-1)
		for i, x := range s.args[1:] {
			vals[i] = a.eval(x)
		}
		text = awkSprintf(a.str(a.eval(s.args[0])), vals, a.str(a.vars["CONVFMT"]))
	} else {
		if len(s.args) == 0 {
			text = a.record
		} else {
			parts := make([]string, len(s.args))
			for i, x := range s.args {
				v := a.eval(x)
				if v.kind == akNum {
					parts[i] = awkFormatNum(v.n, a.str(a.vars["OFMT"]))
				} else {
					parts[i] = a.str(v)
				}
			}
			text = strings.Join(parts, a.str(a.vars["OFS"]))
		}
		text += a.str(a.vars["ORS"])
	}
	if s.dest == nil {
		a.output(text, nil, false)
		return
	}
	d := a.str(a.eval(s.dest))
	if s.pipe {
		a.pipeTo(d, text)
		return
	}
	a.output(text, &d, s.append)
}

// output writes text to stdout, or to a file (truncated when first opened with >).
func (a *awk) output(text string, dest *string, appending bool) {
	if dest == nil {
		a.c.write(text)
		return
	}
	st, open := a.streams[*dest]
	if !open {
		st = &awkStream{}
		a.streams[*dest] = st
	}
	if st.child != nil {
		a.c.out.Flush()
		st.pipe.Write([]byte(text))
		return
	}
	if err := a.c.writeFile(*dest, []byte(text), appending || open); err != nil {
		a.c.perror(err, "can't open '%s'", *dest)
		a.c.exit(1)
	}
}

// pipeTo writes text to the command cmd, started (with sh -c) when first written to.
func (a *awk) pipeTo(cmd, text string) {
	st, open := a.streams[cmd]
	if !open {
		child, pipe, err := a.popen(cmd, true)
		if err != nil {
			a.c.perror(err, "popen")
			a.c.exit(1)
		}
		st = &awkStream{child: child, pipe: pipe}
		a.streams[cmd] = st
	}
	a.c.out.Flush()
	if st.pipe != nil {
		st.pipe.Write([]byte(text))
	} else if st.br == nil {
		a.output(text, &cmd, true)
	}
}

func (a *awk) popen(cmd string, write bool) (*shell.Proc, *shell.PipeEnd, error) {
	a.c.out.Flush()
	return a.c.p.Popen(shell.Spec{Path: "/bin/sh", Argv: []string{"sh", "-c", cmd}}, write)
}

// close closes the file or command name: a command's exit status (as pclose's wait
// status), 0 for a file or nothing of that name.
func (a *awk) close(name string) int {
	st, ok := a.streams[name]
	if !ok {
		return 0 // busybox 1.36 does not say -1 for what it never opened
	}
	delete(a.streams, name)
	if st.br != nil {
		st.br.release()
	}
	if st.child == nil {
		return 0
	}
	a.c.out.Flush()
	st.pipe.Close()
	status := a.c.p.Wait(st.child)
	return status << 8
}

// getline reads a record as x says: 1, 0 at the end, -1 when the input cannot be opened.
func (a *awk) getline(x aGetline) awkValue {
	var br *awkReader
	if x.src == nil {
		if a.mainIn == nil && !a.nextInput() {
			return awkNum(-1)
		}
		br = a.mainIn
	} else {
		name := a.str(a.eval(x.src))
		st, ok := a.streams[name]
		if ok && st.br == nil && st.child == nil {
			return awkNum(-1) // a file opened for output
		}
		if !ok {
			st = &awkStream{}
			if x.cmd {
				child, pipe, err := a.popen(name, false)
				if err != nil {
					return awkNum(-1)
				}
				st.child, st.pipe, st.br = child, pipe, &awkReader{p: a.c.p, r: pipe}
			} else {
				var r io.Reader
				var err error
				if name == "-" {
					r, err = a.c.open("./-") // a file named "-": busybox's fopen
				} else {
					r, err = a.c.open(name)
				}
				if err != nil {
					return awkNum(-1)
				}
				st.br = &awkReader{p: a.c.p, r: r}
			}
			a.streams[name] = st
		}
		br = st.br
		if br == nil {
			return awkNum(-1)
		}
	}
	rec, ok := a.readRecord(br)
	if !ok {
		if br.err != nil {
			return awkNum(-1)
		}
		return awkNum(0)
	}
	if x.lhs == nil {
		a.setRecord(rec)
	} else {
		a.assign(x.lhs, awkInput(rec))
	}
	if x.src == nil {
		a.vars["NR"] = awkNum(a.num(a.vars["NR"]) + 1)
		a.vars["FNR"] = awkNum(a.num(a.vars["FNR"]) + 1)
	}
	return awkNum(1)
}

// clearArray deletes every element of arr, in place (a function's parameter shares it).
func (a *awk) clearArray(arr *awkArray) {
	n := int64(0)
	for k, v := range arr.m {
		n += int64(len(k)+len(v.s)) + awkEntryBytes
	}
	a.c.p.Charge(-n)
	arr.clear()
}

// param is the cell of a function's parameter name, nil for a global.
func (a *awk) param(name string) *awkCell {
	if name == "" || name[0] != 0 {
		return nil
	}
	i, _ := strconv.Atoi(name[1:])
	return a.frame[i]
}

func (a *awk) cellArray(c *awkCell) *awkArray {
	if c.arr == nil {
		switch {
		case c.global != "":
			c.arr = a.array(c.global)
		case c.parent != nil:
			c.arr = a.cellArray(c.parent)
		default:
			c.arr = newAwkArray()
		}
	}
	return c.arr
}

// isArray reports whether name is an array now.
func (a *awk) isArray(name string) bool {
	if c := a.param(name); c != nil {
		return c.arr != nil
	}
	_, ok := a.arrays[name]
	return ok
}

// argCell is what a function's parameter gets for the variable name passed: its array by
// reference, its value, or (untyped) a link that becomes its array when used as one.
func (a *awk) argCell(name string) *awkCell {
	if c := a.param(name); c != nil {
		switch {
		case c.arr != nil:
			return &awkCell{arr: c.arr}
		case c.v.kind == akUninit:
			return &awkCell{parent: c}
		}
		return &awkCell{v: c.v}
	}
	if arr, ok := a.arrays[name]; ok {
		return &awkCell{arr: arr}
	}
	if _, ok := a.vars[name]; !ok && name != "NF" {
		return &awkCell{global: name}
	}
	return &awkCell{v: a.getVar(name)}
}

// awkMaxDepth bounds recursion, where busybox would run out of stack; awkFrameBytes is
// what a call holds beside its parameters.
const (
	awkMaxDepth   = 10000
	awkFrameBytes = 1024
)

func (a *awk) callUser(x aUserCall) awkValue {
	f := a.prog.funcs[x.name]
	if f == nil {
		panic(&awkRuntimeError{msg: "Call to undefined function"})
	}
	frame := make([]*awkCell, f.nparams)
	for i, arg := range x.args {
		var cell *awkCell
		if v, ok := arg.(aVar); ok {
			cell = a.argCell(v.name)
		} else {
			cell = &awkCell{v: a.eval(arg)}
		}
		if i < len(frame) {
			frame[i] = cell
		}
	}
	for i := range frame {
		if frame[i] == nil {
			frame[i] = &awkCell{}
		}
	}
	if a.depth >= awkMaxDepth {
		panic(&awkRuntimeError{msg: "Function nesting too deep"})
	}
	// A call holds its frame (and the interpreter's stack for it) while it runs.
	frameBytes := int64(awkFrameBytes + len(frame)*awkEntryBytes)
	a.c.p.Charge(frameBytes)
	a.depth++
	saved := a.frame
	a.frame = frame
	flow := a.exec(f.body)
	a.frame = saved
	a.depth--
	a.c.p.Charge(-frameBytes)
	v := a.retval
	a.retval = awkValue{}
	if flow != flowReturn {
		v = awkValue{}
	}
	return v
}

// Values.

func (a *awk) str(v awkValue) string {
	switch v.kind {
	case akNum:
		return awkFormatNum(v.n, a.str(a.vars["CONVFMT"]))
	case akUninit:
		return ""
	}
	return v.s
}

func (a *awk) num(v awkValue) float64 {
	switch v.kind {
	case akNum, akStrnum:
		return v.n
	case akStr:
		return awkAtof(v.s)
	}
	return 0
}

func (a *awk) truth(v awkValue) bool {
	switch v.kind {
	case akNum:
		return v.n != 0
	case akStrnum:
		return v.n != 0
	case akStr:
		return v.s != ""
	}
	return false
}

func (a *awk) getVar(name string) awkValue {
	if c := a.param(name); c != nil {
		return c.v
	}
	if name == "NF" {
		a.splitRecord()
		return awkNum(float64(len(a.fields)))
	}
	return a.vars[name]
}

func (a *awk) setVar(name string, v awkValue) {
	if c := a.param(name); c != nil {
		c.v = v
		return
	}
	if name == "NF" {
		a.splitRecord()
		n := int(a.num(v))
		if n < 0 {
			panic(&awkRuntimeError{msg: "NF set to negative value"})
		}
		for len(a.fields) < n {
			a.fields = append(a.fields, "")
		}
		a.fields = a.fields[:n]
		a.rebuild()
		return
	}
	old, had := a.vars[name]
	a.hold(int64(len(v.s)-len(old.s)), had, name)
	a.vars[name] = v
}

// hold charges the program for n more bytes of a value it keeps, and for the entry key
// when it is new (the container's memory cgroup: an array that grows without end is
// OOM-killed at the container's limit).
func (a *awk) hold(n int64, had bool, key string) {
	if !had {
		n += int64(len(key)) + awkEntryBytes
	}
	a.c.p.Charge(n)
}

// awkEntryBytes is what a variable or array element costs beside its key and string.
const awkEntryBytes = 48

func (a *awk) array(name string) *awkArray {
	if c := a.param(name); c != nil {
		return a.cellArray(c)
	}
	arr, ok := a.arrays[name]
	if !ok {
		arr = newAwkArray()
		a.arrays[name] = arr
	}
	return arr
}

func (a *awk) subscript(subs []awkExpr) string {
	parts := make([]string, len(subs))
	for i, s := range subs {
		parts[i] = a.str(a.eval(s))
	}
	return strings.Join(parts, a.str(a.vars["SUBSEP"]))
}

// Records and fields.

// setRecord makes rec $0; its fields are split (when needed) by FS as it is now.
func (a *awk) setRecord(rec string) {
	a.record = rec
	a.split = false
	a.recFS = a.str(a.vars["FS"])
}

func (a *awk) splitRecord() {
	if a.split {
		return
	}
	a.fields = a.splitBy(a.record, a.recFS)
	a.split = true
}

// splitBy splits s as FS says: " " on runs of blanks (edges trimmed), one other character
// literally, anything longer as a regex.
func (a *awk) splitBy(s, fs string) []string {
	switch {
	case s == "":
		return nil
	case fs == " ":
		return strings.Fields(s)
	case len(fs) == 1 && fs != "\\":
		return strings.Split(s, fs)
	}
	return awkRegex(fs).Split(s, -1)
}

func (a *awk) rebuild() {
	a.record = strings.Join(a.fields, a.str(a.vars["OFS"]))
	a.split = true
}

func (a *awk) field(i int) awkValue {
	if i < 0 {
		panic(&awkRuntimeError{msg: "Access to negative field"})
	}
	if i == 0 {
		return awkInput(a.record)
	}
	a.splitRecord()
	if i > len(a.fields) {
		return awkValue{}
	}
	return awkInput(a.fields[i-1])
}

func (a *awk) setField(i int, v string) {
	if i < 0 {
		panic(&awkRuntimeError{msg: "Access to negative field"})
	}
	if i == 0 {
		a.setRecord(v)
		return
	}
	a.splitRecord()
	for len(a.fields) < i {
		a.fields = append(a.fields, "")
	}
	a.fields[i-1] = v
	a.rebuild()
}

// Expressions.

// place evaluates what an lvalue's subscripts or field number are, once: the lvalue it
// returns names the same place without side effects. An element is created there, as
// busybox's evaluation of the left side creates it before the right side runs.
func (a *awk) place(lhs awkExpr) awkExpr {
	switch l := lhs.(type) {
	case aField:
		return aField{aNum{a.num(a.eval(l.index))}}
	case aIndex:
		arr, key := a.array(l.name), a.subscript(l.subs)
		if _, ok := arr.m[key]; !ok {
			a.hold(0, false, key)
			arr.set(key, awkValue{})
		}
		return aIndex{l.name, []awkExpr{aStr{key}}}
	}
	return lhs
}

func (a *awk) assign(lhs awkExpr, v awkValue) awkValue {
	switch l := lhs.(type) {
	case aVar:
		a.setVar(l.name, v)
	case aField:
		a.setField(int(a.num(a.eval(l.index))), a.str(v))
		return awkInput(a.str(v))
	case aIndex:
		arr, key := a.array(l.name), a.subscript(l.subs)
		old, had := arr.m[key]
		a.hold(int64(len(v.s)-len(old.s)), had, key)
		arr.set(key, v)
	}
	return v
}

func (a *awk) regexOf(x awkExpr) *regexp.Regexp {
	if r, ok := x.(aRegex); ok {
		return r.re
	}
	pat := a.str(a.eval(x))
	return awkRegex(pat)
}

func (a *awk) eval(x awkExpr) awkValue {
	switch x := x.(type) {
	case aNum:
		return awkNum(x.v)
	case aStr:
		return awkStr(x.v)
	case aRegex:
		return awkNum(float64(boolInt(x.re.MatchString(a.record))))
	case aGroup:
		return a.eval(x.x)
	case aVar:
		return a.getVar(x.name)
	case aGetline:
		return a.getline(x)
	case aUserCall:
		return a.callUser(x)
	case aField:
		return a.field(int(a.num(a.eval(x.index))))
	case aIndex:
		arr := a.array(x.name)
		k := a.subscript(x.subs)
		v, ok := arr.m[k]
		if !ok {
			a.hold(0, false, k)
			arr.set(k, v) // referencing an element creates it
		}
		return v
	case aAssign:
		lhs := a.place(x.lhs)
		v := a.eval(x.rhs)
		if x.op != "=" {
			v = awkNum(a.arith(x.op[:1], a.num(a.eval(x.lhs)), a.num(v)))
		} else if v.kind == akUninit {
			v = awkValue{kind: akUninit}
		}
		return a.assign(lhs, v)
	case aCond:
		if a.truth(a.eval(x.c)) {
			return a.eval(x.a)
		}
		return a.eval(x.b)
	case aUnary:
		v := a.eval(x.x)
		switch x.op {
		case "!":
			return awkNum(float64(boolInt(!a.truth(v))))
		case "-":
			return awkNum(-a.num(v))
		}
		return awkNum(a.num(v))
	case aIncDec:
		lhs := a.place(x.lhs)
		old := a.num(a.eval(lhs))
		n := old + 1
		if x.op == "--" {
			n = old - 1
		}
		a.assign(lhs, awkNum(n))
		if x.pre {
			return awkNum(n)
		}
		return awkNum(old)
	case aMatch:
		m := a.regexOf(x.r).MatchString(a.str(a.eval(x.l)))
		return awkNum(float64(boolInt(m != x.neg)))
	case aIn:
		_, ok := a.array(x.arr).m[a.subscript(x.subs)]
		return awkNum(float64(boolInt(ok)))
	case aCall:
		return a.call(x)
	case aBinary:
		switch x.op {
		case "&&":
			return awkNum(float64(boolInt(a.truth(a.eval(x.l)) && a.truth(a.eval(x.r)))))
		case "||":
			return awkNum(float64(boolInt(a.truth(a.eval(x.l)) || a.truth(a.eval(x.r)))))
		case "concat":
			return awkStr(a.str(a.eval(x.l)) + a.str(a.eval(x.r)))
		case "<", "<=", "==", "!=", ">", ">=":
			return awkNum(float64(boolInt(a.compare(x.op, a.eval(x.l), a.eval(x.r)))))
		}
		return awkNum(a.arith(x.op, a.num(a.eval(x.l)), a.num(a.eval(x.r))))
	}
	panic(&awkRuntimeError{msg: "Possible syntax error"})
}

func (a *awk) arith(op string, l, r float64) float64 {
	switch op {
	case "+":
		return l + r
	case "-":
		return l - r
	case "*":
		return l * r
	case "/":
		if r == 0 {
			panic(&awkRuntimeError{msg: "Division by zero"})
		}
		return l / r
	case "%":
		if r == 0 {
			panic(&awkRuntimeError{msg: "Division by zero"})
		}
		return math.Mod(l, r)
	case "^":
		return math.Pow(l, r)
	}
	return 0
}

// compare compares numerically when both sides are numbers (or strings from input that
// look like ones), as strings otherwise.
func (a *awk) compare(op string, l, r awkValue) bool {
	numeric := func(v awkValue) bool { return v.kind == akNum || v.kind == akStrnum || v.kind == akUninit }
	var c int
	if numeric(l) && numeric(r) {
		c = cmpFloat(a.num(l), a.num(r))
	} else {
		c = strings.Compare(a.str(l), a.str(r))
	}
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case "==":
		return c == 0
	case "!=":
		return c != 0
	case ">":
		return c > 0
	}
	return c >= 0
}

func (a *awk) call(x aCall) awkValue {
	arg := func(i int) awkValue {
		if i >= len(x.args) {
			panic(&awkRuntimeError{msg: "Too few arguments"})
		}
		return a.eval(x.args[i])
	}
	need := func(n int) {
		if len(x.args) < n {
			panic(&awkRuntimeError{msg: "Too few arguments"})
		}
	}
	switch x.name {
	case "length":
		if len(x.args) == 0 {
			return awkNum(float64(len(a.record)))
		}
		if v, ok := x.args[0].(aVar); ok {
			if a.isArray(v.name) {
				return awkNum(float64(a.array(v.name).len()))
			}
		}
		return awkNum(float64(len(a.str(arg(0)))))
	case "substr":
		need(2)
		// As busybox: the start (less 1) and the length truncated to ints, the start
		// clamped to the string, the length not shortened by a start before it.
		s := a.str(arg(0))
		l := len(s)
		i := int(awkCInt(a.num(arg(1)) - 1))
		i = max(min(i, l), 0)
		n := l - i
		if len(x.args) > 2 {
			n = int(awkCInt(a.num(arg(2))))
		}
		n = max(min(n, l-i), 0)
		return awkStr(s[i : i+n])
	case "index":
		need(2)
		sub := a.str(arg(1))
		if sub == "" {
			return awkNum(0)
		}
		return awkNum(float64(strings.Index(a.str(arg(0)), sub) + 1))
	case "split":
		need(2)
		s := a.str(arg(0))
		name, ok := x.args[1].(aVar)
		if !ok {
			panic(&awkRuntimeError{msg: "Not an array"})
		}
		var parts []string
		switch {
		case len(x.args) > 2:
			if r, isRe := x.args[2].(aRegex); isRe {
				if s != "" {
					parts = r.re.Split(s, -1)
				}
			} else {
				parts = a.splitBy(s, a.str(arg(2)))
			}
		default:
			parts = a.splitBy(s, a.str(a.vars["FS"]))
		}
		arr := a.array(name.name)
		a.clearArray(arr)
		for i, p := range parts {
			k := strconv.Itoa(i + 1)
			a.hold(int64(len(p)), false, k)
			arr.set(k, awkInput(p))
		}
		return awkNum(float64(len(parts)))
	case "sub", "gsub":
		need(2)
		re := a.regexOf(x.args[0])
		repl := a.str(arg(1))
		var target awkExpr = aField{aNum{0}}
		if len(x.args) > 2 {
			target = x.args[2]
			if isLvalue(target) {
				target = a.place(target)
			}
		}
		s := a.str(a.eval(target))
		n := 0
		var b strings.Builder
		pos := 0
		for _, m := range re.FindAllStringIndex(s, -1) {
			if x.name == "sub" && n == 1 {
				break
			}
			b.WriteString(s[pos:m[0]])
			for i := 0; i < len(repl); i++ {
				switch {
				case repl[i] == '\\' && i+1 < len(repl) && (repl[i+1] == '&' || repl[i+1] == '\\'):
					i++
					b.WriteByte(repl[i])
				case repl[i] == '&':
					b.WriteString(s[m[0]:m[1]])
				default:
					b.WriteByte(repl[i])
				}
			}
			pos = m[1]
			n++
		}
		if n > 0 {
			b.WriteString(s[pos:])
			if isLvalue(target) {
				a.assign(target, awkStr(b.String()))
			}
		}
		return awkNum(float64(n))
	case "match":
		need(2)
		m := a.regexOf(x.args[1]).FindStringIndex(a.str(arg(0)))
		start, length := 0, -1
		if m != nil {
			start, length = m[0]+1, m[1]-m[0]
		}
		a.vars["RSTART"], a.vars["RLENGTH"] = awkNum(float64(start)), awkNum(float64(length))
		return awkNum(float64(start))
	case "sprintf":
		need(1)
		vals := make([]awkValue, len(x.args)-1)
		for i := range vals {
			vals[i] = arg(i + 1)
		}
		return awkStr(awkSprintf(a.str(arg(0)), vals, a.str(a.vars["CONVFMT"])))
	case "tolower":
		return awkStr(asciiCase(a.str(arg(0)), 'A', 'Z', 'a'-'A'))
	case "toupper":
		return awkStr(asciiCase(a.str(arg(0)), 'a', 'z', 'A'-'a'))
	case "int":
		return awkNum(math.Trunc(a.num(arg(0))))
	case "sqrt":
		return awkNum(math.Sqrt(a.num(arg(0))))
	case "exp":
		return awkNum(math.Exp(a.num(arg(0))))
	case "log":
		return awkNum(math.Log(a.num(arg(0))))
	case "sin":
		return awkNum(math.Sin(a.num(arg(0))))
	case "cos":
		return awkNum(math.Cos(a.num(arg(0))))
	case "atan2":
		return awkNum(math.Atan2(a.num(arg(0)), a.num(arg(1))))
	case "rand":
		if len(x.args) > 0 {
			panic(&awkRuntimeError{msg: "Too many arguments"})
		}
		return awkNum(a.rnd.float())
	case "srand":
		prev := a.seed
		if len(x.args) > 0 {
			a.seed = uint32(int64(a.num(arg(0))))
		} else {
			a.seed = uint32(a.c.p.Now().Unix())
		}
		a.rnd.seed(a.seed)
		return awkNum(float64(prev))
	case "system":
		a.c.out.Flush()
		cmd := a.str(arg(0))
		if cmd == "" {
			return awkNum(0)
		}
		a.c.out.Flush()
		child, err := a.c.p.StartChild(shell.Spec{Path: "/bin/sh", Argv: []string{"sh", "-c", cmd}})
		if err != nil {
			return awkNum(127) // what system() gives when its shell cannot run
		}
		return awkNum(float64(a.c.p.Wait(child)))
	case "close":
		return awkNum(float64(a.close(a.str(arg(0)))))
	case "fflush":
		a.c.out.Flush()
		return awkNum(0)
	}
	panic(&awkRuntimeError{msg: "Call to undefined function"})
}

// awkCInt is C's (int) of a double on amd64: out of range (or NaN) is INT_MIN.
func awkCInt(d float64) int32 {
	if d != d || d >= 1<<31 || d <= -(1<<31)-1 {
		return math.MinInt32
	}
	return int32(d)
}

// awkSprintf formats vals as awk's printf: C's conversions, numbers or strings as each
// wants.
func awkSprintf(format string, vals []awkValue, convfmt string) string {
	var b strings.Builder
	next := 0
	arg := func() (awkValue, bool) {
		if next < len(vals) {
			next++
			return vals[next-1], true
		}
		return awkValue{}, false
	}
	toStr := func(v awkValue) string {
		switch v.kind {
		case akNum:
			return awkFormatNum(v.n, convfmt)
		case akUninit:
			return ""
		}
		return v.s
	}
	toNum := func(v awkValue) float64 {
		switch v.kind {
		case akNum, akStrnum:
			return v.n
		case akStr:
			return awkAtof(v.s)
		}
		return 0
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		// The conversion is the first letter after '%'.
		j := i + 1
		for j < len(format) && !(format[j] >= 'a' && format[j] <= 'z' || format[j] >= 'A' && format[j] <= 'Z') {
			if format[j] == '*' {
				panic(&awkRuntimeError{msg: "%*x formats are not supported"})
			}
			j++
		}
		if j >= len(format) {
			b.WriteString(format[i:])
			break
		}
		spec, verb := format[i:j], format[j]
		i = j
		v, _ := arg()
		switch {
		case verb == 'c':
			var ch byte
			if v.kind == akStr {
				if v.s != "" {
					ch = v.s[0]
				}
			} else {
				ch = byte(awkCInt(toNum(v)))
			}
			fmt.Fprintf(&b, spec+"s", string([]byte{ch}))
		case verb == 's':
			fmt.Fprintf(&b, spec+"s", toStr(v))
		case verb == 'd' || verb == 'i':
			fmt.Fprintf(&b, spec+"d", awkCInt(toNum(v)))
		case verb == 'u':
			fmt.Fprintf(&b, spec+"d", uint32(awkCInt(toNum(v))))
		case verb == 'o' || verb == 'x' || verb == 'X':
			fmt.Fprintf(&b, spec+string(verb), uint32(awkCInt(toNum(v))))
		case strings.IndexByte("eEfFgG", verb) >= 0:
			if !strings.Contains(spec, ".") && (verb == 'g' || verb == 'G') {
				spec += ".6"
			}
			fmt.Fprintf(&b, spec+string(verb), toNum(v))
		default:
			panic(&awkRuntimeError{msg: "Invalid format specifier"})
		}
	}
	return b.String()
}

// asciiCase changes the case of s's letters from lo to hi by delta, ASCII only (the C
// locale's toupper and tolower).
func asciiCase(s string, lo, hi byte, delta int) string {
	b := []byte(s)
	for i, c := range b {
		if c >= lo && c <= hi {
			b[i] = byte(int(c) + delta)
		}
	}
	return string(b)
}
