package programs

import (
	"io"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

// grepper is one grep run: its patterns, options and what it has printed.
type grepper struct {
	c            *cmd
	o            getopt.Result
	res          []*regexp.Regexp
	invert       bool
	printName    bool
	before       int
	after        int
	maxCount     int
	printedAny   bool // a line was printed (for the "--" between context groups)
	lastPrinted  int
	matchedFiles bool
}

func runGrep(c *cmd) int {
	c.errStatus = 2 // 1 is "no match"
	o, args := c.getopt("lnqvscFiHhe:f:LorRm:wA:B:C:Exzab", []getopt.Long{
		{Name: "color?", Key: 0xff},
	})
	g := &grepper{c: c, o: o, invert: o.Has('v'), maxCount: -1}
	extended := o.Has('E') || c.name == "egrep"
	fixed := o.Has('F') || c.name == "fgrep"
	die := c.die
	num := func(b byte) int {
		n, err := strconv.Atoi(o.Val(b))
		if err != nil || n < 0 {
			die("invalid number '%s'", o.Val(b))
		}
		return n
	}
	if o.Has('C') {
		g.before, g.after = num('C'), num('C')
	}
	if o.Has('A') {
		g.after = num('A')
	}
	if o.Has('B') {
		g.before = num('B')
	}
	if o.Has('m') {
		g.maxCount = num('m')
	}
	var patterns []string
	for _, a := range o.Seq {
		switch a.Key {
		case 'e':
			patterns = append(patterns, strings.Split(a.Val, "\n")...)
		case 'f':
			data, err := c.readAll(a.Val)
			if err != nil {
				die("can't open '%s': %s", a.Val, errText(err))
			}
			text := strings.TrimSuffix(string(data), "\n")
			if text != "" || len(data) > 0 {
				patterns = append(patterns, strings.Split(text, "\n")...)
			}
		}
	}
	if !o.Has('e') && !o.Has('f') {
		if len(args) == 0 {
			c.showUsage(c.errStatus)
		}
		patterns = strings.Split(args[0], "\n")
		args = args[1:]
	}
	for _, pat := range patterns {
		src := pat
		if fixed {
			src = regexp.QuoteMeta(pat)
		} else if t, err := translateRegex(pat, extended); err != nil {
			die("bad regex '%s': %s", pat, err)
		} else {
			src = t
		}
		if o.Has('x') {
			src = "^(?:" + src + ")$"
		}
		if o.Has('i') {
			src = "(?i)" + src
		}
		re, err := regexp.Compile(src)
		if err != nil {
			die("bad regex '%s': %s", pat, regexError(err))
		}
		re.Longest()
		g.res = append(g.res, re)
	}
	g.printName = len(args) > 1 || o.Has('H')
	if o.Has('h') {
		g.printName = false
	}
	if len(args) == 0 {
		args = []string{"-"}
	}
	openErrors := false
	matched := false
	for _, name := range args {
		if name == "-" {
			matched = g.file(c.stdin(), "(standard input)") || matched
			continue
		}
		if o.Has('r') || o.Has('R') {
			if info, err := c.fs().Stat(c.abs(name)); err == nil && info.Mode.IsDir() {
				if !o.Has('h') {
					g.printName = true
				}
				ok, errs := g.dir(name)
				matched = ok || matched
				openErrors = openErrors || errs
				continue
			}
		}
		r, err := c.open(name)
		if err != nil {
			if !o.Has('s') {
				c.perror(err, "%s", name)
			}
			openErrors = true
			continue
		}
		matched = g.file(r, name) || matched
	}
	if openErrors {
		return 2
	}
	if matched {
		return 0
	}
	return 1
}

// dir greps every file under name (-r, -R); links below it are followed with -R only.
func (g *grepper) dir(name string) (matched, openErrors bool) {
	c := g.c
	entries, err := c.fs().ReadDir(c.abs(name))
	if err != nil {
		if !g.o.Has('s') {
			c.perror(err, "%s", name)
		}
		return false, true
	}
	for _, e := range entries {
		c.tick()
		p := joinPath(name, e.Name())
		info := e.Stat()
		if info.Mode&fs.ModeSymlink != 0 {
			if !g.o.Has('R') {
				continue
			}
			st, err := c.fs().Stat(c.abs(p))
			if err != nil {
				continue
			}
			info = st
		}
		if info.Mode.IsDir() {
			m, errs := g.dir(p)
			matched = matched || m
			openErrors = openErrors || errs
			continue
		}
		r, err := c.open(p)
		if err != nil {
			if !g.o.Has('s') {
				c.perror(err, "%s", p)
			}
			openErrors = true
			continue
		}
		matched = g.file(r, p) || matched
	}
	return matched, openErrors
}

// matches returns where the line matches (-o needs them all, -w checks each).
func (g *grepper) matches(line string) [][]int {
	var out [][]int
	for _, re := range g.res {
		for _, m := range re.FindAllStringIndex(line, -1) {
			if g.o.Has('w') && !wordBounded(line, m[0], m[1]) {
				continue
			}
			out = append(out, m)
			if !g.o.Has('o') {
				return out
			}
		}
	}
	return out
}

func wordBounded(s string, from, to int) bool {
	isWord := func(b byte) bool {
		return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	if from > 0 && isWord(s[from-1]) {
		return false
	}
	if to < len(s) && isWord(s[to]) {
		return false
	}
	return from < to || from == to
}

// file greps one input and reports whether it counts as a match (for -L, a file
// printed).
func (g *grepper) file(r io.Reader, name string) bool {
	c, o := g.c, g.o
	sep := byte('\n')
	if o.Has('z') {
		sep = 0
	}
	nmatches := 0
	linenum := 0
	var beforeBuf []string
	afterLeft := 0
	g.lastPrinted = 0
	printLine := func(line string, num int, deco byte) {
		if (g.before > 0 || g.after > 0) && g.printedAny && g.lastPrinted != num-1 {
			c.write("--\n")
		}
		g.printedAny = true
		g.lastPrinted = num
		var b strings.Builder
		if g.printName {
			b.WriteString(name)
			b.WriteByte(deco)
		}
		if o.Has('n') {
			b.WriteString(strconv.Itoa(num))
			b.WriteByte(deco)
		}
		if !(o.Has('v') && o.Has('o')) {
			b.WriteString(line)
			b.WriteByte(sep)
		}
		c.write(b.String())
	}
	stop := false
	br := newDelimReader(r, sep)
	for !stop {
		c.tick()
		line, ok := br.next()
		if !ok {
			break
		}
		linenum++
		m := g.matches(line)
		found := len(m) > 0
		if found != g.invert {
			nmatches++
			if o.Has('q') {
				c.exit(0)
			}
			if o.Has('l') {
				c.write(name + "\n")
				return true
			}
			if o.Has('L') {
				return false
			}
			if g.maxCount >= 0 && nmatches > g.maxCount {
				break
			}
			if !o.Has('c') {
				for i, bl := range beforeBuf {
					printLine(bl, linenum-len(beforeBuf)+i, '-')
				}
				beforeBuf = nil
				if o.Has('o') && !g.invert {
					for _, mm := range m {
						if mm[1] > mm[0] {
							printLine(line[mm[0]:mm[1]], linenum, ':')
						}
					}
				} else {
					printLine(line, linenum, ':')
				}
				afterLeft = g.after
			}
			if g.maxCount >= 0 && nmatches == g.maxCount && afterLeft == 0 {
				stop = true
			}
			continue
		}
		if afterLeft > 0 {
			printLine(line, linenum, '-')
			afterLeft--
			if g.maxCount >= 0 && nmatches >= g.maxCount && afterLeft == 0 {
				stop = true
			}
			continue
		}
		if g.before > 0 {
			beforeBuf = append(beforeBuf, line)
			if len(beforeBuf) > g.before {
				beforeBuf = beforeBuf[1:]
			}
		}
	}
	if o.Has('c') {
		if g.printName {
			c.write(name + ":")
		}
		c.printf("%d\n", nmatches)
	}
	if o.Has('L') {
		c.write(name + "\n")
		return true
	}
	return nmatches != 0
}

// delimReader reads records ended by a delimiter (newline, or NUL with -z), without it.
type delimReader struct {
	src io.Reader
	buf []byte
	eof bool
	sep byte
}

func newDelimReader(r io.Reader, sep byte) *delimReader {
	return &delimReader{src: r, sep: sep}
}

func (d *delimReader) next() (string, bool) {
	for {
		if i := indexByte(d.buf, d.sep); i >= 0 {
			line := string(d.buf[:i])
			d.buf = d.buf[i+1:]
			return line, true
		}
		if d.eof {
			if len(d.buf) == 0 {
				return "", false
			}
			line := string(d.buf)
			d.buf = nil
			return line, true
		}
		chunk := make([]byte, 32<<10)
		n, err := d.src.Read(chunk)
		d.buf = append(d.buf, chunk[:n]...)
		if err != nil {
			d.eof = true
		}
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}
