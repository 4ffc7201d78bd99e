package programs

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// cutRange is one N, N-, -M or N-M of cut's list, 0-based and inclusive.
type cutRange struct{ from, to int }

func runCut(c *cmd) int {
	o, args := c.getopt("b:c:f:d:O:sDn", nil)
	lists := 0
	list := ""
	mode := byte(0)
	for _, b := range []byte("bcf") {
		if o.Has(b) {
			lists++
			list, mode = o.Val(b), b
		}
	}
	if lists == 0 {
		c.die("expected a list of bytes, characters, or fields")
	}
	if lists > 1 {
		c.showUsage(1)
	}
	if mode != 'f' {
		if o.Has('s') {
			c.die("suppressing non-delimited lines makes sense only when operating on fields")
		}
		if o.Has('d') {
			c.die("a delimiter may be specified only when operating on fields")
		}
	}
	delim := "\t"
	if d := o.Val('d'); d != "" {
		delim = d[:1]
	}
	odelim := delim
	if o.Has('O') {
		odelim = o.Val('O')
	}
	var ranges []cutRange
	for _, tok := range strings.Split(list, ",") {
		if tok == "" {
			continue
		}
		startS, endS, isRange := strings.Cut(tok, "-")
		r := cutRange{}
		if startS != "" {
			n := c.positive(startS)
			if n > 0 {
				n--
			}
			r.from = n
		}
		switch {
		case !isRange:
			r.to = r.from
		case endS == "":
			r.to = math.MaxInt
		default:
			e := c.positive(endS)
			if e-1 < r.from && e < r.from {
				c.die("%d<%d", e, r.from)
			}
			r.to = e - 1
		}
		ranges = append(ranges, r)
	}
	if len(ranges) == 0 {
		c.die("missing list of positions")
	}
	if !o.Has('D') {
		slices.SortStableFunc(ranges, func(a, b cutRange) int { return a.from - b.from })
	}
	selected := func(i int) bool {
		for _, r := range ranges {
			if i >= r.from && i <= r.to {
				return true
			}
		}
		return false
	}
	if len(args) == 0 {
		args = []string{"-"}
	}
	status := 0
	for _, name := range args {
		r, ok := c.openOrWarn(name)
		if !ok {
			status = 1
			continue
		}
		c.lines(r, func(s string) bool {
			line := strings.TrimSuffix(s, "\n")
			var b strings.Builder
			if mode != 'f' {
				for i := 0; i < len(line); i++ {
					if selected(i) {
						b.WriteByte(line[i])
					}
				}
			} else {
				if !strings.Contains(line, delim) {
					if o.Has('s') {
						return true
					}
					c.write(line + "\n")
					return true
				}
				out := 0
				for i, f := range strings.Split(line, delim) {
					if selected(i) {
						if out > 0 {
							b.WriteString(odelim)
						}
						b.WriteString(f)
						out++
					}
				}
			}
			b.WriteByte('\n')
			c.write(b.String())
			return true
		})
	}
	return status
}

// positive is busybox's xatoi_positive: a non-negative int or death.
func (c *cmd) positive(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || !isDigits(s) {
		c.die("invalid number '%s'", s)
	}
	return n
}
