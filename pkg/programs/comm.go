package programs

import (
	"bufio"
	"strings"
)

// comm [-123] FILE1 FILE2: busybox's coreutils/comm.c. The lines of two sorted files in
// three columns: only in FILE1, only in FILE2 (after a tab), in both (after two); -1, -2,
// -3 leave a column out (and its tab). "-" is stdin. Lines are compared as bytes.
func runComm(c *cmd) int {
	o, files := c.getopt("123", nil)
	if len(files) != 2 {
		c.showUsage(1)
	}
	var readers [2]*bufio.Reader
	for i, name := range files {
		if name == "-" && i == 1 && files[0] == "-" {
			readers[1] = readers[0] // one stdin, whose lines the two take in turn
			continue
		}
		r, err := c.open(name)
		if err != nil {
			c.errorf("%s: %s", name, errText(err)) // the name even when empty
			c.exit(1)
		}
		readers[i] = bufio.NewReaderSize(r, 64<<10)
	}
	next := func(i int) (string, bool) {
		c.tick()
		s, err := readers[i].ReadString('\n')
		if s == "" && err != nil {
			return "", false
		}
		// xmalloc_fgetline: the line without its newline; a NUL ends it as a C string.
		s = strings.TrimSuffix(s, "\n")
		if j := strings.IndexByte(s, 0); j >= 0 {
			s = s[:j]
		}
		return s, true
	}
	write := func(line string, class int) {
		if o.Has(byte('1' + class)) {
			return
		}
		for k := 0; k < class; k++ {
			if !o.Has(byte('1' + k)) {
				c.out.WriteByte('\t')
			}
		}
		c.write(line + "\n")
	}
	var line [2]string
	var ok [2]bool
	order := 0
	for {
		if order <= 0 {
			line[0], ok[0] = next(0)
		}
		if order >= 0 {
			line[1], ok[1] = next(1)
		}
		if !ok[0] || !ok[1] {
			break
		}
		order = strings.Compare(line[0], line[1])
		switch {
		case order == 0:
			write(line[1], 2)
		case order > 0:
			write(line[1], 1)
		default:
			write(line[0], 0)
		}
	}
	// One file has ended: the rest of the other is its own column.
	for i := range 2 {
		if ok[i] {
			for ok[i] {
				write(line[i], i)
				line[i], ok[i] = next(i)
			}
		}
	}
	return 0
}
