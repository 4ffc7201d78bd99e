package programs

import (
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

// nl [-p] [-b STYLE] [-i N] [-s SEP] [-v N] [-w N] [FILE]...: busybox's coreutils/nl.c
// (print_numbered_lines). Lines numbered from -v (1) by -i (1), the number right-aligned
// in -w columns (6) and followed by -s (a tab); -b a numbers every line, t (the default)
// the non-empty ones, anything else none. An unnumbered line is indented as a numbered
// one. The numbering goes on from one file to the next.
func runNl(c *cmd) int {
	o, files := c.getopt("pw:s:v:i:b:", []getopt.Long{
		{Name: "body-numbering=", Key: 'b'}, {Name: "line-increment=", Key: 'i'},
		{Name: "no-renumber", Key: 'p'}, {Name: "number-separator=", Key: 's'},
		{Name: "starting-line-number=", Key: 'v'}, {Name: "number-width=", Key: 'w'},
	})
	width, start, inc, sep, style := 6, uint32(1), uint32(1), "\t", "t"
	// The numbers are converted in the order given, as getopt32's "+" does.
	for _, a := range o.Seq {
		switch a.Key {
		case 'w':
			width = c.xatoiPositive(a.Val)
		case 'v':
			start = uint32(c.xatoiPositive(a.Val))
		case 'i':
			inc = uint32(c.xatoiPositive(a.Val))
		case 's':
			sep = a.Val
		case 'b':
			style = a.Val
		}
	}
	all := strings.HasPrefix(style, "a")
	nonEmpty := strings.HasPrefix(style, "t")
	// busybox makes the indent of an unnumbered line once (width may be 2^31-1): it is
	// charged, and written a piece at a time.
	c.p.Charge(int64(width + len(sep)))
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	n := start
	for _, name := range files {
		r, err := c.open(name)
		if err != nil {
			c.errorf("%s: %s", name, errText(err)) // the name even when empty
			status = 1
			continue
		}
		c.lines(r, func(line string) bool {
			text := strings.TrimSuffix(line, "\n")
			if i := strings.IndexByte(text, 0); i >= 0 {
				text = text[:i] // a C string
			}
			if all || nonEmpty && text != "" {
				num := strconv.FormatUint(uint64(n), 10)
				c.spaces(width - len(num))
				c.write(num + sep)
				n += inc // unsigned: it wraps
			} else {
				c.spaces(width + len(sep))
			}
			c.write(text + "\n")
			return true
		})
	}
	return status
}

// blanks is what spaces writes from.
var blanks = strings.Repeat(" ", 4096)

// spaces writes n spaces (none when n <= 0), a piece at a time.
func (c *cmd) spaces(n int) {
	for n > 0 {
		k := min(n, len(blanks))
		c.write(blanks[:k])
		n -= k
		if n > 0 {
			c.tick()
		}
	}
}
