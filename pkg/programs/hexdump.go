package programs

import (
	"fmt"
	"io"
	"strings"
)

// runHexdump is busybox's hexdump: -C prints the canonical hex+ASCII table, without it
// two-byte words, as od -x does; "*" stands for repeated lines unless -v.
func runHexdump(c *cmd) int {
	canonical, all := false, false
	var files []string
	for _, a := range c.args {
		switch a {
		case "-C":
			canonical = true
		case "-v":
			all = true
		default:
			if strings.HasPrefix(a, "-") && a != "-" {
				c.errorf("invalid option -- '%s'", strings.TrimPrefix(a, "-"))
				c.showUsage(1)
			}
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	var data []byte
	status := 0
	for _, f := range files {
		r, ok := c.openOrWarn(f)
		if !ok {
			status = 1
			continue
		}
		b, _ := io.ReadAll(c.p.Holding(r))
		data = append(data, b...)
	}
	var last string
	repeated := false
	for off := 0; off < len(data); off += 16 {
		c.p.Tick()
		line := data[off:min(off+16, len(data))]
		body := hexLine(line, canonical)
		if !all && body == last && len(line) == 16 {
			if !repeated {
				c.write("*\n")
				repeated = true
			}
			continue
		}
		last, repeated = body, false
		if canonical {
			c.printf("%08x  %s\n", off, body)
		} else {
			c.printf("%07x %s\n", off, body)
		}
	}
	if len(data) > 0 || canonical {
		if canonical {
			c.printf("%08x\n", len(data))
		} else {
			c.printf("%07x\n", len(data))
		}
	}
	return status
}

// hexLine is one line's bytes: canonical (hex bytes in two groups of 8, then |ascii|),
// or little-endian 16-bit words.
func hexLine(b []byte, canonical bool) string {
	var s strings.Builder
	if !canonical {
		for i := 0; i < len(b); i += 2 {
			w := uint16(b[i])
			if i+1 < len(b) {
				w |= uint16(b[i+1]) << 8
			}
			if i > 0 {
				s.WriteByte(' ')
			}
			fmt.Fprintf(&s, "%04x", w)
		}
		return s.String()
	}
	for i := 0; i < 16; i++ {
		if i < len(b) {
			fmt.Fprintf(&s, "%02x ", b[i])
		} else {
			s.WriteString("   ")
		}
		if i == 7 {
			s.WriteByte(' ')
		}
	}
	s.WriteString(" |")
	for _, x := range b {
		if x >= 0x20 && x < 0x7f {
			s.WriteByte(x)
		} else {
			s.WriteByte('.')
		}
	}
	s.WriteByte('|')
	return s.String()
}
