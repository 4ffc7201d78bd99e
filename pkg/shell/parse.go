package shell

// This file is sh -c: the script is parsed whole first, so that a syntax error (or syntax
// that is not simulated) runs nothing, then its commands run one by one on the machine
// that runs the shell, so their steps land in order among the caller's.

import (
	"fmt"
	"strconv"
	"strings"
)

// runShell: sh [-c] [-e] [-l] SCRIPT [NAME [ARG...]]: NAME is $0 and the ARGs $1.... Only
// -c is simulated as a way to run sh: there is no terminal or script file to read.
func runShell(m *machine, argv []string) int {
	sh := &shell{m: m, params: []string{argv[0]}}
	command, args := false, argv[1:]
	for ; len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-'; args = args[1:] {
		arg := args[0]
		if arg == "--" {
			args = args[1:]
			break
		}
		if strings.HasPrefix(arg, "--") {
			m.write("", "sh: option not simulated: "+arg+"\n")
			return 2
		}
		for _, flag := range arg[1:] {
			switch flag {
			case 'c':
				command = true
			case 'e':
				sh.errexit = true
			case 'l':
				// A login shell reads profiles; a simulated container has none.
			default:
				m.write("", "sh: option not simulated: -"+string(flag)+"\n")
				return 2
			}
		}
	}
	if !command || len(args) == 0 {
		m.write("", "sh: interactive shell not simulated\n")
		return 2
	}
	stmts, err := parse(args[0])
	if err != nil {
		m.write("", err.Error()+"\n")
		return 2
	}
	if len(args) > 1 {
		sh.params = args[1:]
	}
	return sh.run(stmts)
}

// shell is one sh process: its positional parameters, options and last status.
type shell struct {
	m       *machine
	params  []string // $0, $1, ...
	errexit bool     // -e: stop at the first failure that ends an and-or list
	status  int      // $?
}

// run runs the statements with sh's rules: && and || look at the last status, skipped
// commands leave it alone, and exit stops the script.
func (sh *shell) run(stmts []stmt) int {
	for i, s := range stmts {
		if s.op == and && sh.status != 0 || s.op == or && sh.status == 0 {
			continue
		}
		argv := sh.expand(s.words)
		if len(argv) == 0 {
			sh.status = 0 // words like $UNSET expanded to no command at all
			continue
		}
		if argv[0] == "exit" {
			return exitCode(sh.m, argv[1:], sh.status)
		}
		sh.status = sh.m.run(argv, func(name string) string {
			return fmt.Sprintf("sh: %d: %s: not found\n", s.line, name) // dash's wording
		})
		// -e ignores failures that && or || go on to test, as POSIX says.
		if sh.errexit && sh.status != 0 && (i+1 == len(stmts) || stmts[i+1].op == seq) {
			return sh.status
		}
	}
	return sh.status
}

// expand turns words into argv. Parameters are replaced when the command runs, as $?
// changes between commands; unquoted ones are split on blanks and vanish when empty, so
// `echo $UNSET x` prints "x" as in sh.
func (sh *shell) expand(words []word) []string {
	var argv []string
	for _, w := range words {
		argv = sh.expandWord(argv, w)
	}
	return argv
}

func (sh *shell) expandWord(argv []string, w word) []string {
	var field strings.Builder
	started := false // field is an argument even if empty, as "" is
	for _, p := range w.parts {
		if !p.param || p.quoted {
			field.WriteString(sh.text(p))
			started = true
			continue
		}
		value := sh.param(p.text)
		for i := 0; i < len(value); i++ {
			if c := value[i]; c == ' ' || c == '\t' || c == '\n' {
				if started {
					argv = append(argv, field.String())
					field.Reset()
					started = false
				}
				continue
			}
			field.WriteByte(value[i])
			started = true
		}
	}
	if started {
		argv = append(argv, field.String())
	}
	return argv
}

func (sh *shell) text(p part) string {
	if p.param {
		return sh.param(p.text)
	}
	return p.text
}

// param is the value of $name: $?, a positional parameter, or an environment variable
// (with HOSTNAME falling back to the pod's hostname, as shells set it). Unset is "".
func (sh *shell) param(name string) string {
	if name == "?" {
		return strconv.Itoa(sh.status)
	}
	if isDigits(name) {
		i, err := strconv.Atoi(name)
		if err != nil || i >= len(sh.params) {
			return ""
		}
		return sh.params[i]
	}
	if v, ok := sh.m.lookupVar(name); ok {
		return v
	}
	if name == "HOSTNAME" {
		return sh.m.env.Hostname
	}
	return ""
}

// connector is how a statement follows the one before it.
type connector int

const (
	seq connector = iota // ; or newline: runs whatever the last status
	and                  // &&: runs only if the last status is 0
	or                   // ||: runs only if the last status is not 0
)

// stmt is one simple command of a script.
type stmt struct {
	op    connector
	words []word
	line  int // for error messages, as dash numbers script lines
}

// word is one shell word before expansion.
type word struct {
	parts []part
	raw   string // the source text, for error messages
}

// part is a run of a word: a literal, or a parameter to expand when the command runs.
type part struct {
	text   string // the literal, or the parameter's name
	param  bool
	quoted bool // in quotes or escaped: never split, and an argument even when empty
}

// add appends p, joining it to the last part when both are literals alike.
func (w *word) add(p part) {
	if n := len(w.parts); n > 0 && !p.param {
		if last := &w.parts[n-1]; !last.param && last.quoted == p.quoted {
			last.text += p.text
			return
		}
	}
	w.parts = append(w.parts, p)
}

// syntaxError is a script that does not run: wrong, or beyond what is simulated.
type syntaxError struct {
	line int
	msg  string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("sh: %d: %s", e.line, e.msg) }

func notSimulated(line int, token string) error {
	return &syntaxError{line: line, msg: "syntax not simulated: " + token}
}

// reserved are the words that begin compound commands (if, loops, groups, negation),
// which are not simulated; as command names they would otherwise be "not found".
var reserved = map[string]bool{
	"!": true, "{": true, "}": true, "[[": true, "case": true, "do": true, "done": true,
	"elif": true, "else": true, "esac": true, "fi": true, "for": true, "function": true,
	"if": true, "in": true, "select": true, "then": true, "until": true, "while": true,
}

// parse reads a whole script into statements.
func parse(src string) ([]stmt, error) {
	p := &parser{lex: lexer{src: src, line: 1}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	var stmts []stmt
	op := seq
	for {
		if err := p.skipNewlines(); err != nil {
			return nil, err
		}
		if p.tok.kind == tEOF {
			if op != seq {
				return nil, &syntaxError{line: p.tok.line, msg: "Syntax error: end of file unexpected"}
			}
			return stmts, nil
		}
		s, err := p.command(op)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, s)
		switch p.tok.kind {
		case tEOF:
			return stmts, nil
		case tSemi, tNewline:
			op = seq
		case tAnd:
			op = and
		case tOr:
			op = or
		default:
			return nil, p.unexpected()
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
}

type parser struct {
	lex lexer
	tok token
}

func (p *parser) advance() error {
	var err error
	p.tok, err = p.lex.next()
	return err
}

// skipNewlines skips blank lines, which may also follow && and ||.
func (p *parser) skipNewlines() error {
	for p.tok.kind == tNewline {
		if err := p.advance(); err != nil {
			return err
		}
	}
	return nil
}

// command reads the words of one simple command, leaving the token that ends it.
func (p *parser) command(op connector) (stmt, error) {
	if p.tok.kind != tWord {
		return stmt{}, p.unexpected()
	}
	s := stmt{op: op, line: p.tok.line}
	for p.tok.kind == tWord {
		s.words = append(s.words, p.tok.word)
		if err := p.advance(); err != nil {
			return stmt{}, err
		}
	}
	return s, checkSupported(s)
}

// checkSupported rejects commands whose first word is syntax that is not simulated: a
// compound command's reserved word or a variable assignment.
func checkSupported(s stmt) error {
	first := s.words[0]
	if len(first.parts) == 0 || first.parts[0].param || first.parts[0].quoted {
		return nil // quoting a word makes it an ordinary command name
	}
	lit := first.parts[0].text
	if len(first.parts) == 1 && reserved[lit] {
		return notSimulated(s.line, lit)
	}
	if name, _, ok := strings.Cut(lit, "="); ok && isName(name) {
		return notSimulated(s.line, first.raw)
	}
	return nil
}

// unexpected is dash's error for an operator where a command should be, or after one.
func (p *parser) unexpected() error {
	return &syntaxError{line: p.tok.line, msg: `Syntax error: "` + p.tok.kind.String() + `" unexpected`}
}

type tokenKind int

const (
	tEOF tokenKind = iota
	tWord
	tNewline
	tSemi
	tDSemi
	tAnd
	tOr
)

func (k tokenKind) String() string {
	return [...]string{"end of file", "word", "newline", ";", ";;", "&&", "||"}[k]
}

type token struct {
	kind tokenKind
	word word
	line int
}

// lexer splits a script into tokens, reporting what is not simulated as soon as it sees
// it: pipes, redirections, background jobs, subshells and command substitution.
type lexer struct {
	src  string
	pos  int
	line int
}

func (l *lexer) peek(off int) byte {
	if l.pos+off < len(l.src) {
		return l.src[l.pos+off]
	}
	return 0
}

func (l *lexer) next() (token, error) {
	l.skipBlanks()
	line := l.line
	if l.pos >= len(l.src) {
		return token{kind: tEOF, line: line}, nil
	}
	c := l.src[l.pos]
	switch c {
	case '\n':
		l.pos++
		l.line++
		return token{kind: tNewline, line: line}, nil
	case ';':
		if l.peek(1) == ';' {
			l.pos += 2
			return token{kind: tDSemi, line: line}, nil
		}
		l.pos++
		return token{kind: tSemi, line: line}, nil
	case '&', '|':
		if l.peek(1) != c {
			return token{}, notSimulated(line, string(c))
		}
		l.pos += 2
		if c == '&' {
			return token{kind: tAnd, line: line}, nil
		}
		return token{kind: tOr, line: line}, nil
	case '<', '>':
		op := string(c)
		if n := l.peek(1); n != 0 && strings.IndexByte("<>&|", n) >= 0 {
			op += string(n)
		}
		return token{}, notSimulated(line, op)
	case '(', ')':
		return token{}, notSimulated(line, string(c))
	}
	w, err := l.word()
	return token{kind: tWord, word: w, line: line}, err
}

// skipBlanks skips blanks, line continuations and a comment, which starts only where a
// word could.
func (l *lexer) skipBlanks() {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == ' ' || c == '\t':
			l.pos++
		case c == '\\' && l.peek(1) == '\n':
			l.pos += 2
			l.line++
		case c == '#':
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		default:
			return
		}
	}
}

func endsWord(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || strings.IndexByte(";&|<>()", c) >= 0
}

func (l *lexer) word() (word, error) {
	start := l.pos
	var w word
	for l.pos < len(l.src) && !endsWord(l.src[l.pos]) {
		var err error
		switch c := l.src[l.pos]; c {
		case '\\':
			l.escape(&w)
		case '\'':
			err = l.singleQuoted(&w)
		case '"':
			err = l.doubleQuoted(&w)
		case '$':
			err = l.dollar(&w, false)
		case '`':
			err = notSimulated(l.line, "`")
		default:
			w.add(part{text: l.src[l.pos : l.pos+1]}) // a byte, not a rune: UTF-8 stays intact
			l.pos++
		}
		if err != nil {
			return word{}, err
		}
	}
	w.raw = l.src[start:l.pos]
	return w, nil
}

// escape reads a backslash outside quotes: it quotes the next character, or joins lines.
func (l *lexer) escape(w *word) {
	switch n := l.peek(1); {
	case l.pos+1 >= len(l.src):
		w.add(part{text: `\`}) // a trailing backslash stays, as in dash
		l.pos++
	case n == '\n':
		l.pos += 2
		l.line++
	default:
		w.add(part{text: l.src[l.pos+1 : l.pos+2], quoted: true})
		l.pos += 2
	}
}

func (l *lexer) singleQuoted(w *word) error {
	end := strings.IndexByte(l.src[l.pos+1:], '\'')
	if end < 0 {
		return notSimulated(l.line, "'")
	}
	text := l.src[l.pos+1 : l.pos+1+end]
	w.add(part{text: text, quoted: true})
	l.line += strings.Count(text, "\n")
	l.pos += end + 2
	return nil
}

// doubleQuoted reads "...": parameters expand inside, and a backslash quotes only the
// characters that are special there.
func (l *lexer) doubleQuoted(w *word) error {
	line := l.line
	w.add(part{quoted: true}) // "" is an (empty) argument
	l.pos++
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; c {
		case '"':
			l.pos++
			return nil
		case '\\':
			l.quotedEscape(w)
		case '$':
			if err := l.dollar(w, true); err != nil {
				return err
			}
		case '`':
			return notSimulated(l.line, "`")
		default:
			if c == '\n' {
				l.line++
			}
			w.add(part{text: l.src[l.pos : l.pos+1], quoted: true})
			l.pos++
		}
	}
	return notSimulated(line, `"`)
}

func (l *lexer) quotedEscape(w *word) {
	switch n := l.peek(1); n {
	case '$', '`', '"', '\\':
		w.add(part{text: string(n), quoted: true})
		l.pos += 2
	case '\n':
		l.pos += 2
		l.line++
	default:
		w.add(part{text: `\`, quoted: true})
		l.pos++
	}
}

// dollar reads a parameter: $NAME, ${NAME}, $?, or a positional $0-$9. A lone $ is
// literal, as in sh; other expansions are not simulated.
func (l *lexer) dollar(w *word, quoted bool) error {
	n := l.peek(1)
	switch {
	case n == '{':
		return l.braced(w, quoted)
	case n == '(':
		return notSimulated(l.line, "$(")
	case n == '?' || isDigit(n):
		w.add(part{text: string(n), param: true, quoted: quoted})
		l.pos += 2
	case isNameStart(n):
		end := l.pos + 1
		for end < len(l.src) && isNameChar(l.src[end]) {
			end++
		}
		w.add(part{text: l.src[l.pos+1 : end], param: true, quoted: quoted})
		l.pos = end
	case n != 0 && strings.IndexByte("$!#@*-", n) >= 0:
		return notSimulated(l.line, "$"+string(n))
	default:
		w.add(part{text: "$", quoted: quoted})
		l.pos++
	}
	return nil
}

// braced reads ${NAME}; operators such as ${NAME:-default} are not simulated.
func (l *lexer) braced(w *word, quoted bool) error {
	end := strings.IndexByte(l.src[l.pos+2:], '}')
	if end < 0 {
		return notSimulated(l.line, "${")
	}
	name := l.src[l.pos+2 : l.pos+2+end]
	if name != "?" && !isName(name) && !isDigits(name) {
		return notSimulated(l.line, "${"+name+"}")
	}
	w.add(part{text: name, param: true, quoted: quoted})
	l.pos += end + 3
	return nil
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isNameChar(c byte) bool  { return isNameStart(c) || isDigit(c) }

func isName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
