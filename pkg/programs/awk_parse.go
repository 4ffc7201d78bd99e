package programs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// awk here is busybox's: patterns (expressions, regexes, ranges, BEGIN and END), print
// and printf (with > and >> to files, | to commands), if, while, do, for and for-in,
// next, nextfile, exit, break, continue, delete, arrays, fields, user-defined functions,
// getline in all its forms (from the input, files and commands) and the POSIX built-in
// functions; its parser's quirks (where newlines may be, $2++) and messages are
// busybox's too.

// awkTokKind is what a token of an awk program is.
type awkTokKind int

const (
	atEOF awkTokKind = iota
	atNewline
	atNumber
	atString
	atRegex
	atName
	atBuiltin
	atKeyword
	atPunct
)

type awkTok struct {
	kind awkTokKind
	s    string
	n    float64
	line int
	call bool // a name right before '(': a call of a user function
}

var awkKeywords = map[string]bool{"BEGIN": true, "END": true, "if": true, "else": true, "while": true, "for": true,
	"do": true, "break": true, "continue": true, "next": true, "nextfile": true, "exit": true, "print": true,
	"printf": true, "delete": true, "in": true, "getline": true, "function": true, "func": true, "return": true}

var awkBuiltins = map[string]bool{"length": true, "substr": true, "index": true, "split": true, "sub": true,
	"gsub": true, "match": true, "sprintf": true, "tolower": true, "toupper": true, "int": true, "sqrt": true,
	"exp": true, "log": true, "sin": true, "cos": true, "atan2": true, "rand": true, "srand": true,
	"system": true, "close": true, "fflush": true}

// awkSyntaxError unwinds the parser with busybox's message.
type awkSyntaxError struct {
	line int
	msg  string
}

// awkLex splits an awk program into tokens. A '/' starts a regex where an operand may
// start, and divides elsewhere.
func awkLex(src string) ([]awkTok, error) {
	var toks []awkTok
	line := 1
	operandEnded := func() bool {
		if len(toks) == 0 {
			return false
		}
		t := toks[len(toks)-1]
		switch t.kind {
		case atNumber, atString, atName, atRegex:
			return true
		case atBuiltin:
			return t.s == "length"
		case atPunct:
			return t.s == ")" || t.s == "]" || t.s == "++" || t.s == "--" || t.s == "$"
		}
		return false
	}
	fail := func(msg string) ([]awkTok, error) { return nil, &awkSyntaxError{line, msg} }
	for i := 0; i < len(src); {
		ch := src[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r':
			i++
		case ch == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
			line++
		case ch == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case ch == '\n':
			toks = append(toks, awkTok{kind: atNewline, line: line})
			line++
			i++
		case ch == '0' && i+1 < len(src) && (src[i+1]|0x20 == 'x' || src[i+1] >= '0' && src[i+1] <= '9') && awkHexOct(src[i:]) > 0:
			// 0x1f and 017: hex and octal integers, in the program only.
			j := i + awkHexOct(src[i:])
			v, _ := strconv.ParseUint(src[i:j], 0, 64)
			toks = append(toks, awkTok{kind: atNumber, n: float64(v), s: src[i:j], line: line})
			i = j
		case ch >= '0' && ch <= '9' || ch == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
				j++
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					for k < len(src) && src[k] >= '0' && src[k] <= '9' {
						k++
					}
					j = k
				}
			}
			v, err := strconv.ParseFloat(src[i:j], 64)
			if err != nil {
				return fail("Unexpected token")
			}
			toks = append(toks, awkTok{kind: atNumber, n: v, s: src[i:j], line: line})
			i = j
		case ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			w := src[i:j]
			kind := atName
			switch {
			case awkKeywords[w]:
				kind = atKeyword
			case awkBuiltins[w]:
				kind = atBuiltin
			}
			toks = append(toks, awkTok{kind: kind, s: w, line: line, call: j < len(src) && src[j] == '('})
			i = j
		case ch == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\n' {
					return fail("Unexpected end of string")
				}
				if src[j] == '\\' && j+1 < len(src) {
					j++
					if src[j] == '"' || src[j] == '/' {
						b.WriteByte(src[j])
						continue
					}
					c, next := escape(src, j)
					b.WriteByte(c)
					j = next - 1
					continue
				}
				b.WriteByte(src[j])
			}
			if j >= len(src) {
				return fail("Unexpected end of string")
			}
			toks = append(toks, awkTok{kind: atString, s: b.String(), line: line})
			i = j + 1
		case ch == '/' && !operandEnded():
			var b strings.Builder
			j := i + 1
			inBracket := false
			for ; j < len(src) && (src[j] != '/' || inBracket); j++ {
				if src[j] == '\n' {
					return fail("Unexpected end of string")
				}
				if src[j] == '\\' && j+1 < len(src) {
					if src[j+1] == '/' {
						b.WriteByte('/')
					} else {
						b.WriteString(src[j : j+2])
					}
					j++
					continue
				}
				if src[j] == '[' {
					inBracket = true
				} else if src[j] == ']' {
					inBracket = false
				}
				b.WriteByte(src[j])
			}
			if j >= len(src) {
				return fail("Unexpected end of string")
			}
			toks = append(toks, awkTok{kind: atRegex, s: b.String(), line: line})
			i = j + 1
		default:
			raw := ""
			for _, p := range []string{"**=", "&&", "||", "==", "!=", "<=", ">=", "!~", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "**", ">>"} {
				if strings.HasPrefix(src[i:], p) {
					raw = p
					break
				}
			}
			if raw == "" {
				if strings.IndexByte("{}()[];,+-*/%^!<>|?:~$=", ch) < 0 {
					return fail("Unexpected token")
				}
				raw = string(ch)
			}
			op := raw
			switch raw {
			case "**":
				op = "^"
			case "**=":
				op = "^="
			}
			toks = append(toks, awkTok{kind: atPunct, s: op, line: line})
			i += len(raw)
		}
	}
	toks = append(toks, awkTok{kind: atEOF, line: line})
	return toks, nil
}

// Nodes of an awk program.
type (
	awkExpr interface{}
	awkStmt interface{}

	aNum   struct{ v float64 }
	aStr   struct{ v string }
	aRegex struct{ re *regexp.Regexp }
	aVar   struct{ name string }
	aField struct{ index awkExpr }
	aIndex struct {
		name string
		subs []awkExpr
	}
	aAssign struct {
		op       string // "=", "+=", ...
		lhs, rhs awkExpr
	}
	aCond   struct{ c, a, b awkExpr }
	aBinary struct {
		op   string
		l, r awkExpr
	}
	aUnary struct {
		op string
		x  awkExpr
	}
	aIncDec struct {
		op  string
		pre bool
		lhs awkExpr
	}
	aMatch struct {
		neg  bool
		l, r awkExpr
	}
	aIn struct {
		subs []awkExpr
		arr  string
	}
	aCall struct {
		name string
		args []awkExpr
	}
	aGroup struct{ x awkExpr }
	// aUserCall calls a function of the program.
	aUserCall struct {
		name string
		args []awkExpr
	}
	// aGetline reads a record: from the main input (src nil), a file (src), or a
	// command's output (cmd); into lhs, or $0 when nil.
	aGetline struct {
		src awkExpr
		cmd bool
		lhs awkExpr
	}

	sPrint struct {
		args   []awkExpr
		printf bool
		dest   awkExpr
		append bool
		pipe   bool // dest is a command that reads the output
	}
	sExpr  struct{ x awkExpr }
	sBlock struct{ body []awkStmt }
	sIf    struct {
		c     awkExpr
		then  awkStmt
		other awkStmt
	}
	sWhile struct {
		c    awkExpr
		body awkStmt
		do   bool
	}
	sFor struct {
		init, post awkStmt
		c          awkExpr
		body       awkStmt
	}
	sForIn struct {
		v, arr string
		body   awkStmt
	}
	sNext struct{}
	// sLine is a statement and the line it is on, which runtime errors name.
	sLine struct {
		line int
		s    awkStmt
	}
	sNextfile struct{}
	sReturn   struct{ x awkExpr }
	sExit     struct{ x awkExpr }
	sBreak    struct{}
	sContinue struct{}
	sDelete   struct {
		arr  string
		subs []awkExpr
	}
)

// awkRule is a pattern (or range of two) and its action; a nil action prints.
type awkRule struct {
	pattern, pattern2 awkExpr
	action            []awkStmt
	hasAction         bool
	line              int
}

type awkProgram struct {
	begin, end []awkStmt
	rules      []*awkRule
	funcs      map[string]*awkFunc
	lastLine   int // where the parser stopped: the line errors name before a statement runs
}

// awkFunc is a function of the program: its parameters (the locals among them) are
// numbered, and named in its body by awkParam.
type awkFunc struct {
	name    string
	nparams int
	body    []awkStmt
}

// awkParam is how a function's body names its parameter i: a name no program can spell.
func awkParam(i int) string { return "\x00" + strconv.Itoa(i) }

type awkParser struct {
	toks []awkTok
	pos  int
	// noGT makes '>' a redirection, not a comparison (print's arguments).
	noGT bool
	// noIn makes 'in' a for-in, not a test (for's first clause).
	noIn  bool
	loops int
	// params are the parameters of the function being parsed (nil outside one).
	params map[string]int
}

func (p *awkParser) peek() awkTok { return p.toks[p.pos] }

func (p *awkParser) next() awkTok {
	t := p.toks[p.pos]
	if p.pos < len(p.toks)-1 {
		p.pos++
	}
	return t
}

func (p *awkParser) is(s string) bool {
	t := p.peek()
	return (t.kind == atPunct || t.kind == atKeyword) && t.s == s
}

func (p *awkParser) fail() {
	// busybox names the end of the string when the token before the unexpected one was
	// a newline (or the end).
	t := p.peek()
	msg := "Unexpected token"
	if p.pos > 0 && (p.toks[p.pos-1].kind == atNewline || p.toks[p.pos-1].kind == atEOF) {
		msg = "Unexpected end of string"
	}
	panic(&awkSyntaxError{t.line, msg})
}

func (p *awkParser) expect(s string) {
	if !p.is(s) {
		p.fail()
	}
	p.next()
}

func (p *awkParser) newlines() {
	for p.peek().kind == atNewline {
		p.next()
	}
}

// terminators skips newlines and semicolons between statements and rules.
func (p *awkParser) terminators() {
	for p.peek().kind == atNewline || p.is(";") {
		p.next()
	}
}

func parseAwk(src string) (prog *awkProgram, err error) {
	toks, err := awkLex(src)
	if err != nil {
		return nil, err
	}
	p := &awkParser{toks: toks}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(*awkSyntaxError)
			if !ok {
				panic(r)
			}
			err = se
		}
	}()
	prog = &awkProgram{funcs: map[string]*awkFunc{}, lastLine: toks[len(toks)-1].line}
	// Items are apart by newlines, and one semicolon at most.
	for p.newlines(); p.peek().kind != atEOF; p.itemEnd() {
		switch {
		case p.is("BEGIN"):
			p.next()
			p.newlines()
			prog.begin = append(prog.begin, p.block()...)
		case p.is("END"):
			p.next()
			p.newlines()
			prog.end = append(prog.end, p.block()...)
		case p.is("function") || p.is("func"):
			p.next()
			p.function(prog)
		default:
			r := &awkRule{line: p.peek().line}
			if !p.is("{") {
				r.pattern = p.expr()
				if p.is(",") {
					p.next()
					p.newlines()
					r.pattern2 = p.expr()
				}
			}
			if p.is("{") {
				r.action = p.block()
				r.hasAction = true
			}
			prog.rules = append(prog.rules, r)
		}
	}
	return prog, nil
}

// function parses a function definition after its keyword.
func (p *awkParser) function(prog *awkProgram) {
	name := p.next()
	if name.kind != atName && !(name.kind == atBuiltin || name.kind == atKeyword) {
		p.pos--
		p.fail()
	}
	if name.kind != atName {
		p.pos--
		p.fail()
	}
	p.expect("(")
	params := map[string]int{}
	for !p.is(")") {
		t := p.next()
		if t.kind != atName {
			p.pos--
			p.fail()
		}
		params[t.s] = len(params)
		p.newlines()
		if p.is(",") {
			p.next()
			p.newlines()
		} else if !p.is(")") {
			p.fail()
		}
	}
	p.next()
	p.newlines()
	f := &awkFunc{name: name.s, nparams: len(params)}
	p.params = params
	f.body = p.block()
	p.params = nil
	prog.funcs[name.s] = f
}

// name is how a variable is named: a parameter's number inside a function.
func (p *awkParser) name(s string) string {
	if i, ok := p.params[s]; ok {
		return awkParam(i)
	}
	return s
}

// itemEnd skips what may end a rule, function or BEGIN or END: newlines, and one
// semicolon among them.
func (p *awkParser) itemEnd() {
	p.newlines()
	if p.is(";") {
		p.next()
		p.newlines()
	}
}

func (p *awkParser) block() []awkStmt {
	p.expect("{")
	var body []awkStmt
	for p.terminators(); !p.is("}"); p.terminators() {
		if p.peek().kind == atEOF {
			p.fail()
		}
		body = append(body, p.stmt())
	}
	p.next()
	return body
}

// simpleEnd ends a simple statement: a newline, ';', or a '}' that follows.
func (p *awkParser) simpleEnd() {
	switch {
	case p.peek().kind == atNewline || p.is(";"):
		p.next()
	case p.is("}") || p.peek().kind == atEOF:
	default:
		p.fail()
	}
}

// stmt parses a statement, which keeps its line.
func (p *awkParser) stmt() awkStmt {
	line := p.peek().line
	return sLine{line, p.stmt0()}
}

func (p *awkParser) stmt0() awkStmt {
	t := p.peek()
	switch {
	case p.is("{"):
		return sBlock{p.block()}
	case p.is("if"):
		p.next()
		p.expect("(")
		c := p.expr()
		p.expect(")")
		p.newlines()
		then := p.stmtOrEmpty()
		// An else may follow after newlines or a semicolon.
		save := p.pos
		p.terminators()
		if p.is("else") {
			p.next()
			p.newlines()
			return sIf{c, then, p.stmtOrEmpty()}
		}
		p.pos = save
		return sIf{c, then, nil}
	case p.is("while"):
		p.next()
		p.expect("(")
		c := p.expr()
		p.expect(")")
		if p.is(";") {
			p.next()
			return sWhile{c: c, body: sBlock{}}
		}
		p.newlines()
		return sWhile{c: c, body: p.loopBody()}
	case p.is("do"):
		p.next()
		p.newlines()
		body := p.loopBody()
		p.terminators()
		p.expect("while")
		p.expect("(")
		c := p.expr()
		p.expect(")")
		p.simpleEnd()
		return sWhile{c: c, body: body, do: true}
	case p.is("for"):
		p.next()
		p.expect("(")
		if p.peek().kind == atName && p.toks[p.pos+1].kind == atKeyword && p.toks[p.pos+1].s == "in" {
			v := p.name(p.next().s)
			p.next()
			arr := p.next()
			if arr.kind != atName {
				p.fail()
			}
			p.expect(")")
			p.newlines()
			return sForIn{v: v, arr: p.name(arr.s), body: p.loopBody()}
		}
		var f sFor
		if !p.is(";") {
			f.init = p.simple()
		}
		p.expect(";")
		p.newlines()
		if !p.is(";") {
			f.c = p.expr()
		}
		p.expect(";")
		p.newlines()
		if !p.is(")") {
			f.post = p.simple()
		}
		p.expect(")")
		if p.is(";") {
			p.next()
			f.body = sBlock{}
			return f
		}
		p.newlines()
		f.body = p.loopBody()
		return f
	case p.is(";"):
		p.next()
		return sBlock{}
	case p.is("next"):
		p.next()
		p.simpleEnd()
		return sNext{}
	case p.is("nextfile"):
		p.next()
		p.simpleEnd()
		return sNextfile{}
	case p.is("return"):
		p.next()
		var x awkExpr
		if !(p.peek().kind == atNewline || p.is(";") || p.is("}") || p.peek().kind == atEOF) {
			x = p.expr()
		}
		p.simpleEnd()
		return sReturn{x}
	case p.is("exit"):
		p.next()
		var x awkExpr
		if !(p.peek().kind == atNewline || p.is(";") || p.is("}") || p.peek().kind == atEOF) {
			x = p.expr()
		}
		p.simpleEnd()
		return sExit{x}
	case p.is("break"), p.is("continue"):
		p.next()
		if p.loops == 0 {
			panic(&awkSyntaxError{t.line, "'" + t.s + "' not in a loop"})
		}
		p.simpleEnd()
		if t.s == "break" {
			return sBreak{}
		}
		return sContinue{}
	}
	s := p.simple()
	p.simpleEnd()
	return s
}

func (p *awkParser) stmtOrEmpty() awkStmt {
	if p.is(";") {
		p.next()
		return sBlock{}
	}
	return p.stmt()
}

func (p *awkParser) loopBody() awkStmt {
	p.loops++
	defer func() { p.loops-- }()
	return p.stmtOrEmpty()
}

// simple is a simple statement: print, printf, delete or an expression.
func (p *awkParser) simple() awkStmt {
	switch {
	case p.is("print"), p.is("printf"):
		pr := sPrint{printf: p.next().s == "printf"}
		p.noGT = true
		if !(p.peek().kind == atNewline || p.is(";") || p.is("}") || p.is(">") || p.is(">>") || p.is("|") || p.peek().kind == atEOF) {
			if p.is("(") {
				// print (a, b) > f: a parenthesized list is the arguments.
				save := p.pos
				p.next()
				p.noGT = false
				args := []awkExpr{p.expr()}
				for p.is(",") {
					p.next()
					p.newlines()
					args = append(args, p.expr())
				}
				p.noGT = true
				if p.is(")") && (len(args) > 1 || p.endsPrint(p.pos+1)) {
					p.next()
					pr.args = args
				} else {
					p.pos = save
				}
			}
			if pr.args == nil {
				pr.args = []awkExpr{p.expr()}
				for p.is(",") {
					p.next()
					p.newlines()
					pr.args = append(pr.args, p.expr())
				}
			}
		}
		p.noGT = false
		switch {
		case p.is(">"), p.is(">>"):
			pr.append = p.next().s == ">>"
			pr.dest = p.concat()
		case p.is("|"):
			p.next()
			pr.pipe = true
			pr.dest = p.concat()
		}
		return pr
	case p.is("delete"):
		p.next()
		name := p.next()
		if name.kind != atName {
			p.fail()
		}
		d := sDelete{arr: p.name(name.s)}
		if p.is("[") {
			p.next()
			d.subs = p.exprList("]")
		}
		return d
	}
	return sExpr{p.expr()}
}

// endsPrint reports whether the token at i ends print's arguments.
func (p *awkParser) endsPrint(i int) bool {
	t := p.toks[i]
	return t.kind == atNewline || t.kind == atEOF || (t.kind == atPunct || t.kind == atKeyword) && (t.s == ";" || t.s == "}" || t.s == ">" || t.s == ">>" || t.s == "|")
}

func (p *awkParser) exprList(end string) []awkExpr {
	// Newlines may follow a comma only, as in busybox.
	var list []awkExpr
	for {
		list = append(list, p.expr())
		if p.is(end) {
			p.next()
			return list
		}
		p.expect(",")
		p.newlines()
	}
}

func isLvalue(x awkExpr) bool {
	switch x.(type) {
	case aVar, aField, aIndex:
		return true
	}
	return false
}

func (p *awkParser) expr() awkExpr {
	lhs := p.ternary()
	if t := p.peek(); t.kind == atPunct && isLvalue(lhs) {
		switch t.s {
		case "=", "+=", "-=", "*=", "/=", "%=", "^=":
			p.next()
			p.newlines()
			return aAssign{t.s, lhs, p.expr()}
		}
	}
	return lhs
}

func (p *awkParser) ternary() awkExpr {
	c := p.or()
	if p.is("?") {
		p.next()
		p.newlines()
		a := p.ternary()
		p.newlines()
		p.expect(":")
		p.newlines()
		return aCond{c, a, p.ternary()}
	}
	return c
}

func (p *awkParser) or() awkExpr {
	l := p.and()
	for p.is("||") {
		p.next()
		p.newlines()
		l = aBinary{"||", l, p.and()}
	}
	return l
}

func (p *awkParser) and() awkExpr {
	l := p.in()
	for p.is("&&") {
		p.next()
		p.newlines()
		l = aBinary{"&&", l, p.in()}
	}
	return l
}

func (p *awkParser) in() awkExpr {
	l := p.match()
	for p.is("in") && !p.noIn {
		p.next()
		arr := p.next()
		if arr.kind != atName {
			p.fail()
		}
		l = aIn{[]awkExpr{l}, p.name(arr.s)}
	}
	return l
}

func (p *awkParser) match() awkExpr {
	l := p.compare()
	for p.is("~") || p.is("!~") {
		neg := p.next().s == "!~"
		p.newlines()
		l = aMatch{neg, l, p.compare()}
	}
	return l
}

func (p *awkParser) compare() awkExpr {
	l := p.concat()
	t := p.peek()
	if t.kind == atPunct {
		switch t.s {
		case "<", "<=", "==", "!=", ">=":
			p.next()
			p.newlines()
			return aBinary{t.s, l, p.concat()}
		case ">":
			if !p.noGT {
				p.next()
				p.newlines()
				return aBinary{t.s, l, p.concat()}
			}
		}
	}
	return l
}

// startsOperand reports whether the next token can begin an operand of concatenation.
func (p *awkParser) startsOperand() bool {
	t := p.peek()
	switch t.kind {
	case atNumber, atString, atRegex, atName, atBuiltin:
		return true
	case atPunct:
		return t.s == "$" || t.s == "(" || t.s == "!" || t.s == "++" || t.s == "--"
	case atKeyword:
		return false
	}
	return false
}

func (p *awkParser) concat() awkExpr {
	l := p.additive()
	for {
		switch {
		case p.is("|") && p.toks[p.pos+1].kind == atKeyword && p.toks[p.pos+1].s == "getline":
			// cmd | getline [var]
			p.next()
			p.next()
			l = aGetline{src: l, cmd: true, lhs: p.getlineTarget()}
			continue
		case p.startsOperand():
			l = aBinary{"concat", l, p.additive()}
			continue
		}
		return l
	}
}

func (p *awkParser) additive() awkExpr {
	l := p.mul()
	for p.is("+") || p.is("-") {
		op := p.next().s
		p.newlines()
		l = aBinary{op, l, p.mul()}
	}
	return l
}

func (p *awkParser) mul() awkExpr {
	l := p.unary()
	for p.is("*") || p.is("/") || p.is("%") {
		op := p.next().s
		p.newlines()
		l = aBinary{op, l, p.unary()}
	}
	return l
}

func (p *awkParser) unary() awkExpr {
	switch {
	case p.is("!"):
		p.next()
		return aUnary{"!", p.unary()}
	case p.is("-"), p.is("+"):
		op := p.next().s
		return aUnary{op, p.unary()}
	}
	return p.power()
}

func (p *awkParser) power() awkExpr {
	x := p.postfix()
	if p.is("^") {
		p.next()
		return aBinary{"^", x, p.unary()}
	}
	return x
}

func (p *awkParser) postfix() awkExpr {
	x := p.primary()
	if f, ok := x.(aField); ok && (p.is("++") || p.is("--")) {
		if _, lit := f.index.(aNum); lit {
			p.fail() // busybox's lexer: $2++ is no lvalue
		}
	}
	if (p.is("++") || p.is("--")) && isLvalue(x) {
		return aIncDec{p.next().s, false, x}
	}
	return x
}

func (p *awkParser) primary() awkExpr {
	t := p.next()
	switch t.kind {
	case atNumber:
		return aNum{t.n}
	case atString:
		return aStr{t.s}
	case atRegex:
		re, err := compileRegex(t.s, true, false)
		if err != nil {
			panic(&awkSyntaxError{-1, awkRegexError(t.s, err)})
		}
		return aRegex{re}
	case atName:
		if t.call {
			p.next()
			call := aUserCall{name: t.s}
			if !p.is(")") {
				saveGT, saveIn := p.noGT, p.noIn
				p.noGT, p.noIn = false, false
				call.args = p.exprList(")")
				p.noGT, p.noIn = saveGT, saveIn
			} else {
				p.next()
			}
			return call
		}
		if p.is("[") {
			p.next()
			return aIndex{p.name(t.s), p.exprList("]")}
		}
		return aVar{p.name(t.s)}
	case atKeyword:
		if t.s == "getline" {
			g := aGetline{lhs: p.getlineTarget()}
			if p.is("<") {
				p.next()
				g.src = p.postfix()
			}
			return g
		}
	case atBuiltin:
		call := aCall{name: t.s}
		if p.is("(") {
			p.next()
			if !p.is(")") {
				saveGT, saveIn := p.noGT, p.noIn
				p.noGT, p.noIn = false, false
				call.args = p.exprList(")")
				p.noGT, p.noIn = saveGT, saveIn
			} else {
				p.next()
			}
		} else if t.s != "length" {
			p.fail()
		}
		return call
	case atPunct:
		switch t.s {
		case "$":
			return aField{p.fieldOperand()}
		case "(":
			saveGT, saveIn := p.noGT, p.noIn
			p.noGT, p.noIn = false, false
			list := []awkExpr{p.expr()}
			for p.is(",") {
				p.next()
				p.newlines()
				list = append(list, p.expr())
			}
			p.expect(")")
			p.noGT, p.noIn = saveGT, saveIn
			if p.is("in") && !p.noIn {
				p.next()
				arr := p.next()
				if arr.kind != atName {
					p.fail()
				}
				return aIn{list, p.name(arr.s)}
			}
			if len(list) > 1 {
				p.fail()
			}
			return aGroup{list[0]}
		case "++", "--":
			x := p.primary()
			if !isLvalue(x) {
				p.fail()
			}
			return aIncDec{t.s, true, x}
		case "-", "+", "!":
			p.pos--
			return p.unary()
		}
	}
	p.pos--
	p.fail()
	return nil
}

// getlineTarget is the variable getline may name, or nil.
func (p *awkParser) getlineTarget() awkExpr {
	t := p.peek()
	switch {
	case t.kind == atName && !t.call:
		return p.primary()
	case p.is("$"):
		p.next()
		return aField{p.fieldOperand()}
	}
	return nil
}

// fieldOperand is what follows '$': a primary, with ++/-- applied to it ($i++ is ($i)++,
// which postfix handles).
func (p *awkParser) fieldOperand() awkExpr {
	if p.is("-") {
		p.next()
		return aUnary{"-", p.fieldOperand()}
	}
	return p.primary()
}

func (e *awkSyntaxError) Error() string {
	if e.line < 0 {
		return e.msg // busybox's xregcomp: no line
	}
	return fmt.Sprintf("cmd. line:%d: %s", e.line, e.msg)
}

// awkHexOct is the length of the hex or octal integer s starts with ("0x1f", "017"), as
// busybox's lexer reads one with strtoull; 0 when s is a decimal number ("09", "00.5").
func awkHexOct(s string) int {
	if s[1]|0x20 == 'x' {
		j := 2
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j]|0x20 >= 'a' && s[j]|0x20 <= 'f') {
			j++
		}
		if j == 2 {
			return 0
		}
		return j
	}
	j := 1
	for j < len(s) && s[j] >= '0' && s[j] <= '7' {
		j++
	}
	if j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
		return 0
	}
	return j
}
