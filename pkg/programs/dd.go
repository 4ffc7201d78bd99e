package programs

import (
	"bytes"
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
	// Read the input block by block: whole blocks and a last partial one.
	if skip > 0 {
		io.CopyN(io.Discard, r, skip*ibs)
	}
	var data bytes.Buffer
	var inFull, inPart int64
	block := make([]byte, ibs)
	for count < 0 || inFull+inPart < count {
		c.tick()
		n, err := io.ReadFull(r, block)
		if n == int(ibs) {
			inFull++
		} else if n > 0 {
			inPart++
		}
		data.Write(block[:n])
		if err != nil {
			break
		}
	}
	total := int64(data.Len())
	outFull, outPart := total/obs, int64(0)
	if total%obs != 0 {
		outPart = 1
	}
	if out == "" {
		c.out.Write(data.Bytes())
	} else {
		old := []byte(nil)
		if seek > 0 || notrunc {
			old, _ = c.fs().ReadFile(c.abs(out))
		}
		at := seek * obs
		for int64(len(old)) < at {
			old = append(old, 0)
		}
		content := append(old[:at:at], data.Bytes()...)
		if notrunc && int64(len(old)) > at+total {
			content = append(content, old[at+total:]...)
		}
		if err := c.writeFile(out, content, false); err != nil {
			c.perror(err, "can't open '%s'", out)
			c.exit(1)
		}
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

func runTac(c *cmd) int {
	args := c.args
	if len(args) == 0 {
		args = []string{"-"}
	}
	status := 0
	var lines []string
	for _, name := range args {
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
			continue
		}
		c.lines(r, func(s string) bool {
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
