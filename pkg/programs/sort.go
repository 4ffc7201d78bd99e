package programs

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// sortKey is one -k POS1[,POS2] with its own flags.
type sortKey struct {
	range_ [4]int
	flags  string
}

func runSort(c *cmd) int {
	c.errStatus = 2 // as GNU sort: 1 is "not sorted" (-c)
	// -m merges sorted files: sorting them all gives the same lines.
	o, args := c.getopt("nrugMcszbdfit:k:o:T:S:hVm", nil)
	fail := c.die
	sep := byte(0)
	if o.Has('t') {
		t := o.Val('t')
		if len(t) != 1 {
			fail("bad -t parameter")
		}
		sep = t[0]
	}
	globalFlags := ""
	for _, f := range "nrbdfigMhV" {
		if o.Has(byte(f)) {
			globalFlags += string(f)
		}
	}
	var keys []sortKey
	for _, k := range o.Vals('k') {
		key := sortKey{}
		i := 0
		s := k
		for s != "" {
			n := 0
			for n < len(s) && s[n] >= '0' && s[n] <= '9' {
				n++
			}
			key.range_[2*i], _ = strconv.Atoi(s[:n])
			s = s[n:]
			if strings.HasPrefix(s, ".") {
				s = s[1:]
				n = 0
				for n < len(s) && s[n] >= '0' && s[n] <= '9' {
					n++
				}
				key.range_[2*i+1], _ = strconv.Atoi(s[:n])
				s = s[n:]
			}
			for s != "" {
				if s[0] == ',' && i == 0 {
					i++
					s = s[1:]
					break
				}
				if strings.IndexByte("nrbdfigMhV", s[0]) < 0 {
					if strings.IndexByte("nrugMcszbdfiokt", s[0]) < 0 {
						fail("unknown key option")
					}
					fail("unknown sort type")
				}
				f := string(s[0])
				if i == 1 && f == "b" {
					f = "B" // b after the comma strips trailing blanks
				}
				key.flags += f
				s = s[1:]
			}
		}
		if key.range_[0] == 0 {
			fail("bad field specification")
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		keys = []sortKey{{range_: [4]int{1, 0, 0, 0}}}
	}
	if len(args) == 0 {
		args = []string{"-"}
	}
	var lines []string
	for _, name := range args {
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "can't open '%s'", name)
			c.exit(c.errStatus)
		}
		c.lines(c.p.Holding(r), func(s string) bool {
			lines = append(lines, strings.TrimSuffix(s, "\n"))
			return true
		})
	}
	globalB := strings.Contains(globalFlags, "b")
	cmp := func(x, y string, tieBreak bool) int {
		r := 0
		flags := globalFlags
		for _, k := range keys {
			if k.flags != "" {
				flags = k.flags
			} else {
				flags = globalFlags
			}
			if globalB && k.flags == "" {
				flags += "B"
			}
			kx, ky := sortKeyOf(x, k, flags, sep), sortKeyOf(y, k, flags, sep)
			r = compareSortKeys(kx, ky, flags)
			if strings.Contains(flags, "r") {
				r = -r
			}
			if r != 0 {
				return r
			}
		}
		if o.Has('s') || !tieBreak {
			return 0
		}
		r = strings.Compare(x, y)
		if o.Has('r') {
			r = -r
		}
		return r
	}
	if o.Has('c') {
		limit := 0
		if o.Has('u') {
			limit = -1
		}
		for i := 1; i < len(lines); i++ {
			if cmp(lines[i-1], lines[i], !o.Has('u')) > limit {
				c.out.Flush()
				io.WriteString(c.p.Stderr(), "Check line "+strconv.Itoa(i)+"\n")
				return 1
			}
		}
		return 0
	}
	slices.SortStableFunc(lines, func(a, b string) int { return cmp(a, b, !o.Has('u')) })
	if o.Has('u') {
		out := lines[:0]
		for i, l := range lines {
			if i > 0 && cmp(out[len(out)-1], l, false) == 0 {
				continue
			}
			out = append(out, l)
		}
		lines = out
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		if o.Has('z') {
			b.WriteByte(0)
		} else {
			b.WriteByte('\n')
		}
	}
	if f := o.Val('o'); f != "" {
		if err := c.writeFile(f, []byte(b.String()), false); err != nil {
			c.perror(err, "can't open '%s'", f)
			c.exit(c.errStatus)
		}
		return 0
	}
	c.write(b.String())
	return 0
}

// sortKeyOf is busybox's get_key: the part of line a key selects, with -b, -d, -i and -f
// applied.
func sortKeyOf(line string, k sortKey, flags string, sep byte) string {
	isSpace := func(b byte) bool { return b == ' ' || b >= 9 && b <= 13 }
	if k.range_ == [4]int{1, 0, 0, 0} && strings.IndexAny(flags, "bdfiB") < 0 {
		return line
	}
	var start, end int
	for j := 0; j < 2; j++ {
		if k.range_[2*j] == 0 {
			end = len(line)
		} else {
			end = 0
			var ch byte
			for i := 1; i < k.range_[2*j]+j; i++ {
				if sep != 0 {
					for end < len(line) {
						ch = line[end]
						end++
						if ch == sep {
							break
						}
					}
					if end >= len(line) && (end == 0 || line[end-1] != sep) {
						ch = 0
					}
				} else {
					for end < len(line) && isSpace(line[end]) {
						end++
					}
					for end < len(line) && !isSpace(line[end]) {
						end++
					}
				}
			}
			if j == 1 && ch != 0 && sep != 0 {
				end--
			}
		}
		if j == 0 {
			start = end
		}
	}
	if strings.Contains(flags, "b") {
		for start < len(line) && isSpace(line[start]) {
			start++
		}
	}
	if strings.Contains(flags, "B") {
		for end > start && isSpace(line[end-1]) {
			end--
		}
	}
	if k.range_[3] != 0 {
		end = min(k.range_[3], len(line))
	}
	if k.range_[1] != 0 {
		start = min(start+k.range_[1]-1, len(line))
	}
	if end < start {
		end = start
	}
	s := line[start:end]
	if strings.Contains(flags, "d") {
		s = strings.Map(func(r rune) rune {
			if r < 128 && (unicode.IsSpace(r) || unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return r
			}
			return -1
		}, s)
	}
	if strings.Contains(flags, "i") {
		s = strings.Map(func(r rune) rune {
			if r >= 32 && r < 127 {
				return r
			}
			return -1
		}, s)
	}
	if strings.Contains(flags, "f") {
		s = strings.ToUpper(s)
	}
	return s
}

func compareSortKeys(x, y, flags string) int {
	switch {
	case strings.Contains(flags, "n"):
		dx, dy := atof(x), atof(y)
		return cmpFloat(dx, dy)
	case strings.Contains(flags, "g") || strings.Contains(flags, "h"):
		dx, okx := strtod(x)
		dy, oky := strtod(y)
		switch {
		case !okx && !oky:
			return 0
		case !okx:
			return -1
		case !oky:
			return 1
		}
		return cmpFloat(dx, dy)
	case strings.Contains(flags, "M"):
		mx, my := monthOf(x), monthOf(y)
		return mx - my
	case strings.Contains(flags, "V"):
		return versionCompare(x, y)
	}
	return strings.Compare(x, y)
}

// versionCompare orders x and y as strverscmp does (sort -V): runs of digits by their
// numbers, the rest byte by byte ("v1.9" before "v1.10"). Runs with leading zeros are
// compared by value too, not as strverscmp's fractions ("02" sorts before "2" there).
func versionCompare(x, y string) int {
	isDigit := func(b byte) bool { return b >= '0' && b <= '9' }
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		if isDigit(x[i]) && isDigit(y[j]) {
			a, b := i, j
			for i < len(x) && isDigit(x[i]) {
				i++
			}
			for j < len(y) && isDigit(y[j]) {
				j++
			}
			nx, ny := strings.TrimLeft(x[a:i], "0"), strings.TrimLeft(y[b:j], "0")
			if len(nx) != len(ny) {
				return cmpInt(len(nx), len(ny))
			}
			if c := strings.Compare(nx, ny); c != 0 {
				return c
			}
			continue
		}
		if x[i] != y[j] {
			return cmpInt(int(x[i]), int(y[j]))
		}
		i++
		j++
	}
	return cmpInt(len(x)-i, len(y)-j)
}

func cmpInt(a, b int) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

// atof is C's atof: the longest numeric prefix after blanks, 0 when there is none.
func atof(s string) float64 {
	v, _ := strtod(s)
	return v
}

// strtod parses the longest floating-point prefix of s (after leading blanks).
func strtod(s string) (float64, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[end] == '+' || s[end] == '-') {
		end++
	}
	digits := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
		digits++
	}
	if end < len(s) && s[end] == '.' {
		end++
		for end < len(s) && s[end] >= '0' && s[end] <= '9' {
			end++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if end < len(s) && (s[end] == 'e' || s[end] == 'E') {
		e := end + 1
		if e < len(s) && (s[e] == '+' || s[e] == '-') {
			e++
		}
		if e < len(s) && s[e] >= '0' && s[e] <= '9' {
			for e < len(s) && s[e] >= '0' && s[e] <= '9' {
				e++
			}
			end = e
		}
	}
	v, _ := strconv.ParseFloat(s[:end], 64)
	return v, true
}

func monthOf(s string) int {
	s = strings.TrimLeft(s, " \t")
	if len(s) < 3 {
		return -1
	}
	for i, m := range months {
		if strings.EqualFold(s[:3], m[:3]) {
			return i
		}
	}
	return -1
}
