package programs

import (
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// diff [-abBdiNqrTstw] [-L LABEL] [-S FILE] [-U LINES] FILE1 FILE2: busybox's
// editors/diff.c, which prints unified diffs only, with no times in its header. Its
// hunks are those of busybox's algorithm (the old BSD diff's: lines hashed, the longest
// common subsequence of their hashes found by Hunt and Szymanski's "stone" method, then
// checked against the lines themselves), which this follows step for step, so that where
// a change could be shown more than one way it is shown busybox's. Exit status 0: same,
// 1: different, 2: a FILE missing.

// diffFlags are the options that change how lines compare and print.
type diffFlags struct {
	a, b, d, i, N, q, r, s, t, T, w, B bool
	context                            int
	labels                             []string
}

// Token bits, as busybox's read_token keeps them next to a character in 9 bits.
const (
	tokEmpty = 1 << 9
	tokEOF   = 1 << 10
	tokEOL   = 1 << 11
	tokSpace = 1 << 12
	tokChar  = 0x1ff
)

// diffFile is a file's bytes and where its lines start: ix[i] is the offset after line i
// (ix[0] is 0), one past the end for a last line without a newline.
type diffFile struct {
	data []byte
	ix   []int
}

// token reads the next token of a line at *pos: a character, as -b, -w and -i see it,
// or tokEmpty at the line's end (tok carries the line's state between calls).
func (f *diffFlags) token(data []byte, pos *int, tok int) int {
	tok |= tokEmpty
	for tok&tokEOL == 0 {
		t := -1
		if *pos < len(data) {
			t = int(data[*pos])
			*pos++
		}
		space := t == -1 || t == ' ' || (t >= '\t' && t <= '\r')
		if t == -1 {
			tok |= tokEOF | tokEOL
		}
		if t == '\n' {
			tok |= tokEOL
		}
		if f.i && t >= 'A' && t <= 'Z' {
			t += 'a' - 'A'
		}
		if f.w && space {
			continue
		}
		t &= tokChar
		if f.b {
			if tok&tokSpace != 0 {
				if space {
					continue
				}
				tok &^= tokSpace
			} else if space {
				t = tokSpace + ' '
			}
		}
		tok &^= tokEmpty | tokChar
		tok |= t
		break
	}
	return tok
}

// lines hashes data's lines as busybox's create_J does, and finds where they start.
func (f *diffFlags) lines(data []byte) (hashes []int, ix []int) {
	hashes = []int{0}
	ix = []int{0}
	pos := 0
	for {
		var hash uint32
		tok := 0
		for {
			tok = f.token(data, &pos, tok)
			if tok&tokEmpty == 0 {
				hash = hash*127 + uint32(tok&tokChar)
				continue
			}
			break
		}
		hashes = append(hashes, int(hash&0x7fffffff))
		off := pos
		if tok&tokEOF != 0 {
			ix = append(ix, off+1)
			break
		}
		ix = append(ix, off)
	}
	// The end of the file counts as a token: a "line" of it alone is none.
	if n := len(ix) - 1; ix[n]-ix[n-1] == 1 {
		hashes, ix = hashes[:n], ix[:n]
	}
	return hashes, ix
}

type diffCand struct{ x, y, pred int }

// stone finds the longest common subsequence of the classes of a's lines in b (member
// lists b's lines by class), as busybox's stone() does, and records it in J.
func (f *diffFlags) stone(a []int, n int, b []int, J []int, pref int) {
	bound := 1<<31 - 1
	if !f.d {
		bound = max(256, isqrt(n))
	}
	clist := []diffCand{{}}
	klist := make([]int, n+2)
	k := 0
	search := func(y int) int {
		if clist[klist[k]].y < y {
			return k + 1
		}
		i, j := 0, k+1
		for {
			l := (i + j) >> 1
			if l <= i {
				return l + 1
			}
			t := clist[klist[l]].y
			switch {
			case t > y:
				j = l
			case t < y:
				i = l
			default:
				return l
			}
		}
	}
	for x := 1; x <= n; x++ {
		j := a[x]
		if j == 0 {
			continue
		}
		cand := diffCand{x: x, y: -b[j], pred: klist[0]}
		oldl, tries := 0, 0
		for {
			if cand.y > clist[cand.pred].y {
				l := search(cand.y)
				if l != oldl+1 {
					cand.pred = klist[l-1]
				}
				if !(l <= k && clist[klist[l]].y <= cand.y) {
					clist = append(clist, cand)
					tc := klist[l]
					klist[l] = len(clist) - 1
					if l <= k {
						cand.pred = tc
						oldl = l
						tries++
					} else {
						k++
						break
					}
				}
			}
			j++
			cand.y = b[j]
			if cand.y <= 0 || tries >= bound {
				break
			}
		}
	}
	for q := clist[klist[k]]; q.y != 0; q = clist[q.pred] {
		J[q.x+pref] = q.y + pref
	}
}

func isqrt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}

// match is busybox's create_J: J[i] is the line of the second file that line i of the
// first matches, 0 for none.
func (f *diffFlags) match(files [2]*diffFile) []int {
	var hashes [2][]int
	var nlen [2]int
	for i := range files {
		hashes[i], files[i].ix = f.lines(files[i].data)
		nlen[i] = len(files[i].ix) - 1
	}
	pref, suff := 0, 0
	for pref < nlen[0] && pref < nlen[1] && hashes[0][pref+1] == hashes[1][pref+1] {
		pref++
	}
	for suff < nlen[0]-pref && suff < nlen[1]-pref && hashes[0][nlen[0]-suff] == hashes[1][nlen[1]-suff] {
		suff++
	}
	type line struct{ serial, value int }
	var sfile [2][]line
	var slen [2]int
	for j := range files {
		slen[j] = nlen[j] - pref - suff
		sfile[j] = make([]line, slen[j]+3)
		sfile[j][slen[j]+2].value = -1 // past the end: equal to nothing
		for i := 0; i <= slen[j]; i++ {
			sfile[j][i] = line{serial: i, value: hashes[j][pref+i]}
		}
		s := sfile[j][1 : slen[j]+1]
		sort.Slice(s, func(x, y int) bool {
			if s[x].value != s[y].value {
				return s[x].value < s[y].value
			}
			return s[x].serial < s[y].serial
		})
	}
	// equiv: each line of the first file gets the first line of its class in the
	// second's sorted list; member lists the second's lines by class.
	a, b := sfile[0], sfile[1]
	n, m := slen[0], slen[1]
	i, j := 1, 1
	for i <= n && j <= m {
		switch {
		case a[i].value < b[j].value:
			a[i].value = 0
			i++
		case a[i].value == b[j].value:
			a[i].value = j
			i++
		default:
			j++
		}
	}
	for ; i <= n; i++ {
		a[i].value = 0
	}
	b[m+1].value = 0
	member := make([]int, m+3)
	j = 0
	for j++; j <= m; j++ {
		member[j] = -b[j].serial
		for b[j+1].value == b[j].value {
			j++
			member[j] = b[j].serial
		}
	}
	member[j] = -1
	class := make([]int, n+2)
	for i := 1; i <= n; i++ {
		class[a[i].serial] = a[i].value
	}
	J := make([]int, nlen[0]+2)
	delta := nlen[1] - nlen[0]
	for i := 0; i <= nlen[0]; i++ {
		switch {
		case i <= pref:
			J[i] = i
		case i > nlen[0]-suff:
			J[i] = i + delta
		}
	}
	f.stone(class, n, member, J, pref)
	J[nlen[0]+1] = nlen[1] + 1
	// Lines whose hashes matched but whose text does not lose their match.
	for i := 1; i <= nlen[0]; i++ {
		if J[i] == 0 {
			continue
		}
		for j := J[i]; i <= nlen[0] && J[i] == j; i, j = i+1, j+1 {
			p0, p1 := files[0].ix[i-1], files[1].ix[j-1]
			tok0, tok1 := 0, 0
			for {
				tok0 = f.token(files[0].data, &p0, tok0)
				tok1 = f.token(files[1].data, &p1, tok1)
				if (tok0^tok1)&tokEmpty != 0 || tok0&tokEmpty == 0 && tok0&tokChar != tok1&tokChar {
					J[i] = 0
				}
				if tok0&tok1&tokEmpty != 0 {
					break
				}
			}
		}
	}
	return J
}

// fetch prints lines a to b of f, each after ch.
func (c *cmd) diffFetch(fl *diffFlags, f *diffFile, a, b int, ch byte) {
	for i := a; i <= b; i++ {
		c.out.WriteByte(ch)
		if fl.T {
			c.out.WriteByte('\t')
		}
		col := 0
		for p := f.ix[i-1]; p < f.ix[i]; p++ {
			if p >= len(f.data) {
				c.write("\n\\ No newline at end of file\n")
				return
			}
			if f.data[p] == '\t' && fl.t {
				for {
					c.out.WriteByte(' ')
					col++
					if col&7 == 0 {
						break
					}
				}
				continue
			}
			c.out.WriteByte(f.data[p])
			col++
		}
	}
}

// diffText prints the unified diff of two files; false if it found no change.
func (c *cmd) diffText(fl *diffFlags, files [2]*diffFile, names [2]string) bool {
	J := fl.match(files)
	nlen := [2]int{len(files[0].ix) - 1, len(files[1].ix) - 1}
	type vec [2]struct{ a, b int }
	var vecs []vec
	anychange := false
	i := 1
	for {
		nonempty := false
		for {
			c.tick()
			var v vec
			for v[0].a = i; v[0].a <= nlen[0] && J[v[0].a] == J[v[0].a-1]+1; v[0].a++ {
			}
			v[1].a = J[v[0].a-1] + 1
			for v[0].b = v[0].a - 1; v[0].b < nlen[0] && J[v[0].b+1] == 0; v[0].b++ {
			}
			v[1].b = J[v[0].b+1] - 1
			if v[0].a <= v[0].b || v[1].a <= v[1].b {
				ct := 2*fl.context + 1
				if len(vecs) > 0 {
					last := vecs[len(vecs)-1]
					if v[0].a > last[0].b+ct && v[1].a > last[1].b+ct {
						break
					}
				}
				for j := 0; j < 2; j++ {
					for k := v[j].a; k <= v[j].b; k++ {
						if files[j].ix[k]-files[j].ix[k-1] != 1 {
							nonempty = true
						}
					}
				}
				vecs = append(vecs, v)
			}
			i = v[0].b + 1
			if i > nlen[0] {
				break
			}
			J[v[0].b] = v[1].b
		}
		if len(vecs) > 0 && !(fl.B && !nonempty) {
			if !fl.q {
				if !anychange {
					for k, sign := range []string{"--- ", "+++ "} {
						name := names[k]
						if k < len(fl.labels) {
							name = fl.labels[k]
						}
						c.write(sign + name + "\n")
					}
				}
				var span vec
				c.write("@@")
				for j := 0; j < 2; j++ {
					a := max(1, vecs[0][j].a-fl.context)
					b := min(nlen[j], vecs[len(vecs)-1][j].b+fl.context)
					span[j].a, span[j].b = a, b
					sign := "-"
					if j == 1 {
						sign = "+"
					}
					c.write(" " + sign + itoa(int64(min(a, b))))
					if a == b {
						continue
					}
					cnt := 0
					if a < b {
						cnt = b - a + 1
					}
					c.write("," + itoa(int64(cnt)))
				}
				c.write(" @@\n")
				lowa := span[0].a
				for k := 0; ; k++ {
					if k == len(vecs) {
						c.diffFetch(fl, files[0], lowa, span[0].b, ' ')
						break
					}
					c.diffFetch(fl, files[0], lowa, vecs[k][0].a-1, ' ')
					c.diffFetch(fl, files[0], vecs[k][0].a, vecs[k][0].b, '-')
					c.diffFetch(fl, files[1], vecs[k][1].a, vecs[k][1].b, '+')
					lowa = vecs[k][0].b + 1
				}
			}
			anychange = true
		}
		vecs = vecs[:0]
		if i > nlen[0] {
			break
		}
	}
	return anychange
}

const (
	diffSame = iota
	diffDiffer
	diffBinary
)

func runDiff(c *cmd) int {
	o, args := c.getopt("abdiL:NqrsS:tTU:wupBE", []getopt.Long{
		{Name: "ignore-case", Key: 'i'}, {Name: "ignore-tab-expansion", Key: 'E'},
		{Name: "ignore-space-change", Key: 'b'}, {Name: "ignore-all-space", Key: 'w'},
		{Name: "ignore-blank-lines", Key: 'B'}, {Name: "text", Key: 'a'}, {Name: "unified=", Key: 'U'},
		{Name: "label=", Key: 'L'}, {Name: "show-c-function", Key: 'p'}, {Name: "brief", Key: 'q'},
		{Name: "expand-tabs", Key: 't'}, {Name: "initial-tab", Key: 'T'}, {Name: "recursive", Key: 'r'},
		{Name: "new-file", Key: 'N'}, {Name: "report-identical-files", Key: 's'},
		{Name: "starting-file=", Key: 'S'}, {Name: "minimal", Key: 'd'},
	})
	if len(args) != 2 {
		c.showUsage(1)
	}
	fl := &diffFlags{a: o.Has('a'), b: o.Has('b'), d: o.Has('d'), i: o.Has('i'), N: o.Has('N'), q: o.Has('q'),
		r: o.Has('r'), s: o.Has('s'), t: o.Has('t'), T: o.Has('T'), w: o.Has('w'), B: o.Has('B'), context: 3}
	if o.Has('U') {
		fl.context = int(c.positive(o.Val('U')))
	}
	if l := o.Vals('L'); len(l) > 0 {
		// The first names the first file, the last the second.
		fl.labels = []string{l[0]}
		if len(l) > 1 {
			fl.labels = append(fl.labels, l[len(l)-1])
		}
	}
	file := [2]string{args[0], args[1]}
	var st [2]vfs.Info
	stdin := 0
	status := 0
	for i, name := range file {
		if name == "-" {
			stdin++
			continue
		}
		info, err := c.fs().Stat(c.abs(name))
		if err != nil {
			if fl.N {
				continue
			}
			c.perror(err, "can't stat '%s'", name)
			c.exit(2)
		}
		st[i] = info
	}
	if stdin > 0 && (st[0].Mode.IsDir() || st[1].Mode.IsDir()) {
		c.die("can't compare stdin to a directory")
	}
	if stdin == 0 && c.sameFile(file[0], file[1]) {
		return 0 // the same file: busybox looks no further, nor prints -s's line
	}
	if st[0].Mode.IsDir() && st[1].Mode.IsDir() {
		c.diffDir(fl, file, o.Val('S'), &status)
		return status
	}
	if st[0].Mode.IsDir() || st[1].Mode.IsDir() {
		dir := 0
		if st[1].Mode.IsDir() {
			dir = 1
		}
		other := file[1-dir]
		if k := strings.LastIndexByte(other, '/'); k >= 0 {
			other = other[k+1:]
		}
		file[dir] = joinPath(file[dir], other)
		if _, err := c.fs().Stat(c.abs(file[dir])); err != nil {
			c.perror(err, "can't stat '%s'", file[dir])
			c.exit(1)
		}
	}
	s := diffSame
	if stdin < 2 {
		s = c.diffReg(fl, file, file, &status)
	}
	c.diffPrintStatus(fl, s, file)
	return status
}

// diffReg compares two files (paths are what they are read from, names what is printed).
func (c *cmd) diffReg(fl *diffFlags, paths, names [2]string, status *int) int {
	var files [2]*diffFile
	for i, p := range paths {
		var data []byte
		var err error
		if p == "-" {
			data, err = io.ReadAll(c.p.Holding(c.stdin()))
		} else {
			var r io.Reader
			r, err = c.open(p)
			if err != nil && fl.N {
				r, err = strings.NewReader(""), nil
			}
			if err != nil {
				c.perror(err, "can't open '%s'", p)
				return diffSame
			}
			data, err = io.ReadAll(c.p.Holding(r))
		}
		if err != nil {
			data = nil // busybox's fread stops at an error, as at the end
		}
		files[i] = &diffFile{data: data}
	}
	d0, d1 := files[0].data, files[1].data
	n := min(len(d0), len(d1))
	differ := len(d0) != len(d1) || string(d0) != string(d1)
	binary := slices.Contains(d0[:n], 0) || slices.Contains(d1[:n], 0)
	s := diffSame
	if differ {
		switch {
		case binary && !fl.a:
			s = diffBinary
		case c.diffText(fl, files, names):
			s = diffDiffer
		}
	}
	if s != diffSame {
		*status |= 1
	}
	return s
}

func (c *cmd) diffPrintStatus(fl *diffFlags, s int, names [2]string) {
	switch {
	case s == diffBinary || s == diffDiffer && fl.q:
		c.printf("Files %s and %s differ\n", names[0], names[1])
	case s == diffSame && fl.s:
		c.printf("Files %s and %s are identical\n", names[0], names[1])
	}
}

// diffList is what busybox's diffdir lists of a directory: its files and, without -r,
// its subdirectories, as paths below it; with -r (and no -N) a subdirectory the other
// side lacks is left out, the status made 1.
func (c *cmd) diffList(fl *diffFlags, root, other string, status *int) []string {
	var out []string
	var walk func(rel string)
	walk = func(rel string) {
		c.tick()
		dir := root
		if rel != "" {
			dir = joinPath(root, rel)
		}
		names, err := c.fs().ReadDirNames(c.abs(dir))
		if err != nil {
			c.perror(err, "%s", dir)
			return
		}
		for _, name := range names {
			sub := name
			if rel != "" {
				sub = rel + "/" + name
			}
			info, err := c.fs().Stat(c.abs(joinPath(root, sub)))
			if err != nil || !info.Mode.IsDir() {
				out = append(out, sub)
				continue
			}
			if !fl.r {
				out = append(out, sub)
				continue
			}
			if !fl.N {
				oi, err := c.fs().Stat(c.abs(joinPath(other, sub)))
				if err != nil || !oi.Mode.IsDir() {
					*status |= 1
					continue
				}
			}
			walk(sub)
		}
	}
	walk("")
	sort.Strings(out)
	return out
}

func (c *cmd) diffDir(fl *diffFlags, p [2]string, start string, status *int) {
	var list [2][]string
	for i := range p {
		list[i] = c.diffList(fl, p[i], p[1-i], status)
		if start != "" {
			k := 0
			for k < len(list[i]) && list[i][k] < start {
				k++
			}
			list[i] = list[i][k:]
		}
	}
	for len(list[0]) > 0 || len(list[1]) > 0 {
		c.tick()
		var dp [2]string
		pos := 0
		switch {
		case len(list[0]) == 0:
			dp[1], pos = list[1][0], 1
		case len(list[1]) == 0:
			dp[0], pos = list[0][0], -1
		default:
			dp[0], dp[1] = list[0][0], list[1][0]
			pos = strings.Compare(dp[0], dp[1])
		}
		k := 0
		if pos > 0 {
			k = 1
		}
		if pos != 0 && !fl.N {
			c.printf("Only in %s: %s\n", p[k], dp[k])
			*status |= 1
		} else {
			var full, path [2]string
			var st [2]vfs.Info
			for i := 0; i < 2; i++ {
				if pos == 0 || i == k {
					full[i] = joinPath(p[i], dp[i])
					path[i] = full[i]
					st[i], _ = c.fs().Stat(c.abs(full[i]))
				} else {
					full[i] = joinPath(p[i], dp[1-i])
					path[i] = "/dev/null"
				}
			}
			if pos != 0 {
				st[1-k] = st[k] // busybox stats the file that is there for both
			}
			switch {
			case st[0].Mode.IsDir() && st[1].Mode.IsDir():
				c.printf("Common subdirectories: %s and %s\n", full[0], full[1])
			case !st[0].Mode.IsRegular() && !st[0].Mode.IsDir():
				c.printf("File %s is not a regular file or directory and was skipped\n", full[0])
			case !st[1].Mode.IsRegular() && !st[1].Mode.IsDir():
				c.printf("File %s is not a regular file or directory and was skipped\n", full[1])
			case st[0].Mode.IsDir() != st[1].Mode.IsDir():
				if st[0].Mode.IsDir() {
					c.printf("File %s is a directory while file %s is a regular file\n", full[0], full[1])
				} else {
					c.printf("File %s is a regular file while file %s is a directory\n", full[0], full[1])
				}
			default:
				c.diffPrintStatus(fl, c.diffReg(fl, path, path, status), full)
			}
		}
		list[k] = list[k][1:]
		if pos == 0 {
			list[1-k] = list[1-k][1:]
		}
	}
}
