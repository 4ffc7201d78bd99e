package programs

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ddThroughput is how fast the simulated disk copies: dd takes this long per byte on the
// machine's clock, and says so.
const ddThroughput = 1 << 30 // bytes per second

// ddSize parses a size with dd's suffixes (c w b k K kB M MB G GB...).
func (c *cmd) ddSize(s, what string) int64 {
	suffixes := []struct {
		sfx  string
		mult int64
	}{{"kB", 1000}, {"kD", 1000}, {"KB", 1000}, {"KD", 1000}, {"MB", 1000000}, {"MD", 1000000},
		{"GB", 1000000000}, {"GD", 1000000000}, {"c", 1}, {"w", 2}, {"b", 512}, {"k", 1024},
		{"K", 1024}, {"M", 1 << 20}, {"G", 1 << 30}}
	num, mult := s, int64(1)
	for _, x := range suffixes {
		if n, ok := strings.CutSuffix(s, x.sfx); ok {
			num, mult = n, x.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || !isDigits(num) {
		c.die("invalid number '%s'", s)
	}
	return n * mult
}

func runDd(c *cmd) int {
	ibs, obs := int64(512), int64(512)
	count, skip, seek := int64(-1), int64(0), int64(0)
	in, out := "", ""
	notrunc, statusNone, noxfer := false, false, false
	for _, arg := range c.args {
		key, val, ok := strings.Cut(arg, "=")
		if !ok {
			c.showUsage(1)
		}
		switch key {
		case "bs":
			ibs = c.ddSize(val, key)
			obs = ibs
		case "ibs":
			ibs = c.ddSize(val, key)
		case "obs":
			obs = c.ddSize(val, key)
		case "count":
			count = c.ddSize(val, key)
		case "skip":
			skip = c.ddSize(val, key)
		case "seek":
			seek = c.ddSize(val, key)
		case "if":
			in = val
		case "of":
			out = val
		case "conv", "iflag", "oflag":
			for _, w := range strings.Split(val, ",") {
				switch w {
				case "notrunc":
					notrunc = true
				case "sync", "noerror", "fsync", "fdatasync", "swab", "skip_bytes", "fullblock", "append", "direct":
				default:
					c.die("invalid argument '%s' to '%s'", w, key)
				}
			}
		case "status":
			switch val {
			case "none":
				statusNone = true
			case "noxfer":
				noxfer = true
			case "progress":
			default:
				c.die("invalid argument '%s' to '%s'", val, "status")
			}
		default:
			c.showUsage(1)
		}
	}
	if ibs < 1 || obs < 1 {
		c.die("invalid number '%d'", 0)
	}
	var r io.Reader = c.stdin()
	if in != "" {
		f, err := c.open(in)
		if err != nil {
			c.perror(err, "can't open '%s'", in)
			c.exit(1)
		}
		r = f
	}
	if skip > 0 {
		if f, ok := r.(io.Seeker); ok {
			f.Seek(skip*ibs, io.SeekCurrent) // a file's blocks are skipped unread
		} else {
			io.CopyN(io.Discard, r, skip*ibs)
		}
	}
	w, err := c.ddOutput(out, seek*obs, notrunc)
	if err != nil {
		c.perror(err, "can't open '%s'", out)
		c.exit(1)
	}
	// Copy block by block, whole blocks and a last partial one, each written as it is read:
	// the copy is never held whole (4000 MiB of zeros would be 4000 MiB of the daemon).
	var total, inFull, inPart int64
	block := make([]byte, ibs)
	for count < 0 || inFull+inPart < count {
		c.tick()
		n, err := io.ReadFull(r, block)
		if n == int(ibs) {
			inFull++
		} else if n > 0 {
			inPart++
		}
		if werr := w.write(block[:n]); werr != nil {
			c.perror(werr, "error writing '%s'", out)
			c.exit(1)
		}
		total += int64(n)
		if err != nil {
			break
		}
	}
	if err := w.flush(); err != nil {
		c.perror(err, "error writing '%s'", out)
		c.exit(1)
	}
	outFull, outPart := total/obs, int64(0)
	if total%obs != 0 {
		outPart = 1
	}
	elapsed := time.Duration(float64(total) / ddThroughput * float64(time.Second))
	c.sleep(elapsed)
	if statusNone {
		return 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d+%d records in\n%d+%d records out\n", inFull, inPart, outFull, outPart)
	if !noxfer {
		secs := elapsed.Seconds()
		rate := uint64(0)
		if secs > 0 {
			rate = uint64(float64(total) / secs)
		}
		fmt.Fprintf(&b, "%d bytes (%sB) copied, %f seconds, %sB/s\n", total, humanSize(uint64(total), 1, 0), secs, humanSize(rate, 1, 0))
	}
	c.out.Flush()
	io.WriteString(c.p.Stderr(), b.String())
	return 0
}

// ddChunk is the least dd writes to a file at once: smaller blocks (bs=1) are gathered up
// to it, so that a byte is not a filesystem write.
const ddChunk = 64 << 10

// ddSink is where dd's output goes as it is copied: stdout, a device writeFile emulates,
// or a file written at an offset.
type ddSink struct {
	c    *cmd
	dev  string // stdout ("") or a device path; file is "" then
	file string
	at   int64 // where the next byte goes in file
	buf  []byte
}

// ddOutput opens dd's output, as dd opens of=: a file is made if missing and, unless
// notrunc, cut at at (seek=): then the copy goes from at on. A device has no offset: the
// at zero bytes go first, as they always went.
func (c *cmd) ddOutput(out string, at int64, notrunc bool) (*ddSink, error) {
	if out == "" {
		return &ddSink{c: c}, nil
	}
	p := c.abs(out)
	switch p {
	case "/dev/null", "/dev/stdout", "/proc/self/fd/1", "/dev/stderr", "/proc/self/fd/2":
		s := &ddSink{c: c, dev: out}
		for at > 0 {
			n := min(at, int64(len(ddZeros)))
			if err := s.write(ddZeros[:n]); err != nil {
				return nil, err
			}
			at -= n
		}
		return s, nil
	}
	id := c.p.Identity()
	if err := c.fs().WriteFile(p, nil, 0o666&^c.umask(), true, id.UID, id.GID); err != nil {
		return nil, err
	}
	info, err := c.fs().Stat(p)
	if err != nil {
		return nil, err
	}
	if !notrunc || info.Size < at {
		if err := c.fs().Truncate(p, at); err != nil {
			return nil, err
		}
	}
	return &ddSink{c: c, file: p, at: at}, nil
}

var ddZeros [4096]byte

func (s *ddSink) write(b []byte) error {
	switch {
	case s.file == "" && s.dev == "":
		_, err := s.c.out.Write(b)
		return err
	case s.file == "":
		return s.c.writeFile(s.dev, b, true)
	case len(s.buf)+len(b) > ddChunk:
		if err := s.flush(); err != nil {
			return err
		}
	}
	if len(b) >= ddChunk {
		return s.put(b)
	}
	s.buf = append(s.buf, b...)
	return nil
}

// flush writes what small blocks were gathered.
func (s *ddSink) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	err := s.put(s.buf)
	s.buf = s.buf[:0]
	return err
}

func (s *ddSink) put(b []byte) error {
	id := s.c.p.Identity()
	if err := s.c.fs().WriteFileAt(s.file, b, s.at, 0o666&^s.c.umask(), id.UID, id.GID); err != nil {
		return err
	}
	s.at += int64(len(b))
	return nil
}

func runTac(c *cmd) int {
	args := c.args
	if len(args) == 0 {
		args = []string{"-"}
	}
	status := 0
	var lines []string
	for _, name := range args {
		r, ok := c.openOrWarn(name)
		if !ok {
			status = 1
			continue
		}
		c.lines(c.p.Holding(r), func(s string) bool {
			lines = append(lines, s)
			return true
		})
	}
	for i := len(lines) - 1; i >= 0; i-- {
		c.tick()
		c.write(lines[i])
	}
	return status
}

func runUsleep(c *cmd) int {
	if len(c.args) != 1 {
		c.showUsage(1)
	}
	n, err := strconv.ParseUint(c.args[0], 10, 32)
	if err != nil {
		c.die("invalid number '%s'", c.args[0])
	}
	until := c.p.Now().Add(time.Duration(n) * time.Microsecond)
	for d := time.Duration(n) * time.Microsecond; d > 0; d = until.Sub(c.p.Now()) {
		c.sleep(d)
	}
	return 0
}
