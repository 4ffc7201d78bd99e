package programs

import (
	"bufio"
	"bytes"
)

// rev [FILE]...: busybox's util-linux/rev.c. Each line's bytes reversed, its newline kept
// at the end. A file that cannot be opened is reported and skipped (status 1).
func runRev(c *cmd) int {
	_, files := c.getopt("", nil)
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, name := range files {
		r, err := c.open(name)
		if err != nil {
			c.errorf("%s: %s", name, errText(err)) // the name even when empty
			status = 1
			continue
		}
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			c.tick()
			// A line is held whole, as busybox's buffer grows to hold it.
			line, err := br.ReadSlice('\n')
			held := int64(0)
			if err == bufio.ErrBufferFull {
				// A line longer than the reader's buffer: held whole, and charged.
				full := append([]byte(nil), line...)
				for err == bufio.ErrBufferFull {
					c.tick()
					line, err = br.ReadSlice('\n')
					c.p.Charge(int64(len(line)))
					held += int64(len(line))
					full = append(full, line...)
				}
				line = full
			}
			if len(line) > 0 {
				// The line is a C string: a NUL ends it, and what follows (its newline
				// too) is lost.
				if i := bytes.IndexByte(line, 0); i >= 0 {
					line = line[:i]
				}
				n := len(line)
				if n > 0 && line[n-1] == '\n' {
					n--
				}
				for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
					line[i], line[j] = line[j], line[i]
				}
				c.out.Write(line)
			}
			c.p.Charge(-held)
			if err != nil { // the end, or a read error (a directory): fgets's NULL
				break
			}
		}
	}
	return status
}
