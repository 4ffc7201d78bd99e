package programs

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

func runWc(c *cmd) int {
	o, args := c.getopt("lwmcL", nil)
	kinds := []byte("lwmcL")
	var want []int
	for i, k := range kinds {
		if o.Has(k) {
			want = append(want, i)
		}
	}
	if len(want) == 0 {
		want = []int{0, 1, 3}
	}
	nameFmt := true
	if len(args) == 0 {
		args = []string{"-"}
		nameFmt = false
	}
	padded := !(len(args) == 1 && len(want) == 1)
	var totals [5]int64
	status := 0
	print := func(counts [5]int64, name string) {
		var b strings.Builder
		for i, k := range want {
			s := strconv.FormatInt(counts[k], 10)
			if padded || i > 0 {
				s = padLeft(s, 9)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(s)
		}
		if nameFmt {
			b.WriteString(" " + name)
		}
		b.WriteByte('\n')
		c.write(b.String())
	}
	for _, name := range args {
		r, ok := c.openOrWarn(name)
		if !ok {
			status = 1
			continue
		}
		counts := wcCount(c, r)
		totals[4] = max(totals[4], counts[4])
		for i := 0; i < 4; i++ {
			totals[i] += counts[i]
		}
		print(counts, name)
	}
	if len(args) > 1 {
		print(totals, "total")
	}
	return status
}

// wcCount counts lines, words, characters, bytes and the longest line as busybox's wc.
func wcCount(c *cmd, r io.Reader) [5]int64 {
	var n [5]int64
	br := bufio.NewReaderSize(r, 64<<10)
	linepos, inWord := int64(0), false
	endLine := func(ch int) {
		n[4] = max(n[4], linepos)
		if ch == '\n' {
			n[0]++
		}
		if ch != '\v' {
			linepos = 0
		}
	}
	for {
		b, err := br.ReadByte()
		if err != nil {
			endLine(-1)
			if inWord {
				n[1]++
			}
			return n
		}
		n[3]++
		if b&0xc0 != 0x80 {
			n[2]++
		}
		if b == '\n' {
			c.tick()
		}
		switch {
		case b >= 0x20 && b < 0x7f:
			linepos++
			if b != ' ' {
				inWord = true
				continue
			}
		case b >= 9 && b <= 13:
			if b == '\t' {
				linepos = (linepos | 7) + 1
			} else {
				endLine(int(b))
			}
		default:
			continue
		}
		if inWord {
			n[1]++
		}
		inWord = false
	}
}
