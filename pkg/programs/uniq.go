package programs

import (
	"math"
	"strconv"
	"strings"
)

func runUniq(c *cmd) int {
	o, args := c.getopt("cduf:s:w:iz", nil)
	skipFields, skipChars, maxChars := 0, 0, math.MaxInt
	if o.Has('f') {
		skipFields = c.positive(o.Val('f'))
	}
	if o.Has('s') {
		skipChars = c.positive(o.Val('s'))
	}
	if o.Has('w') {
		maxChars = c.positive(o.Val('w'))
	}
	if len(args) > 2 {
		c.showUsage(1)
	}
	in := "-"
	if len(args) > 0 {
		in = args[0]
	}
	r, err := c.open(in)
	if err != nil {
		c.perror(err, "can't open '%s'", in)
		c.exit(1)
	}
	eol := "\n"
	if o.Has('z') {
		eol = "\x00"
	}
	keyOf := func(line string) string {
		s := line
		for i := 0; i < skipFields; i++ {
			s = strings.TrimLeft(s, " \t")
			j := strings.IndexAny(s, " \t")
			if j < 0 {
				s = ""
				break
			}
			s = s[j:]
		}
		s = s[min(skipChars, len(s)):]
		if len(s) > maxChars {
			s = s[:maxChars]
		}
		if o.Has('i') {
			s = strings.ToLower(s)
		}
		return s
	}
	var out strings.Builder
	var prev string
	dups := -1
	flush := func() {
		if dups < 0 {
			return
		}
		if o.Has('d') && dups == 0 || o.Has('u') && dups > 0 {
			return
		}
		if o.Has('c') {
			out.WriteString(padLeft(strconv.Itoa(dups+1), 7) + " ")
		}
		out.WriteString(prev + eol)
	}
	c.lines(r, func(s string) bool {
		line := strings.TrimSuffix(s, "\n")
		if dups >= 0 && keyOf(line) == keyOf(prev) {
			dups++
			return true
		}
		flush()
		prev, dups = line, 0
		if out.Len() > 4096 {
			c.write(out.String())
			out.Reset()
		}
		return true
	})
	flush()
	if len(args) == 2 {
		if err := c.writeFile(args[1], []byte(out.String()), false); err != nil {
			c.perror(err, "can't open '%s'", args[1])
			c.exit(1)
		}
		return 0
	}
	c.write(out.String())
	return 0
}
