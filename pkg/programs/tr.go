package programs

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"
)

func runTr(c *cmd) int {
	o, args := c.getopt("+Ccds", nil)
	if len(args) == 0 {
		c.showUsage(1)
	}
	set1 := trExpand(args[0])
	if o.Has('c') || o.Has('C') {
		in := map[byte]bool{}
		for _, b := range set1 {
			in[b] = true
		}
		set1 = nil
		for i := 0; i < 256; i++ {
			if !in[byte(i)] {
				set1 = append(set1, byte(i))
			}
		}
	}
	var vector [256]byte
	for i := range vector {
		vector[i] = byte(i)
	}
	var inSet1, inSet2 [256]bool
	var set2 []byte
	if len(args) > 1 {
		if args[1] == "" {
			c.die("STRING2 cannot be empty")
		}
		set2 = trExpand(args[1])
		last := byte('0')
		for i, b := range set1 {
			if i < len(set2) {
				last = set2[i]
			}
			vector[b] = last
		}
	}
	for _, b := range set1 {
		inSet1[b] = true
	}
	for _, b := range set2 {
		inSet2[b] = true
	}
	del, squeeze := o.Has('d'), o.Has('s')
	last := -1
	buf := make([]byte, 64<<10)
	in := c.stdin()
	for {
		n, err := in.Read(buf)
		out := make([]byte, 0, n)
		for _, ch := range buf[:n] {
			if del && inSet1[ch] {
				continue
			}
			coded := vector[ch]
			if squeeze && last == int(coded) && (inSet1[ch] || inSet2[coded]) {
				continue
			}
			out = append(out, coded)
			last = int(coded)
		}
		c.out.Write(out)
		if err != nil {
			return 0
		}
		c.tick()
	}
}

// trExpand expands tr's set: escapes, ranges (a-z), classes ([:digit:]) and [c*n].
func trExpand(s string) []byte {
	var out []byte
	classes := map[string]func(b byte) bool{
		"alpha": func(b byte) bool { return unicode.IsLetter(rune(b)) && b < 128 },
		"alnum": func(b byte) bool { return b < 128 && (unicode.IsLetter(rune(b)) || unicode.IsDigit(rune(b))) },
		"digit": func(b byte) bool { return b >= '0' && b <= '9' },
		"lower": func(b byte) bool { return b >= 'a' && b <= 'z' },
		"upper": func(b byte) bool { return b >= 'A' && b <= 'Z' },
		"space": func(b byte) bool { return b == ' ' || b >= 9 && b <= 13 },
		"blank": func(b byte) bool { return b == ' ' || b == '\t' },
		"punct": func(b byte) bool { return b > 32 && b < 127 && !unicode.IsLetter(rune(b)) && !unicode.IsDigit(rune(b)) },
		"cntrl": func(b byte) bool { return b < 32 || b == 127 },
		"xdigit": func(b byte) bool {
			return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
		},
	}
	// The class order busybox uses: digits, upper, lower (so [:upper:] maps onto
	// [:lower:] letter for letter).
	classOrder := func(f func(byte) bool) []byte {
		var bs []byte
		for _, r := range [][2]byte{{'0', '9'}, {'A', 'Z'}, {'a', 'z'}} {
			for b := int(r[0]); b <= int(r[1]); b++ {
				if f(byte(b)) {
					bs = append(bs, byte(b))
				}
			}
		}
		for b := 0; b < 128; b++ {
			if f(byte(b)) && !(b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z') {
				bs = append(bs, byte(b))
			}
		}
		return bs
	}
	for i := 0; i < len(s); {
		if s[i] == '[' && i+1 < len(s) && s[i+1] == ':' {
			if end := strings.Index(s[i:], ":]"); end > 0 {
				if f, ok := classes[s[i+2:i+end]]; ok {
					out = append(out, classOrder(f)...)
					i += end + 2
					continue
				}
			}
		}
		if s[i] == '[' && i+3 < len(s) && s[i+2] == '*' {
			if end := strings.IndexByte(s[i:], ']'); end > 0 {
				n, err := strconv.Atoi(s[i+3 : i+end])
				if s[i+3:i+end] == "" {
					n, err = 1, nil
				}
				if err == nil {
					out = append(out, bytes.Repeat([]byte{s[i+1]}, n)...)
					i += end + 1
					continue
				}
			}
		}
		ch := s[i]
		i++
		if ch == '\\' {
			ch, i = escape(s, i)
		}
		if i+1 < len(s) && s[i] == '-' {
			hi := s[i+1]
			j := i + 2
			if hi == '\\' {
				hi, j = escape(s, i+2)
			}
			for b := int(ch); b <= int(hi); b++ {
				out = append(out, byte(b))
			}
			i = j
			continue
		}
		out = append(out, ch)
	}
	return out
}
