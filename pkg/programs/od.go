package programs

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

// odFormat is one output format of od: the bytes a field takes, its kind (o, x, d, u or c)
// and the width of a field after its leading space.
type odFormat struct {
	size  int
	kind  byte
	width int
}

// od's field widths by the bytes a field takes, as busybox's od_bloaty tables them.
var (
	odOctWidth      = map[int]int{1: 3, 2: 6, 4: 11, 8: 22}
	odSignedWidth   = map[int]int{1: 4, 2: 6, 4: 11, 8: 20}
	odUnsignedWidth = map[int]int{1: 3, 2: 5, 4: 10, 8: 20}
)

// odCharEscapes are how -c prints the control characters that have a C escape.
var odCharEscapes = map[byte]string{0: `\0`, 7: `\a`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '\v': `\v`}

// parseOdType decodes a -t TYPE string (several formats may follow one another: "x1c").
func parseOdType(s string) ([]odFormat, bool) {
	var out []odFormat
	for s != "" {
		kind := s[0]
		s = s[1:]
		switch kind {
		case 'c':
			out = append(out, odFormat{size: 1, kind: 'c', width: 3})
			continue
		case 'd', 'o', 'u', 'x':
		default:
			return nil, false
		}
		size := 4
		switch {
		case s != "" && strings.IndexByte("CSIL", s[0]) >= 0:
			size = map[byte]int{'C': 1, 'S': 2, 'I': 4, 'L': 8}[s[0]]
			s = s[1:]
		case s != "" && s[0] >= '0' && s[0] <= '9':
			i := 0
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			n, err := strconv.Atoi(s[:i])
			if err != nil || (n != 1 && n != 2 && n != 4 && n != 8) {
				return nil, false
			}
			size, s = n, s[i:]
		}
		f := odFormat{size: size, kind: kind}
		switch kind {
		case 'd':
			f.width = odSignedWidth[size]
		case 'o':
			f.width = odOctWidth[size]
		case 'u':
			f.width = odUnsignedWidth[size]
		case 'x':
			f.width = 2 * size
		}
		out = append(out, f)
	}
	return out, true
}

// field is one field of f, the little-endian value of b (len f.size), right-aligned in
// f.width.
func (f odFormat) field(b []byte) string {
	if f.kind == 'c' {
		ch := b[0]
		if ch >= 0x20 && ch < 0x7f {
			return "  " + string(ch)
		}
		if e, ok := odCharEscapes[ch]; ok {
			return " " + e
		}
		return fmt.Sprintf("%03o", ch)
	}
	var buf [8]byte
	copy(buf[:], b)
	u := binary.LittleEndian.Uint64(buf[:])
	switch f.kind {
	case 'd':
		shift := 64 - 8*uint(f.size)
		return fmt.Sprintf("%*d", f.width, int64(u<<shift)>>shift)
	case 'o':
		return fmt.Sprintf("%0*o", f.width, u)
	case 'u':
		return fmt.Sprintf("%*d", f.width, u)
	default:
		return fmt.Sprintf("%0*x", f.width, u)
	}
}

// line writes the fields of block (padded to whole fields) in format f, of a line that
// holds perBlock bytes: the spaces of the widest format's line are shared out among the
// fields, so that every format's columns line up (coreutils' pad_width).
func (f odFormat) line(c *cmd, block []byte, perBlock, lineWidth int) {
	fields := perBlock / f.size
	pad := lineWidth - f.width*fields
	remaining := pad
	for k := 0; k*f.size < len(block); k++ {
		i := fields - k
		next := pad * (i - 1) / fields
		c.printf("%*s", remaining-next+f.width, f.field(block[k*f.size:(k+1)*f.size]))
		remaining = next
	}
}

// od [-abcdfhilovxs] [-t TYPE] [-A RADIX] [-N SIZE] [-j SKIP] [-w WIDTH] [FILE]...:
// busybox's od (od_bloaty), for the integer and character formats: the input (the files
// one after the other) in blocks of 16 bytes, each line its offset and the block in
// every format asked for (octal 2-byte words by default), a repeated block as "*", and
// the offset of the end last.
func runOd(c *cmd) int {
	o, files := c.getopt("A:N:t:j:w:abcdfhilovxs", []getopt.Long{
		{Name: "address-radix=", Key: 'A'}, {Name: "read-bytes=", Key: 'N'}, {Name: "format=", Key: 't'},
		{Name: "skip-bytes=", Key: 'j'}, {Name: "width=", Key: 'w'},
		{Name: "output-duplicates", Key: 'v'},
	})
	var formats []odFormat
	add := func(t string) {
		f, ok := parseOdType(t)
		if !ok {
			c.die("invalid type string '%s'", t)
		}
		formats = append(formats, f...)
	}
	for _, opt := range []struct {
		b byte
		t string
	}{{'b', "oC"}, {'c', "c"}, {'d', "u2"}, {'h', "x2"}, {'i', "d2"}, {'l', "d4"}, {'o', "o2"}} {
		if o.Has(opt.b) {
			add(opt.t)
		}
	}
	for _, t := range o.Vals('t') {
		add(t)
	}
	if o.Has('x') {
		add("x2")
	}
	if o.Has('s') {
		add("d2")
	}
	if o.Has('a') || o.Has('f') {
		c.die("invalid type string '%s'", map[bool]string{true: "a", false: "f"}[o.Has('a')])
	}
	if len(formats) == 0 {
		add("o2")
	}
	addrFmt, addrWidth := "%07o", 7
	if o.Has('A') {
		switch o.Val('A') {
		case "d":
			addrFmt = "%07d"
		case "o":
		case "x":
			addrFmt, addrWidth = "%06x", 6
		case "n":
			addrFmt, addrWidth = "", 0
		default:
			c.die("bad output address radix '%s': must be d, o, x or n", o.Val('A'))
		}
	}
	number := func(opt byte) int64 {
		n, err := strconv.ParseInt(o.Val(opt), 0, 64)
		if err != nil || n < 0 {
			c.die("invalid number '%s'", o.Val(opt))
		}
		return n
	}
	perBlock := 16
	if o.Has('w') {
		perBlock = int(number('w'))
	}
	unit := 1 // every format's fields fit a whole number of times in a block of it
	for _, f := range formats {
		unit = max(unit, f.size)
	}
	if perBlock <= 0 || perBlock%unit != 0 {
		perBlock = 16
	}
	lineWidth := 0 // of the widest format's fields, with a space before each
	for _, f := range formats {
		lineWidth = max(lineWidth, (f.width+1)*(perBlock/f.size))
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	var readers []io.Reader
	for _, name := range files {
		r, ok := c.openOrWarn(name)
		if !ok {
			status = 1
			continue
		}
		readers = append(readers, r)
	}
	if len(readers) == 0 {
		return status // nothing could be opened: not even the end's offset
	}
	in := io.MultiReader(readers...)
	var offset int64
	if o.Has('j') {
		skip := number('j')
		n, _ := io.CopyN(io.Discard, in, skip)
		offset = n
		if n < skip {
			c.die("can't skip past end of combined input")
		}
	}
	if o.Has('N') {
		in = io.LimitReader(in, number('N'))
	}
	address := func(off int64) string {
		if addrFmt == "" {
			return ""
		}
		return fmt.Sprintf(addrFmt, off)
	}
	block := make([]byte, perBlock)
	var prev []byte
	repeated := false
	for {
		c.tick()
		n, err := io.ReadFull(in, block)
		if n == 0 {
			if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
				c.perror(err, "read error")
				status = 1
			}
			break
		}
		cur := block[:n]
		if !o.Has('v') && prev != nil && n == perBlock && bytes.Equal(prev, cur) {
			if !repeated {
				c.write("*\n")
				repeated = true
			}
			offset += int64(n)
			continue
		}
		repeated = false
		// A last, partial block is padded with zeros to whole fields.
		padded := cur
		if rem := n % unit; rem != 0 {
			padded = append(append([]byte(nil), cur...), make([]byte, unit-rem)...)
		}
		for i, f := range formats {
			if i == 0 {
				c.write(address(offset))
			} else {
				c.write(strings.Repeat(" ", addrWidth))
			}
			f.line(c, padded, perBlock, lineWidth)
			c.write("\n")
		}
		prev = append(prev[:0], cur...)
		offset += int64(n)
		if n < perBlock {
			break
		}
	}
	if addrFmt != "" {
		c.write(address(offset) + "\n")
	}
	return status
}
