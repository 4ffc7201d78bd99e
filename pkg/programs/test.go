package programs

import (
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// testKind is what a test token is: an operand or an operator of some arity.
type testKind int

const (
	tOperand testKind = iota
	tUnary
	tBinary
	tNot
	tAnd
	tOr
	tLParen
	tRParen
	tEOI
)

var testUnary = map[string]bool{"-r": true, "-w": true, "-x": true, "-e": true, "-f": true, "-d": true,
	"-c": true, "-b": true, "-p": true, "-u": true, "-g": true, "-k": true, "-s": true, "-t": true,
	"-z": true, "-n": true, "-h": true, "-O": true, "-G": true, "-L": true, "-S": true}

var testBinary = map[string]bool{"=": true, "==": true, "!=": true, "<": true, ">": true, "-eq": true,
	"-ne": true, "-ge": true, "-gt": true, "-le": true, "-lt": true, "-nt": true, "-ot": true, "-ef": true}

// tester evaluates a test expression as busybox's test: oexpr/aexpr/nexpr/primary over
// the arguments, with POSIX's special cases for 1 to 4 arguments. A syntax error panics
// with testError, which runTest turns into status 2.
type tester struct {
	c     *cmd
	args  []string
	pos   int
	bash2 bool // [[ ]]: == matches a pattern, =~ a regex, && and || join
}

type testError struct{}

func (t *tester) kind(i int) testKind {
	if i >= len(t.args) {
		return tEOI
	}
	s := t.args[i]
	switch {
	case s == "!":
		return tNot
	case s == "(":
		return tLParen
	case s == ")":
		return tRParen
	case s == "-a" && !t.bash2, s == "&&" && t.bash2:
		return tAnd
	case s == "-o" && !t.bash2, s == "||" && t.bash2:
		return tOr
	case testUnary[s]:
		return tUnary
	case testBinary[s], s == "=~" && t.bash2:
		return tBinary
	}
	return tOperand
}

func (t *tester) syntax(op, msg string) {
	if op != "" {
		t.c.errorf("%s: %s", op, msg)
	} else {
		t.c.errorf("%s", msg)
	}
	panic(testError{})
}

func runTest(c *cmd) (status int) {
	t := &tester{c: c, args: c.args}
	if strings.HasPrefix(lastComponent(c.argv0), "[") || c.name == "[" || c.name == "[[" {
		closing := "]"
		if c.name == "[[" {
			closing = "]]"
			t.bash2 = true
		}
		if len(t.args) == 0 || t.args[len(t.args)-1] != closing {
			c.errorf("missing %s", closing)
			return 2
		}
		t.args = t.args[:len(t.args)-1]
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(testError); !ok {
				panic(r)
			}
			status = 2
		}
	}()
	args := t.args
	negate := false
	for {
		switch {
		case len(args) == 0:
			return boolStatus(false != negate)
		case len(args) == 1:
			return boolStatus((args[0] != "") != negate)
		case len(args) == 3:
			t.args, t.pos = args, 0
			if t.kind(1) == tBinary {
				return boolStatus(t.binop() != negate)
			}
		case len(args) == 4 && args[0] == "(" && args[3] == ")":
			args = args[1:3]
		}
		if args[0] != "!" {
			break
		}
		args = args[1:]
		negate = !negate
	}
	t.args, t.pos = args, 0
	res := t.oexpr(t.kind(0))
	if t.pos < len(t.args) && t.pos+1 < len(t.args) {
		c.errorf("%s: unknown operand", t.args[t.pos+1])
		return 2
	}
	return boolStatus(res != negate)
}

func boolStatus(b bool) int {
	if b {
		return 0
	}
	return 1
}

func (t *tester) oexpr(k testKind) bool {
	res := t.aexpr(k)
	t.pos++
	if t.kind(t.pos) == tOr {
		t.pos++
		return t.oexpr(t.kind(t.pos)) || res
	}
	t.pos--
	return res
}

func (t *tester) aexpr(k testKind) bool {
	res := t.nexpr(k)
	t.pos++
	if t.kind(t.pos) == tAnd {
		t.pos++
		return t.aexpr(t.kind(t.pos)) && res
	}
	t.pos--
	return res
}

func (t *tester) nexpr(k testKind) bool {
	if k == tNot {
		t.pos++
		n := t.kind(t.pos)
		if n == tEOI {
			t.pos--
			return true // "[ ! ]" is valid
		}
		return !t.nexpr(n)
	}
	return t.primary(k)
}

func (t *tester) primary(k testKind) bool {
	if k == tEOI {
		t.syntax("", "argument expected")
	}
	if k == tLParen {
		t.pos++
		res := t.oexpr(t.kind(t.pos))
		t.pos++
		if t.kind(t.pos) != tRParen {
			t.syntax("", "closing paren expected")
		}
		return res
	}
	if t.kind(t.pos+1) != tEOI && t.pos+2 < len(t.args) && t.kind(t.pos+1) == tBinary {
		return t.binop()
	}
	if k == tUnary {
		if t.pos+1 >= len(t.args) {
			return t.args[t.pos] != ""
		}
		op := t.args[t.pos]
		t.pos++
		arg := t.args[t.pos]
		switch op {
		case "-z":
			return arg == ""
		case "-n":
			return arg != ""
		case "-t":
			t.getn(arg)
			return false // no process of a container has a terminal
		}
		return t.filstat(arg, op)
	}
	if t.kind(t.pos+1) == tBinary {
		return t.binop()
	}
	return t.args[t.pos] != ""
}

func (t *tester) getn(s string) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		trimmed := strings.TrimLeft(s, " \t\n\v\f\r")
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && trimmed != "" {
			t.syntax(s, "out of range")
		}
		t.syntax(s, "bad number")
	}
	return v
}

func (t *tester) binop() bool {
	a := t.args[t.pos]
	t.pos++
	op := t.args[t.pos]
	t.pos++
	if t.pos >= len(t.args) {
		t.syntax(op, "argument expected")
	}
	b := t.args[t.pos]
	switch op {
	case "-eq", "-ne", "-ge", "-gt", "-le", "-lt":
		x, y := t.getn(a), t.getn(b)
		switch op {
		case "-eq":
			return x == y
		case "-ne":
			return x != y
		case "-ge":
			return x >= y
		case "-gt":
			return x > y
		case "-le":
			return x <= y
		}
		return x < y
	case "=", "==", "!=":
		eq := a == b
		if t.bash2 {
			ok, _ := path.Match(b, a)
			eq = ok
		}
		if op == "!=" {
			return !eq
		}
		return eq
	case "=~":
		re, err := compileRegex(b, true, false)
		if err != nil {
			panic(testError{})
		}
		return re.MatchString(a)
	case "<":
		return a < b
	case ">":
		return a > b
	}
	ia, err1 := t.c.fs().Stat(t.c.abs(a))
	ib, err2 := t.c.fs().Stat(t.c.abs(b))
	if err1 != nil || err2 != nil {
		return false
	}
	switch op {
	case "-nt":
		return ia.ModTime.After(ib.ModTime)
	case "-ot":
		return ia.ModTime.Before(ib.ModTime)
	}
	return t.c.sameFile(a, b)
}

func (t *tester) filstat(name, op string) bool {
	c := t.c
	if op == "-h" || op == "-L" {
		info, err := c.fs().Lstat(c.abs(name))
		return err == nil && info.Mode&fs.ModeSymlink != 0
	}
	info, err := c.fs().Stat(c.abs(name))
	if err != nil {
		return false
	}
	m := info.Mode
	id := c.p.Identity()
	switch op {
	case "-e":
		return true
	case "-r":
		return c.access(info, 4)
	case "-w":
		return c.access(info, 2)
	case "-x":
		return c.access(info, 1)
	case "-f":
		return m.IsRegular()
	case "-d":
		return m.IsDir()
	case "-c":
		return m&fs.ModeCharDevice != 0
	case "-b":
		return m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0
	case "-p":
		return m&fs.ModeNamedPipe != 0
	case "-S":
		return m&fs.ModeSocket != 0
	case "-u":
		return m&fs.ModeSetuid != 0
	case "-g":
		return m&fs.ModeSetgid != 0
	case "-k":
		return m&fs.ModeSticky != 0
	case "-s":
		return info.Size > 0
	case "-O":
		return info.UID == id.UID
	case "-G":
		return info.GID == id.GID
	}
	return true
}

// exprValue is a value of expr: a string or an integer.
type exprValue struct {
	isInt bool
	i     int64
	s     string
}

func (v exprValue) null() bool {
	if v.isInt {
		return v.i == 0
	}
	return v.s == "" || v.s == "0"
}

func (v exprValue) str() string {
	if v.isInt {
		return strconv.FormatInt(v.i, 10)
	}
	return v.s
}

// toInt is the value as an integer, if it is one.
func (v exprValue) toInt() (int64, bool) {
	if v.isInt {
		return v.i, true
	}
	s := strings.TrimLeft(v.s, " \t\n\v\f\r")
	if s == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// exprParser evaluates expr's arguments, as busybox's eval..eval7.
type exprParser struct {
	c    *cmd
	args []string
}

func runExpr(c *cmd) int {
	c.errStatus = 2 // 1 is a null result
	e := &exprParser{c: c, args: c.args}
	if len(e.args) == 0 {
		e.die("too few arguments")
	}
	v := e.eval()
	if len(e.args) > 0 {
		e.die("syntax error")
	}
	c.write(v.str() + "\n")
	if v.null() {
		return 1
	}
	return 0
}

func (e *exprParser) die(msg string) { e.c.die("%s", msg) }

func (e *exprParser) next(s string) bool { return len(e.args) > 0 && e.args[0] == s }

func (e *exprParser) eval() exprValue {
	l := e.eval1()
	for e.next("|") {
		e.args = e.args[1:]
		r := e.eval1()
		if l.null() {
			l = r
		}
	}
	return l
}

func (e *exprParser) eval1() exprValue {
	l := e.eval2()
	for e.next("&") {
		e.args = e.args[1:]
		r := e.eval2()
		if l.null() || r.null() {
			l = exprValue{isInt: true}
		}
	}
	return l
}

func (e *exprParser) eval2() exprValue {
	l := e.eval3()
	for {
		op := ""
		for _, o := range []string{"<", "<=", "=", "==", "!=", ">=", ">"} {
			if e.next(o) {
				op = o
			}
		}
		if op == "" {
			return l
		}
		e.args = e.args[1:]
		r := e.eval3()
		var cmp int
		li, lok := l.toInt()
		ri, rok := r.toInt()
		if lok && rok {
			cmp = cmpInt64(li, ri)
		} else {
			cmp = strings.Compare(l.str(), r.str())
		}
		res := false
		switch op {
		case "<":
			res = cmp < 0
		case "<=":
			res = cmp <= 0
		case "=", "==":
			res = cmp == 0
		case "!=":
			res = cmp != 0
		case ">=":
			res = cmp >= 0
		case ">":
			res = cmp > 0
		}
		l = exprValue{isInt: true, i: int64(boolInt(res))}
	}
}

func (e *exprParser) arith(l, r exprValue, op string) exprValue {
	li, lok := l.toInt()
	ri, rok := r.toInt()
	if !lok || !rok {
		e.die("non-numeric argument")
	}
	var v int64
	switch op {
	case "+":
		v = li + ri
	case "-":
		v = li - ri
	case "*":
		v = li * ri
	default:
		if ri == 0 {
			e.die("division by zero")
		}
		if op == "/" {
			v = li / ri
		} else {
			v = li % ri
		}
	}
	return exprValue{isInt: true, i: v}
}

func (e *exprParser) eval3() exprValue {
	l := e.eval4()
	for e.next("+") || e.next("-") {
		op := e.args[0]
		e.args = e.args[1:]
		l = e.arith(l, e.eval4(), op)
	}
	return l
}

func (e *exprParser) eval4() exprValue {
	l := e.eval5()
	for e.next("*") || e.next("/") || e.next("%") {
		op := e.args[0]
		e.args = e.args[1:]
		l = e.arith(l, e.eval5(), op)
	}
	return l
}

func (e *exprParser) eval5() exprValue {
	l := e.eval6()
	for e.next(":") {
		e.args = e.args[1:]
		l = e.colon(l, e.eval6())
	}
	return l
}

func (e *exprParser) eval6() exprValue {
	if len(e.args) == 0 {
		return e.eval7()
	}
	switch kw := e.args[0]; kw {
	case "quote":
		e.args = e.args[1:]
		if len(e.args) == 0 {
			e.die("syntax error")
		}
		v := exprValue{s: e.args[0]}
		e.args = e.args[1:]
		return v
	case "length":
		e.args = e.args[1:]
		return exprValue{isInt: true, i: int64(len(e.eval6().str()))}
	case "match":
		e.args = e.args[1:]
		l := e.eval6()
		return e.colon(l, e.eval6())
	case "index":
		e.args = e.args[1:]
		l, r := e.eval6().str(), e.eval6().str()
		i := strings.IndexAny(l, r)
		return exprValue{isInt: true, i: int64(i + 1)}
	case "substr":
		e.args = e.args[1:]
		l := e.eval6().str()
		p, pok := e.eval6().toInt()
		n, nok := e.eval6().toInt()
		if !pok || !nok || p > int64(len(l)) || p <= 0 || n <= 0 {
			return exprValue{}
		}
		end := min(p-1+n, int64(len(l)))
		return exprValue{s: l[p-1 : end]}
	}
	return e.eval7()
}

func (e *exprParser) eval7() exprValue {
	if len(e.args) == 0 {
		e.die("syntax error")
	}
	if e.next("(") {
		e.args = e.args[1:]
		v := e.eval()
		if !e.next(")") {
			e.die("syntax error")
		}
		e.args = e.args[1:]
		return v
	}
	if e.next(")") {
		e.die("syntax error")
	}
	v := exprValue{s: e.args[0]}
	e.args = e.args[1:]
	return v
}

// colon is expr's STRING : REGEX, anchored at the start: the first group, or the length
// of the match.
func (e *exprParser) colon(sv, pv exprValue) exprValue {
	s, p := sv.str(), pv.str()
	if strings.HasPrefix(p, "^") {
		e.c.errorf("warning: '%s': using '^' as the first character\nof a basic regular expression is not portable; it is ignored", p)
	}
	goPat, err := translateRegex(p, false)
	var re *regexp.Regexp
	if err == nil {
		re, err = regexp.Compile(goPat)
	}
	if err != nil {
		if err != errBackref {
			err = regexError(err)
		}
		e.c.die("bad regex '%s': %s", p, err)
	}
	re.Longest()
	m := re.FindStringSubmatchIndex(s)
	if m != nil && m[0] == 0 {
		if re.NumSubexp() > 0 && m[2] >= 0 {
			return exprValue{s: s[m[2]:m[3]]}
		}
		return exprValue{isInt: true, i: int64(m[1])}
	}
	if re.NumSubexp() > 0 {
		return exprValue{}
	}
	return exprValue{isInt: true}
}
