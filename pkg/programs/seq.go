package programs

import (
	"strconv"
	"strings"
)

func runSeq(c *cmd) int {
	o, args := c.getopt("+ws:", nil)
	sep := "\n"
	if o.Has('s') {
		sep = o.Val('s')
	}
	parse := func(s string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			c.showUsage(1)
		}
		return v
	}
	first, inc := 1.0, 1.0
	var last float64
	switch len(args) {
	case 3:
		inc = parse(args[1])
		first = parse(args[0])
		last = parse(args[2])
	case 2:
		first = parse(args[0])
		last = parse(args[1])
	case 1:
		last = parse(args[0])
	default:
		c.showUsage(1)
	}
	width, frac := 0, 0
	for i, a := range args {
		dot := strings.IndexByte(a, '.')
		if dot < 0 {
			dot = len(a)
		}
		width = max(width, dot)
		if i == len(args)-1 {
			break
		}
		frac = max(frac, len(a)-dot)
	}
	if frac > 0 {
		frac--
		if frac > 0 {
			width += frac + 1
		}
	}
	if !o.Has('w') {
		width = 0
	}
	format := "%0*.*f"
	n := 0
	for v := first; inc >= 0 && v <= last || inc < 0 && v >= last; v = first + float64(n)*inc {
		c.tick()
		if n > 0 {
			c.write(sep)
		}
		c.printf(format, width, frac, v)
		n++
	}
	if n > 0 {
		c.write("\n")
	}
	return 0
}
