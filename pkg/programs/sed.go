package programs

import (
	"bufio"
	"regexp"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

// sedCmd is one command of a sed script, with its addresses, as busybox's sed_cmd_t:
// the script is a flat list in which '{' skips to its '}' when it does not match.
type sedCmd struct {
	begLine, endLine         int // 0: none; -1: $; endLine <= -2: +N (as -2-N)
	begLineOrig, endLineOrig int
	begMatch, endMatch       *regexp.Regexp
	invert                   bool
	inMatch                  bool
	cmd                      byte

	str       string // text of a/i/c, file of r/w, label of :/b/t/T, replacement of s
	ypairs    []byte // y's from/to pairs
	sub       *regexp.Regexp
	which     int // s: 0 all (g), N the Nth
	subP      bool
	wFile     string // s///w and w
	wLastChar byte
}

// sed is one run of sed: its script, input and output.
type sed struct {
	c        *cmd
	cmds     []*sedCmd
	quiet    bool
	extended bool
	prevRe   *regexp.Regexp
	pending  string // a line ending in a backslash, continued by the next
	hold     string
	holdSet  bool
	appends  []string
	out      *strings.Builder // -i's output; nil is stdout
	lastPut  byte             // the last character written ('\n' or 0 at start)
	status   int
	wfiles   map[string]bool

	// input
	files   []string
	fileIdx int
	reader  *bufio.Reader
}

// noEOL marks a last line that had no newline.
const noEOL = 0xff

func runSed(c *cmd) int {
	if len(c.args) > 0 && c.args[0] == "--version" {
		c.write("This is not GNU sed version 4.0\n")
		return 0
	}
	// -i takes an optional suffix attached to it (-i.bak).
	inPlace, suffix := false, ""
	var rest []string
	for i, a := range c.args {
		if a == "--" {
			rest = append(rest, c.args[i:]...)
			break
		}
		if len(a) >= 2 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a, 'i') > 0 && !strings.ContainsAny(a[1:strings.IndexByte(a, 'i')], "ef") {
			j := strings.IndexByte(a, 'i')
			inPlace, suffix = true, a[j+1:]
			if a[1:j] != "" {
				rest = append(rest, a[:j])
			}
			continue
		}
		if s, ok := strings.CutPrefix(a, "--in-place"); ok && (s == "" || s[0] == '=') {
			inPlace, suffix = true, strings.TrimPrefix(s, "=")
			continue
		}
		rest = append(rest, a)
	}
	c.args = rest
	o, args := c.getopt("rEne:f:", []getopt.Long{
		{Name: "regexp-extended", Key: 'r'}, {Name: "quiet", Key: 'n'}, {Name: "silent", Key: 'n'},
		{Name: "expression=", Key: 'e'}, {Name: "file=", Key: 'f'},
	})
	s := &sed{c: c, quiet: o.Has('n'), extended: o.Has('r') || o.Has('E'), lastPut: '\n', wfiles: map[string]bool{}}
	// busybox adds every -e before any -f.
	for _, e := range o.Vals('e') {
		for _, line := range strings.Split(e, "\n") {
			s.addCmd(line)
		}
	}
	for _, f := range o.Vals('f') {
		data, err := c.readAll(f)
		if err != nil {
			c.perror(err, "can't open '%s'", f)
			c.exit(1)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			s.addCmd(line)
		}
	}
	if !o.Has('e') && !o.Has('f') {
		if len(args) == 0 {
			c.showUsage(1)
		}
		for _, line := range strings.Split(args[0], "\n") {
			s.addCmd(line)
		}
		args = args[1:]
	}
	s.addCmd("")
	if len(args) == 0 {
		if inPlace {
			c.die("-i requires an argument")
		}
		args = []string{"-"}
	}
	if !inPlace {
		s.files = args
		s.process()
		return s.status
	}
	for _, name := range args {
		info, err := c.fs().Stat(c.abs(name))
		if err != nil {
			c.perror(err, "%s", name)
			s.status = 1
			continue
		}
		s.files, s.fileIdx, s.reader = []string{name}, 0, nil
		s.out, s.lastPut = &strings.Builder{}, '\n'
		s.process()
		if suffix != "" {
			data, _ := c.fs().ReadFile(c.abs(name))
			c.fs().WriteFile(c.abs(name+suffix), data, info.Mode.Perm(), false, info.UID, info.GID)
		}
		if err := c.fs().WriteFile(c.abs(name), []byte(s.out.String()), info.Mode.Perm(), false, info.UID, info.GID); err != nil {
			c.perror(err, "can't create '%s'", name)
			s.status = 4
		}
		s.out = nil
		for _, sc := range s.cmds {
			sc.begLine, sc.endLine, sc.inMatch = sc.begLineOrig, sc.endLineOrig, false
		}
	}
	return s.status
}

func (s *sed) die(format string, a ...any) { s.c.die(format, a...) }

func (s *sed) compile(pat string, icase bool) *regexp.Regexp {
	re, err := compileRegex(pat, s.extended, icase)
	if err != nil {
		s.die("bad regex '%s': %s", pat, err)
	}
	return re
}

// addCmd parses one line of script (busybox's add_cmd): a line ending in an odd number
// of backslashes continues on the next.
func (s *sed) addCmd(line string) {
	if s.pending != "" {
		line = s.pending + "\n" + line
		s.pending = ""
	}
	n := len(line)
	for n > 0 && line[n-1] == '\\' {
		n--
	}
	if (len(line)-n)&1 == 1 {
		s.pending = line[:len(line)-1]
		if s.pending == "" {
			s.pending = "\x00" // remember that a continuation is pending
		}
		return
	}
	line = strings.TrimPrefix(line, "\x00\n")
	for {
		line = strings.TrimLeft(line, "; \t\n\r\v\f")
		if line == "" {
			return
		}
		if line[0] == '#' {
			if len(line) > 1 && line[1] == 'n' && len(s.cmds) == 0 {
				s.quiet = true
			}
			i := strings.IndexAny(line, "\n\r")
			if i < 0 {
				return
			}
			line = line[i:]
			continue
		}
		sc := &sedCmd{}
		var n int
		n, sc.begLine, sc.begMatch = s.address(line)
		line = line[n:]
		sc.begLineOrig = sc.begLine
		if strings.HasPrefix(line, ",") {
			line = line[1:]
			if len(line) > 1 && line[0] == '+' && isDigit(line[1]) {
				j := 1
				for j < len(line) && isDigit(line[j]) {
					j++
				}
				v, _ := strconv.Atoi(line[1:j])
				sc.endLine = -2 - v
				line = line[j:]
			} else {
				n, sc.endLine, sc.endMatch = s.address(line)
				if n == 0 {
					s.die("no address after comma")
				}
				line = line[n:]
			}
			sc.endLineOrig = sc.endLine
		}
		line = strings.TrimLeft(line, " \t\n\r\v\f")
		if strings.HasPrefix(line, "!") {
			sc.invert = true
			line = strings.TrimLeft(line[1:], " \t\n\r\v\f")
		}
		if line == "" {
			s.die("missing command")
		}
		sc.cmd = line[0]
		line = s.cmdArgs(sc, line[1:])
		s.cmds = append(s.cmds, sc)
	}
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// address parses an address: a number, $, /re/ or \cREc. It returns how much it took.
func (s *sed) address(str string) (int, int, *regexp.Regexp) {
	switch {
	case str != "" && isDigit(str[0]):
		j := 0
		for j < len(str) && isDigit(str[j]) {
			j++
		}
		v, _ := strconv.Atoi(str[:j])
		return j, v, nil
	case strings.HasPrefix(str, "$"):
		return 1, -1, nil
	case strings.HasPrefix(str, "/") || strings.HasPrefix(str, "\\"):
		delim := byte('/')
		pos := 1
		if str[0] == '\\' {
			if len(str) < 2 {
				s.die("unmatched '\\'")
			}
			delim = str[1]
			pos = 2
		}
		next := s.nextDelim(int(delim), str[pos:])
		var re *regexp.Regexp
		if next != 0 {
			re = s.compile(parseEscapesAll(str[pos:pos+next], 0), false)
			s.prevRe = re
		} else {
			re = s.prevRe
			if re == nil {
				s.die("no previous regexp")
			}
		}
		return pos + next + 1, 0, re
	}
	return 0, 0, nil
}

// nextDelim is busybox's index_of_next_unescaped_regexp_delim: the index of the next
// delimiter not escaped nor in a bracket expression (a negative delimiter: brackets are
// not special, as in a replacement).
func (s *sed) nextDelim(delim int, str string) int {
	bracket := -1
	if delim < 0 {
		bracket--
		delim = -delim
	}
	escaped := false
	for idx := 0; idx < len(str); idx++ {
		ch := str[idx]
		switch {
		case bracket >= 0:
			if ch == ']' && !(bracket == idx-1 || bracket == idx-2 && str[idx-1] == '^') {
				bracket = -1
			}
		case escaped:
			escaped = false
		case ch == '\\':
			escaped = true
		case bracket == -1 && ch == '[':
			bracket = idx
		case int(ch) == delim:
			return idx
		}
	}
	s.die("unmatched '%c'", delim)
	return 0
}

// parseEscapes is busybox's: "\from" becomes to; with to 0, every "\x" becomes x.
// Other backslashes stay.
func parseEscapes(str string, from, to byte) string {
	var b strings.Builder
	for i := 0; i < len(str); i++ {
		if str[i] == '\\' && i+1 < len(str) {
			if to == 0 || str[i+1] == from {
				if to != 0 {
					b.WriteByte(to)
				} else {
					b.WriteByte(str[i+1])
				}
				i++
				continue
			}
			b.WriteByte('\\')
			i++
		}
		b.WriteByte(str[i])
	}
	return b.String()
}

// parseEscapesAll is busybox's copy_parsing_escapes: \n, \t and \r become the characters,
// and an escaped delimiter the delimiter.
func parseEscapesAll(str string, delim byte) string {
	str = parseEscapes(str, 'n', '\n')
	str = parseEscapes(str, 't', '\t')
	str = parseEscapes(str, 'r', '\r')
	if delim != 0 {
		str = parseEscapes(str, delim, delim)
	}
	return str
}

// cmdArgs parses what follows a command letter and returns the rest of the line.
func (s *sed) cmdArgs(sc *sedCmd, rest string) string {
	switch sc.cmd {
	case 's':
		return s.substArgs(sc, rest)
	case 'a', 'i', 'c':
		if sc.cmd != 'c' && (sc.endLine != 0 || sc.endMatch != nil) {
			s.die("command '%c' uses only one address", sc.cmd)
		}
		for rest != "" {
			if rest[0] == '\n' || rest[0] == '\\' {
				rest = rest[1:]
				break
			}
			if !isSpaceByte(rest[0]) {
				break
			}
			rest = rest[1:]
		}
		sc.str = parseEscapes(parseEscapesAll(rest, 0), 0, 0)
		return ""
	case 'r', 'w':
		if sc.cmd == 'r' && (sc.endLine != 0 || sc.endMatch != nil) {
			s.die("command '%c' uses only one address", sc.cmd)
		}
		var n int
		n, sc.str = s.fileArg(rest)
		if sc.cmd == 'w' {
			sc.wFile = sc.str
			s.openW(sc.wFile)
			sc.wLastChar = '\n'
		}
		return rest[n:]
	case ':', 'b', 't', 'T':
		rest = strings.TrimLeft(rest, " \t\n\r\v\f")
		n := strings.IndexAny(rest, "; \t\n\r\v\f")
		if n < 0 {
			n = len(rest)
		}
		sc.str = rest[:n]
		return rest[n:]
	case 'y':
		if rest == "" {
			s.die("bad format in substitution expression")
		}
		delim := rest[0]
		match, repl, n := s.regexDelim(rest)
		match = parseEscapes(match, delim, delim)
		repl = parseEscapes(repl, delim, delim)
		for i := 0; i < len(match) && i < len(repl); i++ {
			sc.ypairs = append(sc.ypairs, match[i], repl[i])
		}
		return rest[n+1:]
	}
	if strings.IndexByte("dDgGhHlnNpPqx={}", sc.cmd) < 0 {
		s.die("unsupported command %c", sc.cmd)
	}
	return rest
}

func isSpaceByte(b byte) bool { return b == ' ' || b >= 9 && b <= 13 }

// fileArg takes a filename: blanks skipped, then to the end of the line.
func (s *sed) fileArg(str string) (int, string) {
	start := 0
	for start < len(str) && isSpaceByte(str[start]) {
		start++
	}
	end := strings.IndexByte(str[start:], '\n')
	if end < 0 {
		end = len(str) - start
	}
	if end == 0 {
		s.die("empty filename")
	}
	return start + end, str[start : start+end]
}

// regexDelim splits "/match/replace/" (busybox's parse_regex_delim) and returns the index
// of the third delimiter.
func (s *sed) regexDelim(str string) (string, string, int) {
	if str == "" {
		s.die("bad format in substitution expression")
	}
	delim := str[0]
	idx := s.nextDelim(int(delim), str[1:])
	match := parseEscapesAll(str[1:1+idx], delim)
	start := 1 + idx + 1
	idx2 := s.nextDelim(-int(delim), str[start:])
	d := delim
	if d == '&' {
		d = 0
	}
	repl := parseEscapesAll(str[start:start+idx2], d)
	return match, repl, start + idx2
}

func (s *sed) substArgs(sc *sedCmd, str string) string {
	match, repl, idx := s.regexDelim(str)
	sc.str = repl
	sc.which = 1
	icase := false
	rest := ""
flags:
	for idx++; idx < len(str); idx++ {
		ch := str[idx]
		switch {
		case isDigit(ch):
			j := idx
			for j < len(str) && isDigit(str[j]) {
				j++
			}
			if !strings.HasPrefix(match, "^") {
				sc.which, _ = strconv.Atoi(str[idx:j])
			}
			idx = j - 1
		case isSpaceByte(ch):
		case ch == 'g':
			sc.which = 0
		case ch == 'p':
			sc.subP = true
		case ch == 'w':
			n, f := s.fileArg(str[idx+1:])
			sc.wFile = f
			s.openW(f)
			sc.wLastChar = '\n'
			idx += n
		case ch == 'i' || ch == 'I':
			icase = true
		case ch == '#':
			idx = len(str)
		case ch == ';' || ch == '}':
			rest = str[idx:]
			break flags
		default:
			s.die("bad option in substitution expression")
		}
	}
	if match != "" {
		sc.sub = s.compile(match, icase)
	}
	return rest
}

// openW truncates a w file when the script is parsed, as sed opens it then.
func (s *sed) openW(name string) {
	if s.wfiles[name] {
		return
	}
	s.wfiles[name] = true
	if err := s.c.writeFile(name, nil, false); err != nil {
		s.c.perror(err, "can't open '%s'", name)
		s.c.exit(4)
	}
}

// nextLine reads the next input line across the files, and whether it ended in a
// newline (noEOL when the last line had none).
func (s *sed) nextLine() (string, byte, bool) {
	s.flushAppend()
	for s.fileIdx < len(s.files) {
		if s.reader == nil {
			name := s.files[s.fileIdx]
			r, err := s.c.open(name)
			if err != nil {
				s.c.perror(err, "%s", name)
				s.status = 1
				s.fileIdx++
				continue
			}
			s.reader = bufio.NewReaderSize(r, 64<<10)
		}
		s.c.tick()
		line, err := s.reader.ReadString('\n')
		if line != "" {
			if strings.HasSuffix(line, "\n") {
				return line[:len(line)-1], '\n', true
			}
			return line, noEOL, true
		}
		if err != nil {
			s.reader = nil
			s.fileIdx++
		}
	}
	return "", 0, false
}

// puts writes str and the line's end (busybox's puts_maybe_newline) to the output, or to
// a w file.
func (s *sed) puts(str string, lastGets byte) {
	var b strings.Builder
	if s.lastPut != '\n' && s.lastPut != 0 {
		b.WriteByte('\n')
		s.lastPut = '\n'
	}
	b.WriteString(str)
	if str != "" {
		s.lastPut = 'x'
	}
	if lastGets != noEOL {
		b.WriteByte(lastGets)
		s.lastPut = lastGets
	}
	if s.out != nil {
		s.out.WriteString(b.String())
	} else {
		s.c.write(b.String())
	}
}

func (s *sed) writeFile(sc *sedCmd, str string, lastGets byte) {
	text := str
	if lastGets != noEOL {
		text += string(lastGets)
	}
	s.c.writeFile(sc.wFile, []byte(text), true)
}

func (s *sed) flushAppend() {
	for _, a := range s.appends {
		s.puts(a, '\n')
	}
	s.appends = nil
}

func (s *sed) begMatch(sc *sedCmd, ps string) bool {
	return sc.begMatch != nil && sc.begMatch.MatchString(ps)
}

// process runs the script over the input (busybox's process_files).
func (s *sed) process() {
	next, nextGets, haveNext := s.nextLine()
	linenum := 0
	for haveNext {
		ps, lastGets := next, nextGets
		next, nextGets, haveNext = s.nextLine()
		linenum++
		substituted := false
		printIt := true
	restart:
		for i := 0; i < len(s.cmds); i++ {
			sc := s.cmds[i]
			s.c.tick()
			old := sc.inMatch
			if !old {
				sc.endLine = sc.endLineOrig
			}
			sc.inMatch = sc.inMatch ||
				sc.begLine == 0 && sc.endLine == 0 && sc.begMatch == nil && sc.endMatch == nil ||
				sc.begLine > 0 && (sc.endLine != 0 || sc.endMatch != nil) && sc.begLine <= linenum ||
				sc.begLine > 0 && sc.endLine == 0 && sc.endMatch == nil && sc.begLine == linenum ||
				s.begMatch(sc, ps) ||
				sc.begLine == -1 && !haveNext
			matched := sc.inMatch
			if matched {
				if sc.endLine <= -2 {
					sc.endLine = linenum + (-sc.endLine - 2)
				}
				if sc.begLine > 0 {
					sc.begLine = -2
				}
				var ended bool
				switch {
				case sc.endLine == -1:
					ended = !haveNext
				case sc.endLine != 0:
					ended = sc.endLine <= linenum
				default:
					ended = sc.endMatch == nil
				}
				ended = ended || sc.endMatch != nil && old && sc.endMatch.MatchString(ps)
				sc.inMatch = !ended
			}
			if sc.cmd == '{' {
				if matched == sc.invert {
					nest := 0
					for ; i < len(s.cmds); i++ {
						if s.cmds[i].cmd == '{' {
							nest++
						}
						if s.cmds[i].cmd == '}' {
							nest--
							if nest == 0 {
								break
							}
						}
					}
					if i >= len(s.cmds) {
						s.die("unterminated {")
					}
				}
				continue
			}
			if matched == sc.invert {
				continue
			}
			if sc.begMatch != nil {
				s.prevRe = sc.begMatch
			}
			switch sc.cmd {
			case '=':
				s.emit(strconv.Itoa(linenum) + "\n")
			case 'P':
				if j := strings.IndexByte(ps, '\n'); j >= 0 {
					s.puts(ps[:j], '\n')
					break
				}
				s.puts(ps, '\n')
			case 'p':
				s.puts(ps, '\n')
			case 'D':
				if j := strings.IndexByte(ps, '\n'); j >= 0 {
					ps = ps[j+1:]
					goto restart
				}
				printIt = false
				break restart
			case 'd':
				printIt = false
				break restart
			case 's':
				out, ok := s.substitute(sc, ps)
				if !ok {
					break
				}
				ps = out
				substituted = true
				if sc.subP {
					s.puts(ps, lastGets)
				}
				if sc.wFile != "" {
					s.writeFile(sc, ps, lastGets)
				}
			case 'a':
				s.appends = append(s.appends, sc.str)
			case 'i':
				s.puts(sc.str, '\n')
			case 'c':
				if !sc.inMatch {
					s.puts(sc.str, '\n')
				}
				printIt = false
				break restart
			case 'r':
				if data, err := s.c.fs().ReadFile(s.c.abs(sc.str)); err == nil {
					for _, l := range strings.SplitAfter(string(data), "\n") {
						if l != "" {
							s.appends = append(s.appends, strings.TrimSuffix(l, "\n"))
						}
					}
				}
			case 'w':
				s.writeFile(sc, ps, lastGets)
			case 'n':
				if !s.quiet {
					s.puts(ps, lastGets)
				}
				if !haveNext {
					printIt = false
					break restart
				}
				ps, lastGets = next, nextGets
				next, nextGets, haveNext = s.nextLine()
				substituted = false
				linenum++
			case 'q':
				haveNext = false
				break restart
			case 'N':
				if !haveNext {
					break restart
				}
				ps += "\n" + next
				lastGets = nextGets
				next, nextGets, haveNext = s.nextLine()
				linenum++
			case 't', 'T', 'b':
				if sc.cmd == 't' {
					if !substituted {
						break
					}
					substituted = false
				}
				if sc.cmd == 'T' && substituted {
					break
				}
				if sc.str == "" {
					break restart
				}
				j := s.label(sc.str)
				i = j
			case 'y':
				b := []byte(ps)
				for k := range b {
					for j := 0; j+1 < len(sc.ypairs); j += 2 {
						if b[k] == sc.ypairs[j] {
							b[k] = sc.ypairs[j+1]
							break
						}
					}
				}
				ps = string(b)
			case 'g':
				ps = s.hold
			case 'G':
				ps += "\n" + s.hold
				lastGets = '\n'
			case 'h':
				s.hold = ps
			case 'H':
				s.hold += "\n" + ps
			case 'x':
				ps, s.hold = s.hold, ps
				lastGets = '\n'
			}
		}
		if printIt && !s.quiet {
			s.puts(ps, lastGets)
		}
		s.flushAppend()
	}
}

// emit writes text as it is to the output (=).
func (s *sed) emit(text string) {
	if s.out != nil {
		s.out.WriteString(text)
	} else {
		s.c.write(text)
	}
}

// label finds the ':' command a branch jumps to.
func (s *sed) label(name string) int {
	for i, sc := range s.cmds {
		if sc.cmd == ':' && sc.str == name {
			return i
		}
	}
	s.die("can't find label for jump to '%s'", name)
	return 0
}

// substitute is the s command on line (busybox's do_subst_command): the new line and
// whether it changed.
func (s *sed) substitute(sc *sedCmd, line string) (string, bool) {
	re := sc.sub
	if re == nil {
		re = s.prevRe
		if re == nil {
			s.die("no previous regexp")
		}
	}
	s.prevRe = re
	matches := re.FindAllStringSubmatchIndex(line, -1)
	if len(matches) == 0 {
		return line, false
	}
	var b strings.Builder
	pos := 0
	altered := false
	for n, m := range matches {
		if sc.which != 0 && sc.which != n+1 {
			continue
		}
		b.WriteString(line[pos:m[0]])
		expandReplacement(&b, sc.str, line, m)
		pos = m[1]
		altered = true
		if sc.which != 0 {
			break
		}
	}
	b.WriteString(line[pos:])
	return b.String(), altered
}

// expandReplacement writes s's replacement for match m of line: & is the match, \N a
// group, \x the character x.
func expandReplacement(b *strings.Builder, repl, line string, m []int) {
	for i := 0; i < len(repl); i++ {
		switch ch := repl[i]; {
		case ch == '\\' && i+1 < len(repl):
			i++
			if d := repl[i]; isDigit(d) {
				g := int(d - '0')
				if 2*g+1 < len(m) && m[2*g] >= 0 {
					b.WriteString(line[m[2*g]:m[2*g+1]])
				}
				continue
			}
			b.WriteByte(repl[i])
		case ch == '&':
			b.WriteString(line[m[0]:m[1]])
		default:
			b.WriteByte(ch)
		}
	}
}
