package programs

import (
	"fmt"
	"io"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

func runCat(c *cmd) int {
	o, args := c.getopt("etvAnbu", nil)
	if len(args) == 0 {
		args = []string{"-"}
	}
	if o.Has('A') {
		o.Imply('e')
		o.Imply('t')
		o.Imply('v')
	}
	switch {
	case o.Has('e') || o.Has('t') || o.Has('v'):
		return c.catVisible(o, args)
	case o.Has('n') || o.Has('b'):
		// busybox numbers lines as nl does: each line printed whole, with a newline.
		status, line := 0, 1
		for _, name := range args {
			r, ok := c.openOrWarn(name)
			if !ok {
				status = 1
				continue
			}
			c.lines(r, func(s string) bool {
				text := strings.TrimSuffix(s, "\n")
				if !o.Has('b') || text != "" {
					c.printf("%6d\t", line)
					line++
				}
				c.write(text + "\n")
				return true
			})
		}
		return status
	}
	status := 0
	buf := make([]byte, 64<<10)
	for _, name := range args {
		c.tick()
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "can't open '%s'", name)
			status = 1
			continue
		}
		// cat copies as it reads, so that a pipe's data flows on at once.
		for {
			n, err := r.Read(buf)
			if n > 0 {
				c.out.Write(buf[:n])
				if name == "-" {
					c.out.Flush()
				}
			}
			if err != nil {
				if err != io.EOF {
					c.perror(err, "read error")
					status = 1
				}
				break
			}
			c.tick()
		}
	}
	return status
}

// catVisible is cat -v, -e, -t and -A: control characters as ^X, high ones as M-X, line
// ends as $ (-e), tabs as ^I (-t); -n and -b number lines ("%6u  ").
func (c *cmd) catVisible(o getopt.Result, args []string) int {
	status := 0
	numbered := o.Has('n') || o.Has('b')
	eolSeen := numbered
	lineno := 0
	buf := make([]byte, 64<<10)
	for _, name := range args {
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "can't open '%s'", name)
			status = 1
			continue
		}
		for {
			c.tick()
			n, err := r.Read(buf)
			var b strings.Builder
			for _, ch := range buf[:n] {
				if eolSeen && !(o.Has('b') && ch == '\n') {
					lineno++
					fmt.Fprintf(&b, "%6d  ", lineno)
				}
				eolSeen = numbered && ch == '\n'
				switch {
				case ch == '\t' && !o.Has('t'):
					b.WriteByte(ch)
				case ch == '\n':
					if o.Has('e') {
						b.WriteByte('$')
					}
					b.WriteByte(ch)
				default:
					if ch >= 128 {
						b.WriteString("M-")
						ch -= 128
					}
					if ch < 32 || ch == 127 {
						b.WriteByte('^')
						ch ^= 0x40
					}
					b.WriteByte(ch)
				}
			}
			c.write(b.String())
			if err != nil {
				if err != io.EOF {
					status = 1
				}
				break
			}
		}
	}
	return status
}
