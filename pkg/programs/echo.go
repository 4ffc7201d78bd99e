package programs

import (
	"strings"
)

func runEcho(c *cmd) int {
	args := c.args
	newline, escapes := true, false
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' || strings.Trim(a[1:], "neE") != "" {
			break
		}
		for _, r := range a[1:] {
			switch r {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if !escapes {
			b.WriteString(a)
			continue
		}
		for j := 0; j < len(a); j++ {
			if a[j] != '\\' || j+1 >= len(a) {
				b.WriteByte(a[j])
				continue
			}
			if a[j+1] == 'c' {
				c.write(b.String())
				return 0
			}
			k := j + 1
			if a[k] == '0' && k+1 < len(a) && a[k+1] >= '0' && a[k+1] <= '7' {
				k++
			}
			ch, next := escape(a, k)
			b.WriteByte(ch)
			j = next - 1
		}
	}
	if newline {
		b.WriteByte('\n')
	}
	c.write(b.String())
	return 0
}

// escape decodes the backslash escape whose first character after the backslash is
// s[i], as busybox's bb_process_escape_sequence: \a \b \e \f \n \r \t \v \\, up to three
// octal digits, \x and up to two hex digits; anything else is a backslash, and what
// follows it stays. It returns the byte and the index after the sequence.
func escape(s string, i int) (byte, int) {
	if i >= len(s) {
		return '\\', i
	}
	if s[i] == 'x' {
		n, j := 0, i+1
		for ; j < len(s) && j < i+3; j++ {
			d := hexDigit(s[j])
			if d < 0 {
				break
			}
			n = n*16 + d
		}
		if j == i+1 {
			return '\\', i
		}
		return byte(n), j
	}
	if s[i] >= '0' && s[i] <= '7' {
		n, j := 0, i
		for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
			if n*8+int(s[j]-'0') > 255 {
				break
			}
			n = n*8 + int(s[j]-'0')
		}
		return byte(n), j
	}
	if k := strings.IndexByte("abefnrtv\\", s[i]); k >= 0 {
		return "\a\b\x1b\f\n\r\t\v\\"[k], i + 1
	}
	return '\\', i
}

func hexDigit(b byte) int {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0')
	case b >= 'a' && b <= 'f':
		return int(b-'a') + 10
	case b >= 'A' && b <= 'F':
		return int(b-'A') + 10
	}
	return -1
}
