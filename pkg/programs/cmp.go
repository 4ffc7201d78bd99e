package programs

import (
	"io"
	"math"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runCmp(c *cmd) int {
	o, args := c.getopt("lsn:", []getopt.Long{
		{Name: "bytes=", Key: 'n'}, {Name: "quiet", Key: 's'}, {Name: "silent", Key: 's'},
		{Name: "verbose", Key: 'l'},
	})
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
			if !o.Has('s') {
				c.perror(err, "can't open '%s'", name)
			}
			c.exit(c.errStatus)
		}
		return data
	}
	a, b := read(name1), read(name2)
	limit := math.MaxInt
	if o.Has('n') {
		limit = c.positive(o.Val('n'))
	}
	line := 1
	status := 0
	n := min(len(a), len(b), limit)
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			status = 1
			if o.Has('s') {
				return 1
			}
			if !o.Has('l') {
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
		if !o.Has('s') {
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
