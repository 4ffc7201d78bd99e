package programs

import (
	"bufio"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

// paste [-d LIST] [-s] [FILE]...: busybox's coreutils/paste.c. Line i of every file, joined
// by the delimiters of LIST in turn (a tab by default; "\\0" is none), or with -s each
// file's lines joined into one. A file that has ended gives empty columns while another
// has lines. "-" is stdin, each "-" reading the next of its lines.
func runPaste(c *cmd) int {
	o, files := c.getopt("d:s", []getopt.Long{
		{Name: "delimiters=", Key: 'd'}, {Name: "serial", Key: 's'},
	})
	delims := []byte{'\t'}
	if o.Has('d') {
		delims = pasteEscapes(o.Val('d'))
		if len(delims) == 0 {
			delims = []byte{0} // no delimiter
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	// Every file is opened first: one that cannot be is fatal before any output.
	readers := make([]*bufio.Reader, len(files))
	var stdin *bufio.Reader
	for i, name := range files {
		if name == "-" {
			if stdin == nil {
				stdin = bufio.NewReader(c.stdin())
			}
			readers[i] = stdin
			continue
		}
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "%s", name)
			c.exit(1)
		}
		readers[i] = bufio.NewReader(r)
	}
	// line reads the next line of r without its newline; false at the end.
	line := func(r *bufio.Reader) (string, bool) {
		c.tick()
		s, err := r.ReadString('\n')
		if s == "" && err != nil {
			return "", false
		}
		return strings.TrimSuffix(s, "\n"), true
	}
	delim := func(i *int) byte {
		d := delims[*i]
		*i = (*i + 1) % len(delims)
		return d
	}
	if o.Has('s') {
		for _, r := range readers {
			di := 0
			prev, ok := line(r)
			for ok {
				next, more := line(r)
				if !more {
					break
				}
				c.write(prev)
				if d := delim(&di); d != 0 {
					c.out.WriteByte(d)
				}
				prev = next
			}
			if ok {
				c.write(prev + "\n")
			}
		}
		return 0
	}
	// A row is printed while any file has a line: one that has ended adds an empty column.
	cols := make([]string, len(readers))
	for {
		some := false
		for i, r := range readers {
			cols[i] = ""
			if r == nil {
				continue
			}
			s, ok := line(r)
			if !ok {
				readers[i] = nil
				continue
			}
			cols[i], some = s, true
		}
		if !some {
			return 0
		}
		di := 0
		for i, col := range cols {
			c.write(col)
			d := byte('\n')
			if i != len(cols)-1 {
				d = delim(&di)
			}
			if d != 0 {
				c.out.WriteByte(d)
			}
		}
	}
}

// pasteEscapes is a delimiter list with busybox's escape sequences processed
// (strcpy_and_process_escape_sequences): \n, \t, \\, \0 (no delimiter), octal \NNN and
// the other C escapes; an unknown one ("\z") and a trailing backslash stay as written.
func pasteEscapes(s string) []byte {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			out = append(out, s[i])
			continue
		}
		i++
		if s[i] >= '0' && s[i] <= '7' {
			n, j := 0, i
			for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
				n = n*8 + int(s[j]-'0')
			}
			out = append(out, byte(n))
			i = j - 1
			continue
		}
		if e := strings.IndexByte("abfnrtv\\", s[i]); e >= 0 {
			out = append(out, "\a\b\f\n\r\t\v\\"[e])
			continue
		}
		out = append(out, '\\', s[i])
	}
	return out
}
