package programs

import (
	"bufio"
	"io"
)

// base32 [-d] [-w COL] [FILE]: busybox's coreutils/uudecode.c (baseNUM_main) for base32.
// It encodes the input in RFC 4648's alphabet, in lines of COL characters (76; 0: one
// line with no newline), reading a block at a time; -d decodes, skipping what is not of
// the alphabet, as busybox's read_base64 does, and dies "truncated input" at an end in
// the middle of a group of eight.
func runBase32(c *cmd) int {
	decode, col, r := c.baseNUMArgs()
	if decode {
		c.base32Decode(bufio.NewReader(r))
		return 0
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	buf := make([]byte, 480) // a multiple of 5: only the last block pads
	rem := 0                 // what is left of the current line
	for {
		c.tick()
		n, err := io.ReadFull(r, buf)
		if n == 0 {
			if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
				c.perror(err, "read error")
				c.exit(1)
			}
			break
		}
		enc := make([]byte, 0, 8*((n+4)/5))
		for i := 0; i < n; i += 5 {
			var group [5]byte
			k := copy(group[:], buf[i:min(i+5, n)])
			v := uint64(group[0])<<32 | uint64(group[1])<<24 | uint64(group[2])<<16 | uint64(group[3])<<8 | uint64(group[4])
			chars := [...]int{0, 2, 4, 5, 7, 8}[k] // characters that carry data
			for j := 0; j < 8; j++ {
				if j < chars {
					enc = append(enc, alphabet[(v>>(35-5*j))&31])
				} else {
					enc = append(enc, '=')
				}
			}
		}
		if col == 0 {
			c.out.Write(enc)
			continue
		}
		for len(enc) > 0 {
			if rem == 0 {
				rem = col
			}
			k := min(rem, len(enc))
			c.out.Write(enc[:k])
			rem -= k
			enc = enc[k:]
			if rem == 0 {
				c.out.WriteByte('\n')
			}
		}
		if err != nil {
			break
		}
	}
	if rem != 0 {
		c.out.WriteByte('\n')
	}
	return 0
}

// base32Decode decodes r to stdout a line (or 80 characters) at a time, as busybox's
// read_base64 with decode_base32.
func (c *cmd) base32Decode(r *bufio.Reader) {
	var buf []byte
	for {
		c.tick()
		end := false
		for len(buf) < 80 {
			ch, err := r.ReadByte()
			if err != nil {
				if len(buf) == 0 {
					return
				}
				end = true
				break
			}
			if ch <= ' ' {
				break
			}
			buf = append(buf, ch)
		}
		out, used := base32Block(buf)
		c.out.Write(out)
		if end {
			if used == len(buf) {
				return
			}
			c.die("truncated input")
		}
		buf = append(buf[:0], buf[used:]...)
	}
}

// base32Block decodes what it can of s: whole groups of eight, up to and including one
// with padding. It returns the bytes and how much of s it used.
func base32Block(s []byte) ([]byte, int) {
	var out []byte
	var ch uint64
	i := 0
	for k := 0; k < len(s); k++ {
		t := uint64(s[k])
		switch {
		case t >= '2' && t <= '7':
			t = t - '2' + 26
		case t == '=' && i > 1:
			t = 0
		default:
			t = (t | 0x20) - 'a'
			if t > 25 {
				continue
			}
		}
		ch = ch<<5 | t
		i = (i + 1) & 7
		if i != 0 {
			continue
		}
		if s[k] != '=' {
			out = append(out, byte(ch>>32), byte(ch>>24), byte(ch>>16), byte(ch>>8), byte(ch))
			continue
		}
		pad := 0
		for j := k; j >= 0 && s[j] == '='; j-- {
			pad++
		}
		out = append(out, byte(ch>>32), byte(ch>>24), byte(ch>>16), byte(ch>>8), byte(ch))
		out = out[:len(out)-(pad+1)*2/3]
		return out, k + 1
	}
	return out, len(s) - i
}

// baseNUMArgs is base32's and base64's command line ([-d] [-w COL] [FILE], as busybox's
// shared baseNUM_main parses it): whether to decode (-d), the line width (-w, 76) and the
// input.
func (c *cmd) baseNUMArgs() (bool, int, io.Reader) {
	o, args := c.getopt("diw:", nil)
	if len(args) > 1 {
		c.showUsage(1)
	}
	col := 76
	if o.Has('w') {
		col = c.positive(o.Val('w'))
	}
	name := "-"
	if len(args) == 1 {
		name = args[0]
	}
	r, err := c.open(name)
	if err != nil {
		c.perror(err, "can't open '%s'", name)
		c.exit(1)
	}
	return o.Has('d'), col, r
}
