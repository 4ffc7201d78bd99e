package programs

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// shuf [-n NUM] [-o FILE] [-z] [FILE | -e [ARG...] | -i L-H]: busybox's coreutils/shuf.c.
// The lines of FILE (stdin), the arguments (-e) or the numbers L to H (-i) in a random
// order, at most NUM of them; -o writes them to FILE, -z ends each with a NUL. The order
// comes from the machine's seeded source, so a container's shuf is the same at every run
// of the simulation (busybox seeds from the clock). As busybox, it shuffles by
// Fisher-Yates from the end, and holds every line; a range's numbers are held as busybox's
// array of them would be (charged), though only those swapped are kept.
func runShuf(c *cmd) int {
	o, args := c.getopt("ei:n:o:z", nil)
	if o.Has('e') && o.Has('i') {
		c.showUsage(1)
	}
	var lines []string
	var lo uint64
	numlines := uint64(0)
	switch {
	case o.Has('e'):
		lines = args
		numlines = uint64(len(lines))
	case o.Has('i'):
		if len(args) > 0 {
			c.showUsage(1)
		}
		spec := o.Val('i')
		l, h, ok := strings.Cut(spec, "-")
		if !ok {
			c.die("bad range '%s'", spec)
		}
		lo = c.xatoull(l, nil)
		hi := c.xatoull(h, nil)
		if hi < lo || hi-lo >= math.MaxUint32 {
			c.die("bad range '%s'", spec)
		}
		numlines = hi - lo + 1
		c.p.Charge(int64(numlines) * 8)
	default:
		name := "-"
		if len(args) > 0 {
			if len(args) > 1 {
				c.showUsage(1)
			}
			name = args[0]
		}
		r, err := c.open(name)
		if err != nil {
			c.errorf("%s: %s", name, errText(err)) // the name even when empty
			c.exit(1)
		}
		c.lines(c.p.Holding(r), func(line string) bool {
			line = strings.TrimSuffix(line, "\n")
			if i := strings.IndexByte(line, 0); i >= 0 {
				line = line[:i] // printed as a C string
			}
			lines = append(lines, line)
			return true
		})
		numlines = uint64(len(lines))
	}
	outlines := numlines
	if o.Has('n') {
		outlines = min(c.xatou(o.Val('n')), numlines)
	}
	// Fisher-Yates from the end, stopping after outlines: the last outlines places are the
	// output. perm is the numbers' array, sparse: a place not in it holds its own index.
	perm := map[uint64]uint64{}
	at := func(i uint64) uint64 {
		if v, ok := perm[i]; ok {
			return v
		}
		return i
	}
	rng := c.p.Rand()
	n := numlines
	for k := uint64(0); k < outlines; k++ {
		c.tick()
		r := rng.Uint64N(n)
		n--
		vr, vn := at(r), at(n)
		perm[r], perm[n] = vn, vr
	}
	eol := byte('\n')
	if o.Has('z') {
		eol = 0
	}
	var file bytes.Buffer
	out := func(s []byte) {
		if o.Has('o') {
			file.Write(s)
			if file.Len() >= 64<<10 {
				c.appendTo(o.Val('o'), &file)
			}
			return
		}
		c.out.Write(s)
	}
	if o.Has('o') {
		// Opened after the shuffle, as busybox's xopen: created, truncated.
		if err := c.writeFile(o.Val('o'), nil, false); err != nil {
			c.perror(err, "can't open '%s'", o.Val('o'))
			c.exit(1)
		}
	}
	var buf []byte
	for i := numlines - outlines; i < numlines; i++ {
		c.tick()
		buf = buf[:0]
		if o.Has('i') {
			buf = strconv.AppendUint(buf, lo+at(i), 10)
		} else {
			buf = append(buf, lines[at(i)]...)
		}
		out(append(buf, eol))
	}
	if o.Has('o') {
		c.appendTo(o.Val('o'), &file)
	}
	return 0
}

// appendTo appends what buf holds to the file name, and empties buf; a failure to write
// is fatal, as busybox's xwrite.
func (c *cmd) appendTo(name string, buf *bytes.Buffer) {
	if buf.Len() == 0 {
		return
	}
	if err := c.writeFile(name, buf.Bytes(), true); err != nil {
		c.perror(err, "write error")
		c.exit(1)
	}
	buf.Reset()
}
