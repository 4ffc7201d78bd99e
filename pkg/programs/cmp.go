package programs

import (
	"io"
	"math"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runCmp(c *cmd) int {
	o, args := c.getopt("lsn:", map[string]byte{"bytes=": 'n', "quiet": 's', "silent": 's', "verbose": 'l'})
	if len(args) < 1 || len(args) > 2 {
		c.showUsage(1)
	}
	name1, name2 := args[0], "-"
	if len(args) == 2 {
		name2 = args[1]
	}
	c.errStatus = 2 // a missing file; 1 is "they differ"
	read := func(name string) []byte {
		data, err := c.readAll(name)
		if err != nil && vfs.ErrnoOf(err) != vfs.EISDIR {
			if !o.has('s') {
				c.perror(err, "can't open '%s'", name)
			}
			c.exit(c.errStatus)
		}
		return data
	}
	a, b := read(name1), read(name2)
	limit := math.MaxInt
	if o.has('n') {
		limit = c.positive(o.val('n'))
	}
	line := 1
	status := 0
	n := min(len(a), len(b), limit)
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			status = 1
			if o.has('s') {
				return 1
			}
			if !o.has('l') {
				c.printf("%s %s differ: char %d, line %d\n", name1, name2, i+1, line)
				return 1
			}
			c.printf("%d %3o %3o\n", i+1, a[i], b[i])
		}
		if a[i] == '\n' {
			line++
		}
	}
	if len(a) != len(b) && n < limit {
		if !o.has('s') {
			short := name1
			if len(b) < len(a) {
				short = name2
			}
			c.out.Flush()
			io.WriteString(c.p.Stderr(), "cmp: EOF on "+short+"\n")
		}
		return 1
	}
	return status
}
