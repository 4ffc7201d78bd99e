package programs

import (
	"bufio"
	"io"
	"math"
)

// strings [-afo] [-t o|d|x] [-n LEN] [FILE]...: busybox's miscutils/strings.c. The runs
// of at least LEN (4) printable ASCII characters or tabs, one a line; -f puts the file's
// name before each ("{standard input}" for stdin), -o or -t its offset (octal, or in the
// radix given), in 7 columns. -a (the whole file) is what it always does.
func runStrings(c *cmd) int {
	o, files := c.getopt("afon:t:", nil)
	n := 4
	if o.Has('n') {
		n = int(c.xstrtou(o.Val('n'), 32, 1, math.MaxInt32, nil))
	}
	radix := "o"
	if o.Has('t') {
		radix = o.Val('t')
	}
	if radix != "d" && radix != "o" && radix != "x" {
		c.showUsage(1)
	}
	radixFmt := "%7" + radix + " "
	nameFmt, stdinOnly := "%s: ", len(files) == 0
	if stdinOnly {
		nameFmt, files = "{%s}: ", []string{"standard input"}
	}
	status := 0
	var run []byte // the first n-1 characters of a run, until it is long enough
	for _, name := range files {
		var r io.Reader
		if stdinOnly {
			r = c.stdin()
		} else {
			var err error
			if r, err = c.open(name); err != nil {
				c.errorf("%s: %s", name, errText(err)) // the name even when empty
				status = 1
				continue
			}
		}
		br := bufio.NewReaderSize(r, 64<<10)
		offset, count := int64(0), 0
		run = run[:0]
		for {
			b, err := br.ReadByte()
			if err == nil && (b >= 0x20 && b < 0x7f || b == '\t') {
				if count >= n {
					c.out.WriteByte(b)
				} else {
					run = append(run, b)
					if count == n-1 {
						if o.Has('f') {
							c.printf(nameFmt, name)
						}
						if o.Has('o') || o.Has('t') {
							c.printf(radixFmt, offset-int64(n-1))
						}
						c.out.Write(run)
						run = run[:0]
					}
					count++
				}
			} else {
				if count >= n {
					c.out.WriteByte('\n')
				}
				count = 0
				run = run[:0]
			}
			if err != nil {
				break
			}
			if offset++; offset%4096 == 0 {
				c.tick()
			}
		}
	}
	return status
}
