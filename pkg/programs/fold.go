package programs

import (
	"bufio"
	"io"
	"slices"
	"strings"
)

// fold [-bs] [-w WIDTH] [FILE]...: busybox's coreutils/fold.c. Lines longer than WIDTH
// columns (80; 1 to 10000) are broken: a tab moves to the next multiple of 8, a
// backspace back one, a carriage return to the start (with -b every byte is a column);
// -s breaks after the last blank that fits, when there is one. "-N" is "-w N" (SUSv2).
func runFold(c *cmd) int {
	c.args = slices.Clone(c.args) // rewritten, not the process's own
	for i, a := range c.args {
		if a == "--" {
			break
		}
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			c.args[i] = "-w" + a[1:]
		}
	}
	o, files := c.getopt("bsw:", nil)
	w := "80"
	if o.Has('w') {
		w = o.Val('w')
	}
	width := int(c.xstrtou(w, 32, 1, 10000, nil))
	bytesMode, spaces := o.Has('b'), o.Has('s')
	if len(files) == 0 {
		files = []string{"-"}
	}
	adjust := func(col int, b byte) int {
		switch {
		case bytesMode:
			return col + 1
		case b == '\t':
			return col + 8 - col%8
		case b == '\b':
			return max(col-1, 0)
		case b == '\r':
			return 0
		}
		return col + 1
	}
	status := 0
	var line []byte
	held := int64(0)
	defer func() { c.p.Charge(-held) }()
	for _, name := range files {
		r, err := c.open(name)
		if err != nil {
			c.errorf("%s: %s", name, errText(err)) // the name even when empty
			status = 1
			continue
		}
		br := bufio.NewReaderSize(r, 64<<10)
		col, n, readErr := 0, 0, false
		line = line[:0]
		for {
			b, err := br.ReadByte()
			if err != nil {
				readErr = err != io.EOF
				break
			}
			if n++; n%4096 == 0 {
				c.tick()
			}
			for {
				if b == '\n' {
					c.out.Write(line)
					c.out.WriteByte('\n')
					line, col = line[:0], 0
					break
				}
				col = adjust(col, b)
				if col <= width || len(line) == 0 {
					if len(line) == cap(line) && len(line) >= 64<<10 {
						// Backspaces and carriage returns keep a line from being
						// broken: it is held, as busybox's buffer grows to hold it.
						c.p.Charge(int64(len(line)))
						held += int64(len(line))
					}
					line = append(line, b)
					break
				}
				// b would make the line too long: the line ends before it (after its last
				// blank, with -s), and b is looked at again on the next.
				if end := strings.LastIndexAny(string(line), " \t"); spaces && end >= 0 {
					c.out.Write(line[:end+1])
					c.out.WriteByte('\n')
					line = append(line[:0], line[end+1:]...)
					col = 0
					for _, x := range line {
						col = adjust(col, x)
					}
					continue
				}
				c.out.Write(line)
				c.out.WriteByte('\n')
				line, col = line[:0], 0
			}
		}
		c.out.Write(line)
		if readErr { // fclose's complaint
			c.errorf("%s: Input/output error", name)
			status = 1
		}
	}
	return status
}
