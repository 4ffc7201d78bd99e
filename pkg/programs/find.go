package programs

import (
	"bufio"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// findExpr is a node of find's expression.
type findExpr interface {
	eval(f *finder, p string, info vfs.Info, depth int) bool
}

type findAnd struct{ l, r findExpr }
type findOr struct{ l, r findExpr }
type findNot struct{ e findExpr }
type findTest func(f *finder, p string, info vfs.Info, depth int) bool

func (e findAnd) eval(f *finder, p string, i vfs.Info, d int) bool {
	return e.l.eval(f, p, i, d) && e.r.eval(f, p, i, d)
}

func (e findOr) eval(f *finder, p string, i vfs.Info, d int) bool {
	return e.l.eval(f, p, i, d) || e.r.eval(f, p, i, d)
}

func (e findNot) eval(f *finder, p string, i vfs.Info, d int) bool { return !e.e.eval(f, p, i, d) }

func (t findTest) eval(f *finder, p string, i vfs.Info, d int) bool { return t(f, p, i, d) }

// finder is one run of find.
type finder struct {
	c          *cmd
	args       []string
	follow     bool
	depthFirst bool
	minDepth   int
	maxDepth   int
	needPrint  bool
	prune      bool // set by -prune for the current file
	quit       bool
	status     int
	plusExecs  []*findExecPlus
}

// findExecPlus is -exec ... {} +: the files it collects, run at the end.
type findExecPlus struct {
	argv  []string
	files []string
}

func runFind(c *cmd) int {
	f := &finder{c: c, maxDepth: math.MaxInt, needPrint: true}
	args := c.args
	// Leading -H and -L are options of the traversal.
	for len(args) > 0 && (args[0] == "-L" || args[0] == "-H") {
		f.follow = args[0] == "-L"
		args = args[1:]
	}
	var paths []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") && args[0] != "!" && args[0] != "(" {
		paths = append(paths, args[0])
		args = args[1:]
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	f.args = args
	var expr findExpr
	if len(f.args) > 0 {
		expr = f.parseOr()
		if len(f.args) > 0 {
			if f.args[0] == ")" {
				c.die("unpaired ')'")
			}
			c.errorf("unrecognized: %s", f.args[0])
			c.showUsage(1)
		}
	}
	for _, p := range paths {
		if f.quit {
			break
		}
		f.walk(p, 0, expr)
	}
	for _, ep := range f.plusExecs {
		if len(ep.files) > 0 {
			f.runExec(ep.argv, ep.files, true)
		}
	}
	return f.status
}

func (f *finder) walk(p string, depth int, expr findExpr) {
	c := f.c
	c.tick()
	info, err := f.stat(p, depth)
	if err != nil {
		c.perror(err, "%s", p)
		f.status = 1
		return
	}
	f.prune = false
	visit := func() {
		if depth < f.minDepth || depth > f.maxDepth {
			return
		}
		ok := true
		if expr != nil {
			ok = expr.eval(f, p, info, depth)
		}
		if ok && f.needPrint {
			c.write(p + "\n")
		}
	}
	if !f.depthFirst {
		visit()
	}
	if info.Mode.IsDir() && depth < f.maxDepth && !f.prune && !f.quit {
		entries, err := c.fs().ReadDir(c.abs(p))
		if err != nil {
			c.perror(err, "%s", p)
			f.status = 1
		}
		for _, e := range entries {
			if f.quit {
				break
			}
			f.walk(joinPath(p, e.Name()), depth+1, expr)
		}
	}
	if f.depthFirst && !f.quit {
		visit()
	}
}

func (f *finder) stat(p string, depth int) (vfs.Info, error) {
	if f.follow {
		if info, err := f.c.fs().Stat(f.c.abs(p)); err == nil {
			return info, nil
		}
	}
	return f.c.fs().Lstat(f.c.abs(p))
}

func (f *finder) parseOr() findExpr {
	l := f.parseAnd()
	for len(f.args) > 0 && (f.args[0] == "-o" || f.args[0] == "-or") {
		f.args = f.args[1:]
		l = findOr{l, f.parseAnd()}
	}
	return l
}

func (f *finder) parseAnd() findExpr {
	l := f.parseNot()
	for len(f.args) > 0 && f.args[0] != "-o" && f.args[0] != "-or" && f.args[0] != ")" {
		if f.args[0] == "-a" || f.args[0] == "-and" {
			f.args = f.args[1:]
		}
		l = findAnd{l, f.parseNot()}
	}
	return l
}

func (f *finder) parseNot() findExpr {
	if len(f.args) > 0 && (f.args[0] == "!" || f.args[0] == "-not") {
		f.args = f.args[1:]
		return findNot{f.parseNot()}
	}
	return f.parsePrimary()
}

// numArg parses find's +N, -N and N: more than, less than, exactly.
func (f *finder) numArg(s, opt string) func(int64) bool {
	cmp := 0
	switch {
	case strings.HasPrefix(s, "+"):
		cmp, s = 1, s[1:]
	case strings.HasPrefix(s, "-"):
		cmp, s = -1, s[1:]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f.c.die("invalid number '%s'", s)
	}
	return func(v int64) bool {
		switch cmp {
		case 1:
			return v > n
		case -1:
			return v < n
		}
		return v == n
	}
}

func (f *finder) parsePrimary() findExpr {
	c := f.c
	if len(f.args) == 0 {
		c.die("unrecognized: %s", "")
	}
	arg := f.args[0]
	f.args = f.args[1:]
	needArg := func() string {
		if len(f.args) == 0 {
			c.die("%s requires an argument", arg)
		}
		a := f.args[0]
		f.args = f.args[1:]
		return a
	}
	always := findTest(func(*finder, string, vfs.Info, int) bool { return true })
	switch arg {
	case "(":
		e := f.parseOr()
		if len(f.args) == 0 || f.args[0] != ")" {
			c.die("unpaired '('")
		}
		f.args = f.args[1:]
		return e
	case "-follow":
		f.follow = true
		return always
	case "-xdev", "-mount", "-noleaf", "-ignore_readdir_race":
		return always
	case "-depth", "-d":
		f.depthFirst = true
		return always
	case "-maxdepth", "-mindepth":
		n := c.positive(needArg())
		if arg == "-maxdepth" {
			f.maxDepth = n
		} else {
			f.minDepth = n
		}
		return always
	case "-print":
		f.needPrint = false
		return findTest(func(f *finder, p string, _ vfs.Info, _ int) bool { f.c.write(p + "\n"); return true })
	case "-print0":
		f.needPrint = false
		return findTest(func(f *finder, p string, _ vfs.Info, _ int) bool { f.c.write(p + "\x00"); return true })
	case "-prune":
		return findTest(func(f *finder, _ string, _ vfs.Info, _ int) bool { f.prune = true; return true })
	case "-quit":
		return findTest(func(f *finder, _ string, _ vfs.Info, _ int) bool { f.quit = true; return true })
	case "-delete":
		f.needPrint = false
		f.depthFirst = true
		return findTest(func(f *finder, p string, info vfs.Info, _ int) bool {
			var err error
			if info.Mode.IsDir() {
				err = f.c.rmdir(p)
			} else {
				err = f.c.fs().Remove(f.c.abs(p), false)
			}
			if err != nil {
				f.c.perror(err, "%s", p)
				f.status = 1
				return false
			}
			return true
		})
	case "-empty":
		return findTest(func(f *finder, p string, info vfs.Info, _ int) bool {
			if info.Mode.IsDir() {
				entries, err := f.c.fs().ReadDir(f.c.abs(p))
				return err == nil && len(entries) == 0
			}
			return info.Mode.IsRegular() && info.Size == 0
		})
	case "-true":
		return always
	case "-false":
		return findNot{always}
	case "-exec", "-ok":
		f.needPrint = false
		var argv []string
		for {
			if len(f.args) == 0 {
				c.die("%s requires an argument", "-exec")
			}
			a := f.args[0]
			f.args = f.args[1:]
			if a == ";" || a == "+" {
				if len(argv) == 0 {
					c.die("%s requires an argument", arg)
				}
				if a == "+" {
					n := 0
					for _, x := range argv {
						n += strings.Count(x, "{}")
					}
					if n != 1 {
						c.die("only one '{}' allowed for -exec +")
					}
					ep := &findExecPlus{argv: argv}
					f.plusExecs = append(f.plusExecs, ep)
					return findTest(func(f *finder, p string, _ vfs.Info, _ int) bool {
						ep.files = append(ep.files, p)
						return true
					})
				}
				break
			}
			argv = append(argv, a)
		}
		return findTest(func(f *finder, p string, _ vfs.Info, _ int) bool {
			return f.runExec(argv, []string{p}, false) == 0
		})
	case "-name", "-iname":
		pat := needArg()
		return findTest(func(_ *finder, p string, _ vfs.Info, _ int) bool {
			base := lastComponent(p)
			if arg == "-iname" {
				return fnmatch(strings.ToLower(pat), strings.ToLower(base))
			}
			return fnmatch(pat, base)
		})
	case "-path", "-ipath", "-wholename", "-iwholename":
		pat := needArg()
		icase := strings.HasPrefix(arg, "-i")
		return findTest(func(_ *finder, p string, _ vfs.Info, _ int) bool {
			if icase {
				return fnmatch(strings.ToLower(pat), strings.ToLower(p))
			}
			return fnmatch(pat, p)
		})
	case "-regex", "-iregex":
		pat := needArg()
		re, err := compileRegex(pat, false, arg == "-iregex")
		if err != nil {
			c.die("bad regex '%s': %s", pat, err)
		}
		return findTest(func(_ *finder, p string, _ vfs.Info, _ int) bool {
			m := re.FindStringIndex(p)
			return m != nil && m[0] == 0 && m[1] == len(p)
		})
	case "-type":
		t := needArg()
		if len(t) != 1 || strings.IndexByte("fdlbcps", t[0]) < 0 {
			c.die("invalid argument '%s' to '%s'", t, "-type")
		}
		return findTest(func(_ *finder, _ string, info vfs.Info, _ int) bool {
			m := info.Mode
			switch t[0] {
			case 'f':
				return m.IsRegular()
			case 'd':
				return m.IsDir()
			case 'l':
				return m&fs.ModeSymlink != 0
			case 'p':
				return m&fs.ModeNamedPipe != 0
			case 's':
				return m&fs.ModeSocket != 0
			case 'c':
				return m&fs.ModeCharDevice != 0
			}
			return m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0
		})
	case "-perm":
		s := needArg()
		kind := byte(0)
		if s != "" && (s[0] == '-' || s[0] == '/' || s[0] == '+') {
			kind, s = s[0], s[1:]
		}
		want, ok := parseMode(s, 0, c.umask())
		if !ok {
			c.die("invalid mode '%s'", s)
		}
		return findTest(func(_ *finder, _ string, info vfs.Info, _ int) bool {
			m := unixMode(info.Mode)
			switch kind {
			case '-':
				return m&want == want
			case '/', '+':
				return want == 0 || m&want != 0
			}
			return m == want
		})
	case "-mtime", "-mmin":
		test := f.numArg(needArg(), arg)
		unit := 24 * time.Hour
		if arg == "-mmin" {
			unit = time.Minute
		}
		return findTest(func(f *finder, _ string, info vfs.Info, _ int) bool {
			age := f.c.p.Now().Sub(info.ModTime)
			return test(int64(age / unit))
		})
	case "-newer":
		ref := needArg()
		rinfo, err := c.fs().Stat(c.abs(ref))
		if err != nil {
			c.perror(err, "can't stat '%s'", ref)
			c.exit(1)
		}
		return findTest(func(_ *finder, _ string, info vfs.Info, _ int) bool {
			return info.ModTime.After(rinfo.ModTime)
		})
	case "-size":
		s := needArg()
		unit := int64(512)
		if s != "" {
			switch s[len(s)-1] {
			case 'c':
				unit, s = 1, s[:len(s)-1]
			case 'w':
				unit, s = 2, s[:len(s)-1]
			case 'b':
				unit, s = 512, s[:len(s)-1]
			case 'k':
				unit, s = 1024, s[:len(s)-1]
			case 'M':
				unit, s = 1<<20, s[:len(s)-1]
			case 'G':
				unit, s = 1<<30, s[:len(s)-1]
			}
		}
		test := f.numArg(s, arg)
		return findTest(func(_ *finder, _ string, info vfs.Info, _ int) bool {
			return test((info.Size + unit - 1) / unit)
		})
	case "-user", "-group":
		name := needArg()
		var id int64
		if n, err := parseID(name); err == nil {
			id = n
		} else if arg == "-user" {
			u, ok := c.userByName(name)
			if !ok {
				c.die("invalid user name '%s'", name)
			}
			id = u.uid
		} else {
			g, ok := c.groupByName(name)
			if !ok {
				c.die("invalid group name '%s'", name)
			}
			id = g.gid
		}
		return findTest(func(_ *finder, _ string, info vfs.Info, _ int) bool {
			if arg == "-user" {
				return info.UID == id
			}
			return info.GID == id
		})
	case "-links":
		test := f.numArg(needArg(), arg)
		return findTest(func(f *finder, p string, info vfs.Info, _ int) bool {
			return test(f.c.nlink(lsEntry{path: p, info: info}))
		})
	case "-inum":
		test := f.numArg(needArg(), arg)
		return findTest(func(f *finder, p string, _ vfs.Info, _ int) bool {
			return test(inode(f.c.abs(p)))
		})
	}
	c.errorf("unrecognized: %s", arg)
	c.showUsage(1)
	return nil
}

// runExec runs -exec's command with {} replaced by the file (or, for +, the files).
func (f *finder) runExec(argv, files []string, plus bool) int {
	var cmdline []string
	for _, a := range argv {
		switch {
		case plus && strings.Contains(a, "{}"):
			cmdline = append(cmdline, files...)
		default:
			cmdline = append(cmdline, strings.ReplaceAll(a, "{}", files[0]))
		}
	}
	child, status := f.c.start(cmdline, nil)
	if child == nil {
		f.status = 1
		return status
	}
	status = f.c.p.Wait(child)
	if plus && status != 0 {
		f.status = 1
	}
	return status
}

// fnmatch is fnmatch(3) without flags: * and ? match any characters, / included;
// [...] is a set ([!...] or [^...] its complement); a backslash quotes.
func fnmatch(pat, s string) bool {
	for len(pat) > 0 {
		switch pat[0] {
		case '*':
			for len(pat) > 0 && pat[0] == '*' {
				pat = pat[1:]
			}
			if pat == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if fnmatch(pat, s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			pat, s = pat[1:], s[1:]
		case '[':
			if s == "" {
				return false
			}
			end := strings.IndexByte(pat[min(2, len(pat)):], ']')
			if end < 0 {
				if s[0] != '[' {
					return false
				}
				pat, s = pat[1:], s[1:]
				continue
			}
			end += min(2, len(pat))
			set := pat[1:end]
			neg := false
			if set != "" && (set[0] == '!' || set[0] == '^') {
				neg, set = true, set[1:]
			}
			if !bracketMatch(set, s[0]) != neg {
				return false
			}
			pat, s = pat[end+1:], s[1:]
		case '\\':
			if len(pat) > 1 {
				pat = pat[1:]
			}
			fallthrough
		default:
			if s == "" || s[0] != pat[0] {
				return false
			}
			pat, s = pat[1:], s[1:]
		}
	}
	return s == ""
}

func bracketMatch(set string, ch byte) bool {
	for i := 0; i < len(set); i++ {
		if set[i] == '[' && i+1 < len(set) && set[i+1] == ':' {
			if end := strings.Index(set[i:], ":]"); end > 0 {
				class := set[i+2 : i+end]
				if f := posixClass(class); f != nil && f(ch) {
					return true
				}
				i += end + 1
				continue
			}
		}
		if i+2 < len(set) && set[i+1] == '-' {
			if ch >= set[i] && ch <= set[i+2] {
				return true
			}
			i += 2
			continue
		}
		if set[i] == ch {
			return true
		}
	}
	return false
}

func posixClass(name string) func(byte) bool {
	switch name {
	case "alpha":
		return func(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
	case "digit":
		return func(b byte) bool { return b >= '0' && b <= '9' }
	case "alnum":
		return func(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' }
	case "upper":
		return func(b byte) bool { return b >= 'A' && b <= 'Z' }
	case "lower":
		return func(b byte) bool { return b >= 'a' && b <= 'z' }
	case "space":
		return func(b byte) bool { return b == ' ' || b >= 9 && b <= 13 }
	case "blank":
		return func(b byte) bool { return b == ' ' || b == '\t' }
	case "punct":
		return func(b byte) bool {
			return b > 32 && b < 127 && !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9')
		}
	case "xdigit":
		return func(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }
	}
	return nil
}

func runXargs(c *cmd) int {
	o, args := c.getopt("+trn:s:e:E:ox0I:i:P:a:d:", []getopt.Long{
		{Name: "no-run-if-empty", Key: 'r'},
	})
	if len(args) == 0 {
		args = []string{"echo"}
	}
	maxArgs := math.MaxInt
	if o.Has('n') {
		maxArgs = c.positive(o.Val('n'))
		if maxArgs < 1 {
			c.die("number 0 is not in 1..2147483647 range")
		}
	}
	// A command line holds at most this many characters (busybox's limit, less what the
	// command itself takes).
	maxChars := 32*1024 - 2048
	if o.Has('s') {
		maxChars = c.positive(o.Val('s'))
	}
	for _, a := range args {
		maxChars -= len(a) + 1
	}
	if maxChars <= 0 {
		c.die("can't fit single argument within argument list size limit")
	}
	eof := o.Val('E')
	if o.Has('e') {
		eof = o.Val('e')
	}
	repl := o.Val('I')
	if o.Has('i') {
		repl = o.Val('i')
		if repl == "" {
			repl = "{}"
		}
	}
	in := c.stdin()
	if f := o.Val('a'); f != "" {
		r, err := c.open(f)
		if err != nil {
			c.perror(err, "can't open '%s'", f)
			c.exit(1)
		}
		in = r
	}
	words := &xargsReader{c: c, r: bufio.NewReader(in), eof: eof}
	switch {
	case repl != "":
		words.sep = '\n'
	case o.Has('0'):
		words.sep = 0
	default:
		words.sep = -1
	}
	status := 0
	run := func(argv []string) bool {
		if o.Has('t') {
			c.out.Flush()
			fmt.Fprintln(c.p.Stderr(), strings.Join(argv, " "))
		}
		child, st, err := c.spawn(argv, nil)
		if err != nil {
			c.perror(err, "%s", argv[0])
			c.exit(st)
		}
		st = c.p.Wait(child)
		switch {
		case st > 128:
			c.errorf("'%s' terminated by signal %d", argv[0], st-128)
			status = 125
			return false
		case st == 255:
			c.errorf("%s: exited with status 255; aborting", argv[0])
			status = 124
			return false
		case st != 0:
			status = 123
		}
		return true
	}
	// The input is read as it comes, and a command run as soon as its arguments are
	// there, so that xargs keeps up with a producer that does not end.
	if repl != "" {
		for {
			item, ok := words.next()
			if !ok {
				return status
			}
			var argv []string
			for _, a := range args {
				argv = append(argv, strings.ReplaceAll(a, repl, item))
			}
			if !run(argv) {
				return status
			}
		}
	}
	ranOnce := false
	for {
		argv := append([]string(nil), args...)
		chars := 0
		for n := 0; n < maxArgs; n++ {
			item, ok := words.peek()
			if !ok || n > 0 && chars+len(item)+1 > maxChars {
				break
			}
			if len(item)+1 > maxChars {
				c.die("argument line too long")
			}
			words.take()
			argv = append(argv, item)
			chars += len(item) + 1
		}
		if len(argv) == len(args) && (ranOnce || o.Has('r')) {
			return status
		}
		ranOnce = true
		if !run(argv) {
			return status
		}
	}
}

// xargsReader reads xargs's arguments from its input as they come: blank-separated
// words with quotes and backslashes (sep -1), or NUL- or newline-separated items.
type xargsReader struct {
	c       *cmd
	r       *bufio.Reader
	sep     int
	eof     string
	pending *string
	done    bool
}

func (x *xargsReader) peek() (string, bool) {
	if x.pending == nil {
		w, ok := x.read()
		if !ok {
			return "", false
		}
		x.pending = &w
	}
	return *x.pending, true
}

func (x *xargsReader) take() { x.pending = nil }

func (x *xargsReader) next() (string, bool) {
	w, ok := x.peek()
	x.take()
	return w, ok
}

func (x *xargsReader) read() (string, bool) {
	if x.done {
		return "", false
	}
	x.c.tick()
	if x.sep >= 0 {
		for {
			item, err := x.r.ReadString(byte(x.sep))
			item = strings.TrimSuffix(item, string(rune(x.sep)))
			if err != nil {
				x.done = true
				return item, item != ""
			}
			if item != "" {
				return item, true
			}
		}
	}
	var cur strings.Builder
	inWord := false
	quote := byte(0)
	for {
		ch, err := x.r.ReadByte()
		if err != nil {
			x.done = true
			if quote != 0 {
				name := "double"
				if quote == '\'' {
					name = "single"
				}
				x.c.die("unmatched %s quote", name)
			}
			if !inWord || x.eof != "" && cur.String() == x.eof {
				return "", false
			}
			return cur.String(), true
		}
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
				continue
			}
			cur.WriteByte(ch)
		case ch == '\\':
			if next, err := x.r.ReadByte(); err == nil {
				cur.WriteByte(next)
			}
			inWord = true
		case ch == '\'' || ch == '"':
			quote = ch
			inWord = true
		case ch == ' ' || ch >= 9 && ch <= 13:
			if inWord {
				if x.eof != "" && cur.String() == x.eof {
					x.done = true
					return "", false
				}
				return cur.String(), true
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
}
