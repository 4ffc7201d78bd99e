package programs

import (
	"bytes"
	"io"
	"math"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// splitSuffixes are split -b's (FEATURE_SPLIT_FANCY).
var splitSuffixes = []suffixMult{{"b", 512}, {"k", 1024}, {"m", 1 << 20}, {"g", 1 << 30}}

// split [-l LINES | -b SIZE] [-a N] [INPUT [PREFIX]]: busybox's coreutils/split.c. INPUT
// (stdin; "-" too) cut into files of LINES lines (1000) or SIZE bytes (b, k, m, g
// suffixes), named PREFIX ("x") and N letters (2) from "aa" on; "suffixes exhausted" ends
// it when the names run out. A file is made only when there is something to write to it,
// and written through the filesystem a piece at a time.
func runSplit(c *cmd) int {
	o, args := c.getopt("l:b:a:", nil)
	if len(args) > 2 {
		c.showUsage(1)
	}
	cnt := int64(1000)
	suffixLen := 2
	for _, a := range o.Seq { // in the order given, as getopt32's "+" converts -a
		if a.Key == 'a' {
			suffixLen = c.xatoiPositive(a.Val)
		}
	}
	// -l and -b share their argument: the last one given is what both read.
	if o.Has('l') {
		cnt = c.xatooff(lastArgOf(o, 'l', 'b'))
	}
	byBytes := o.Has('b')
	if byBytes {
		// Past 2^63-1 busybox's off_t goes negative; here it stays the largest.
		cnt = int64(min(c.xatoull(lastArgOf(o, 'l', 'b'), splitSuffixes), math.MaxInt64))
	}
	prefix := "x"
	in := io.Reader(nil)
	inName := "standard input"
	if len(args) > 0 {
		if len(args) > 1 {
			prefix = args[1]
		}
		r, err := c.open(args[0])
		if err != nil {
			c.perror(err, "can't open '%s'", args[0])
			c.exit(1)
		}
		in, inName = r, args[0]
	} else {
		in = c.stdin()
	}
	if len(prefix)+suffixLen > 255 {
		c.die("suffix too long")
	}
	name := []byte(prefix + strings.Repeat("a", suffixLen))
	exhausted := false
	// next is busybox's next_file: the name's last letter moved on, carrying to the one
	// before it as a counter does, within its suffixLen last letters.
	next := func() {
		for i := 1; ; i++ {
			cur := len(name) - i
			if name[cur] < 'z' {
				name[cur]++
				return
			}
			if i+1 > suffixLen {
				exhausted = true
				return
			}
			name[cur] = 'a'
		}
	}
	var cur string // the file being written
	var pending bytes.Buffer
	flush := func() {
		if pending.Len() > 0 {
			c.appendTo(cur, &pending)
		}
	}
	buf := make([]byte, 8191)
	remaining := int64(0)
	for {
		c.tick()
		n, err := in.Read(buf)
		if n == 0 {
			if err == io.EOF {
				break
			}
			if err != nil {
				flush()
				c.perror(err, "%s", inName)
				c.exit(1)
			}
			continue
		}
		src := buf[:n]
		for len(src) > 0 {
			if remaining == 0 {
				c.tick()
				flush()
				if exhausted {
					c.die("suffixes exhausted")
				}
				cur = string(name)
				err := error(vfs.ENOENT) // open("") fails so
				if cur != "" {
					err = c.writeFile(cur, nil, false)
				}
				if err != nil {
					c.perror(err, "can't open '%s'", cur)
					c.exit(1)
				}
				next()
				remaining = cnt
			}
			var w int
			if byBytes {
				w = int(min(int64(len(src)), remaining))
				remaining -= int64(w)
			} else if i := bytes.IndexByte(src, '\n'); i >= 0 {
				remaining--
				w = i + 1
			} else {
				w = len(src)
			}
			pending.Write(src[:w])
			if pending.Len() >= 64<<10 {
				flush()
			}
			src = src[w:]
		}
	}
	flush()
	return 0
}

// lastArgOf is the argument of whichever of options a and b was given last.
func lastArgOf(o getopt.Result, a, b byte) string {
	v := ""
	for _, x := range o.Seq {
		if x.Key == a || x.Key == b {
			v = x.Val
		}
	}
	return v
}
