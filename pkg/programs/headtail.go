package programs

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// parseCount parses a count with busybox's bkm suffixes (b 512, k 1024, m 1 MiB), dying
// with "invalid number" on a bad one.
func (c *cmd) parseCount(s string) int64 {
	mult := int64(1)
	num := s
	switch {
	case strings.HasSuffix(s, "b"):
		mult, num = 512, s[:len(s)-1]
	case strings.HasSuffix(s, "k"):
		mult, num = 1024, s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		mult, num = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.ParseUint(num, 10, 63)
	if err != nil || !isDigits(num) {
		c.die("invalid number '%s'", s)
	}
	if n > math.MaxInt64/uint64(mult) {
		return math.MaxInt64
	}
	return int64(n) * mult
}

func runHead(c *cmd) int {
	// The legacy "-N" form is taken before options.
	count := int64(10)
	bytesMode, negative := false, false
	eat := func(s string) {
		if strings.HasPrefix(s, "-") {
			negative = true
			s = s[1:]
		}
		count = c.parseCount(s)
	}
	if len(c.args) > 0 && len(c.args[0]) > 1 && c.args[0][0] == '-' && c.args[0][1] >= '0' && c.args[0][1] <= '9' {
		eat(c.args[0][1:])
		c.args = c.args[1:]
	}
	o, args := c.getopt("n:c:qv", nil)
	for _, a := range o.Seq {
		switch a.Key {
		case 'n':
			bytesMode = false
			eat(a.Val)
		case 'c':
			bytesMode = true
			eat(a.Val)
		}
	}
	if len(args) == 0 {
		args = []string{"-"}
	}
	headers := len(args) > 1 && !o.Has('q') || o.Has('v')
	status := 0
	first := true
	for _, name := range args {
		r, err := c.open(name)
		wasFirst := first
		// busybox's header gains its leading blank line after the first operand, even
		// one it could not open.
		first = false
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
			continue
		}
		if headers {
			shown := name
			if name == "-" {
				shown = "standard input"
			}
			if !wasFirst {
				c.write("\n")
			}
			c.printf("==> %s <==\n", shown)
		}
		fr, isFile := r.(*vfs.Reader)
		switch {
		case negative && bytesMode && isFile:
			c.copyRange(fr, 0, max(fr.Size()-count, 0)) // its size known, it is not held
		case negative && bytesMode:
			data, _ := io.ReadAll(c.p.Holding(r))
			c.out.Write(data[:max(int64(len(data))-count, 0)])
		case negative:
			var kept []string
			c.lines(r, func(line string) bool {
				kept = append(kept, line)
				if int64(len(kept)) > count {
					c.write(kept[0])
					kept = kept[1:]
				}
				return true
			})
		case bytesMode:
			data, _ := io.ReadAll(io.LimitReader(r, count))
			c.out.Write(data)
		default:
			n := int64(0)
			if count > 0 {
				c.lines(r, func(line string) bool {
					c.write(line)
					n++
					return n < count
				})
			}
		}
	}
	return status
}

func runTail(c *cmd) int {
	count := int64(10)
	fromTop := false
	eat := func(s string) {
		switch {
		case strings.HasPrefix(s, "-"):
			s = s[1:]
		case strings.HasPrefix(s, "+"):
			s = s[1:]
			fromTop = true
		}
		count = c.parseCount(s)
	}
	if len(c.args) > 0 && len(c.args[0]) > 1 && (c.args[0][0] == '-' || c.args[0][0] == '+') && c.args[0][1] >= '0' && c.args[0][1] <= '9' {
		eat(c.args[0])
		c.args = c.args[1:]
	}
	o, args := c.getopt("fc:n:qs:vF", nil)
	bytesMode := o.Has('c')
	if o.Has('c') {
		eat(o.Val('c'))
	}
	if o.Has('n') {
		eat(o.Val('n'))
	}
	period := time.Second
	if s := o.Val('s'); s != "" {
		period = seconds(c.parseDuration(s))
	}
	follow := o.Has('f') || o.Has('F')
	if len(args) == 0 {
		// stdin is a pipe (or nothing): there is no file to follow.
		follow = false
		args = []string{"-"}
	}
	status := 0
	type followed struct {
		name string
		off  int
	}
	var files []followed
	for _, name := range args {
		if name == "-" {
			files = append(files, followed{name: name})
			continue
		}
		if _, err := c.open(name); err != nil {
			c.perror(err, "can't open '%s'", name)
			status = 1
			if !o.Has('F') {
				continue
			}
		}
		files = append(files, followed{name: name})
	}
	if len(files) == 0 {
		c.die("no files")
	}
	headers := len(files) > 1 && !o.Has('q') || o.Has('v')
	header := func(name string, first bool) {
		if name == "-" {
			name = "standard input"
		}
		if !first {
			c.write("\n")
		}
		c.printf("==> %s <==\n", name)
	}
	for i := range files {
		f := &files[i]
		if headers {
			header(f.name, i == 0)
		}
		r, err := c.open(f.name)
		if err != nil {
			continue
		}
		if fr, ok := r.(*vfs.Reader); ok {
			f.off = int(fr.Size())
			c.tailFile(fr, count, fromTop, bytesMode)
			continue
		}
		data, rerr := io.ReadAll(c.p.Holding(r))
		if rerr != nil && rerr != io.EOF {
			c.perror(rerr, "read error")
			status = 1
		}
		f.off = len(data)
		c.out.Write(tailOf(data, count, fromTop, bytesMode))
	}
	if !follow {
		return status
	}
	last := files[len(files)-1].name
	// Devices never grow: "tail -f /dev/null", which keeps many a container running,
	// waits without waking every second.
	growable := false
	for _, f := range files {
		if f.name != "-" && !isDevice(c.abs(f.name)) {
			growable = true
		}
	}
	if !growable {
		c.out.Flush()
		for {
			c.sleep(math.MaxInt32 * time.Second)
		}
	}
	for {
		c.sleep(period)
		for i := range files {
			f := &files[i]
			if f.name == "-" || isDevice(c.abs(f.name)) {
				continue
			}
			c.tick()
			fr, err := c.fs().Open(c.abs(f.name))
			if err != nil {
				continue
			}
			size := int(fr.Size())
			if size < f.off {
				f.off = 0 // truncated: follow from its start
			}
			if size == f.off {
				continue
			}
			if headers && f.name != last {
				header(f.name, false)
				last = f.name
			}
			c.copyRange(fr, int64(f.off), int64(size))
			f.off = size
		}
		c.out.Flush()
	}
}

// tailOf is the end of data that tail prints: its last count lines or bytes, or from the
// count-th on (+N).
// tailFile prints what tailOf would print of file r, reading no more of it than it must:
// the tail of a 4000 MiB file reads its end, and "tail -n +2" skips lines it keeps none of.
func (c *cmd) tailFile(r *vfs.Reader, count int64, fromTop, bytesMode bool) {
	size := r.Size()
	switch {
	case fromTop && bytesMode:
		c.copyRange(r, min(max(count-1, 0), size), size)
	case fromTop:
		// Lines are skipped as they are read: tail keeps none of them.
		br := bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 64<<10)
		start := int64(0)
		for line := int64(1); line < count && start < size; line++ {
			n, ok := skipLine(br)
			if !ok {
				return // fewer lines than that: nothing, as tailOf
			}
			start += n
		}
		c.copyRange(r, start, size)
	case bytesMode:
		c.copyRange(r, max(size-count, 0), size)
	case count > 0 && size > 0:
		c.copyRange(r, c.linesStart(r, size, count), size)
	}
}

// linesStart is where the last count lines of r begin, as tailOf finds them: it reads back
// from the end a piece at a time, and keeps none of it.
func (c *cmd) linesStart(r io.ReaderAt, size, count int64) int64 {
	end := size
	var last [1]byte
	if r.ReadAt(last[:], size-1); last[0] == '\n' {
		end--
	}
	buf := make([]byte, min(end, 64<<10))
	for end > 0 {
		n := min(end, int64(len(buf)))
		r.ReadAt(buf[:n], end-n)
		for piece := buf[:n]; ; {
			i := bytes.LastIndexByte(piece, '\n')
			if i < 0 {
				break
			}
			if count--; count == 0 {
				return end - n + int64(i) + 1
			}
			piece = piece[:i]
		}
		if end -= n; end > 0 {
			c.tick()
		}
	}
	return 0
}

// skipLine reads br past its next newline and says how many bytes that was; false when
// the input ends first.
func skipLine(br *bufio.Reader) (int64, bool) {
	n := int64(0)
	for {
		b, err := br.ReadSlice('\n')
		n += int64(len(b))
		switch err {
		case nil:
			return n, true
		case bufio.ErrBufferFull:
		default:
			return n, false
		}
	}
}

// copyRange copies bytes [from, to) of r to stdout a piece at a time, ticking between
// pieces as cat does (a range of one piece does not tick).
func (c *cmd) copyRange(r io.ReaderAt, from, to int64) {
	if from >= to {
		return
	}
	buf := make([]byte, min(to-from, 64<<10))
	for from < to {
		n, _ := r.ReadAt(buf[:min(to-from, int64(len(buf)))], from)
		if n == 0 {
			return
		}
		c.out.Write(buf[:n])
		if from += int64(n); from < to {
			c.tick()
		}
	}
}

func tailOf(data []byte, count int64, fromTop, bytesMode bool) []byte {
	if bytesMode {
		if fromTop {
			return data[min(max(count-1, 0), int64(len(data))):]
		}
		return data[max(int64(len(data))-count, 0):]
	}
	if fromTop {
		start, line := 0, int64(1)
		for line < count && start < len(data) {
			i := bytes.IndexByte(data[start:], '\n')
			if i < 0 {
				return nil
			}
			start += i + 1
			line++
		}
		return data[start:]
	}
	if count == 0 {
		return nil
	}
	end := len(data)
	if end > 0 && data[end-1] == '\n' {
		end--
	}
	start := end
	for n := int64(0); n < count; n++ {
		i := bytes.LastIndexByte(data[:start], '\n')
		if i < 0 {
			return data
		}
		start = i
	}
	return data[start+1:]
}
