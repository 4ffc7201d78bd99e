package vfs

import (
	"bytes"
	"hash/crc64"
	"slices"
)

// A file's content costs the daemon what it takes to say, not its size: a container's
// "dd if=/dev/zero of=/tmp/big bs=1M count=4000" makes a 4000 MiB file a real node keeps on
// disk, and the simulator keeps it in memory. So content is a list of extents, each a
// literal, a run of one byte or a block repeated, and what is appended is looked at a page
// at a time: a page of one byte starts or extends a run, a page like the bytes before it a
// repeat, anything else is literal.
//
// Content is shared without copying. Reading a snapshot (a Reader, ReadFile) needs no lock:
// the bytes an extent covers are never written again once it holds them (an overwrite or a
// truncation makes new extents and re-slices old ones), appends go past the end every
// snapshot stops at, and a list a snapshot holds is copied before it is changed (shared).
//
// Literal bytes are what cost: past MaxLiteralPerFile of them a file's further literal
// bytes are not kept but generated (see generated.go): the file keeps its size, and reads
// the same pseudo-random bytes each time, not the ones written.

const (
	// page is the unit appended bytes are judged in.
	page = 4096
	// minCompact is the least a unit must be to start a run or a repeat: below it an extent
	// would cost about what it saves, and a file written a line at a time stays literal.
	minCompact = 256
	// maxLiteral is the most a literal extent grows to by appends: a big literal file is a
	// list of these, not one slice copied again each time it doubles.
	maxLiteral = 64 << 10
)

// MaxLiteralPerFile is the most literal bytes (those no run or repeat holds) a file keeps.
// The daemon holds every container's files in memory, and a container's
// "head -c 2000000000 /dev/urandom > /tmp/r" is as much incompressible data as it likes (a
// node's disk is far bigger than the daemon's memory): past this, what a file is written
// that would be literal becomes a generated extent, its length and a checksum, which reads
// back as deterministic pseudo-random bytes (generated.go). Runs and repeats stay exact at
// any size: they cost nothing. 64 MiB keeps any config, log or binary a test writes exact.
const MaxLiteralPerFile = 64 << 20

// content is a file's bytes. Most files are small and written whole: they are lit alone,
// with no list (the same cost as a plain byte slice). Otherwise x holds the extents and lit
// is nil.
type content struct {
	lit []byte
	x   *extents
}

// extents is a content's list of extents, in order and without gaps.
type extents struct {
	list []extent
	size int64 // the file's size: the end of the last extent
	// lit is the literal bytes the list holds (the n of its literal extents), at most
	// MaxLiteralPerFile: appendLiteral makes the rest generated.
	lit int64
	// shared is set when a snapshot or a copy holds list: the next change copies it first.
	shared bool
	// genTail is the last bytes (up to a page) that the last extent, generated, replaced,
	// while genEnd is size: what an appended page is compared with to make a repeat, as a
	// literal's bytes are. It is x's own: neither a snapshot nor a copy has it.
	genTail []byte
	genEnd  int64
}

// extent is n bytes of a file from off: data itself when it is n long (a literal), else
// data repeated over n bytes, the last repetition maybe partial (one byte: a run). With no
// data it is generated (generated.go): the bytes from base on of the stream of seed, in
// place of bytes whose CRC-64 was sum. Invariant: 1 <= len(data) <= n or data is nil, and
// the bytes of data are never written.
type extent struct {
	off  int64
	n    int64
	data []byte
	seed uint64 // generated: the stream read, fixed when the extent was made
	base int64  // generated: where in the stream the extent starts
	sum  uint64 // generated: the CRC-64 (ECMA) of the bytes it was appended in place of
}

func (e *extent) literal() bool   { return int64(len(e.data)) == e.n }
func (e *extent) generated() bool { return e.data == nil }
func (e *extent) end() int64      { return e.off + e.n }

// byteTable gives every run its one-byte block without allocating it: each is a capped
// slice of it, which an append copies rather than writes.
var byteTable = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	return t
}()

func runOf(b byte) []byte { return byteTable[b : b+1 : b+1] }

// zeros is the literal form of a short stretch of zeros.
var zeros [minCompact]byte

// literalContent is a content holding b as it is (not copied).
func literalContent(b []byte) content {
	if len(b) == 0 {
		return content{}
	}
	return content{lit: b[:len(b):len(b)]}
}

// size is the content's length in bytes.
func (c content) size() int64 {
	if c.x != nil {
		return c.x.size
	}
	return int64(len(c.lit))
}

// extentCount is how many extents hold the content (for tests and the curious).
func (c content) extentCount() int {
	if c.x != nil {
		return len(c.x.list)
	}
	if len(c.lit) > 0 {
		return 1
	}
	return 0
}

// snapshot is c as it is now, to be read while c changes; called under the disk's lock.
func (c *content) snapshot() content {
	if c.x == nil {
		return content{lit: c.lit}
	}
	if !c.x.shared { // a frozen file's is set already: it is only read, by any disk
		c.x.shared = true
	}
	return content{x: &extents{list: c.x.list, size: c.x.size, shared: true}}
}

// forCopy is c for a second owner (a copy of a frozen file): neither may write where the
// other reads, so the copy shares the list until it changes it.
func (c content) forCopy() content {
	if c.x == nil {
		return literalContent(c.lit)
	}
	return content{x: &extents{list: c.x.list, size: c.x.size, lit: c.x.lit, shared: true}}
}

// freeze marks c's list as shared for good: a frozen file is read by every disk's views.
func (c *content) freeze() {
	if c.x != nil {
		c.x.shared = true
	}
}

// bytes is a copy of the whole content.
func (c content) bytes() []byte {
	if c.x == nil {
		return slices.Clone(c.lit)
	}
	b := make([]byte, c.x.size)
	c.readAt(b, 0)
	return b
}

// equal reports whether the content is b, reading it a page at a time through the stack.
func (c content) equal(b []byte) bool {
	if c.x == nil {
		return bytes.Equal(c.lit, b)
	}
	if c.x.size != int64(len(b)) {
		return false
	}
	var chunk [4096]byte
	for off := 0; off < len(b); {
		n := c.readAt(chunk[:], int64(off))
		if n == 0 || !bytes.Equal(chunk[:n], b[off:off+n]) {
			return false
		}
		off += n
	}
	return true
}

// readAt copies the content from off into b and returns how many bytes it copied (fewer
// than len(b) only at the end).
func (c content) readAt(b []byte, off int64) int {
	if c.x == nil {
		if off >= int64(len(c.lit)) {
			return 0
		}
		return copy(b, c.lit[off:])
	}
	x := c.x
	if off >= x.size {
		return 0
	}
	if int64(len(b)) > x.size-off {
		b = b[:x.size-off]
	}
	n := 0
	for i := x.find(off); n < len(b); i++ {
		e := &x.list[i]
		r := off + int64(n) - e.off
		m := int(min(int64(len(b)-n), e.n-r))
		e.read(b[n:n+m], r)
		n += m
	}
	return n
}

// find is the index of the extent holding byte off (off < size).
func (x *extents) find(off int64) int {
	lo, hi := 0, len(x.list)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.list[mid].end() <= off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// read fills b with e's bytes from r on (r+len(b) <= n).
func (e *extent) read(b []byte, r int64) {
	if e.generated() {
		genRead(b, e.seed, e.base+r)
		return
	}
	if e.literal() {
		copy(b, e.data[r:])
		return
	}
	if len(e.data) == 1 && e.data[0] == 0 {
		clear(b)
		return
	}
	// Lay down one period from r's phase, then double what is laid down: it repeats with
	// the block's length, so a copy of a whole number of periods continues it.
	ph := int(r % int64(len(e.data)))
	f := copy(b, e.data[ph:])
	f += copy(b[f:], e.data[:ph])
	for f < len(b) {
		f += copy(b[f:], b[:f])
	}
}

// slice is the part [from, to) of e as an extent of its own (off left to the caller).
func (e *extent) slice(from, to int64) extent {
	if e.generated() {
		// The same stream from the same place: the bytes stay where they were.
		return extent{n: to - from, seed: e.seed, base: e.base + from, sum: e.sum}
	}
	if e.literal() {
		if 2*(to-from) < e.n {
			// Most of it is cut off: keep what is left, not the whole (the bytes a file's
			// literals hold are what MaxLiteralPerFile counts).
			return extent{n: to - from, data: slices.Clone(e.data[from:to])}
		}
		return extent{n: to - from, data: e.data[from:to:to]}
	}
	block := e.data
	if ph := int(from % int64(len(block))); ph != 0 {
		block = append(slices.Clone(block[ph:]), block[:ph]...)
	}
	n := to - from
	if n <= int64(len(block)) {
		return extent{n: n, data: block[:n:n]}
	}
	return extent{n: n, data: block[:len(block):len(block)]}
}

// promote turns c's literal into a list of extents.
func (c *content) promote() *extents {
	if c.x == nil {
		x := &extents{size: int64(len(c.lit)), lit: int64(len(c.lit))}
		if len(c.lit) > 0 {
			// The literal's spare capacity is c's alone (literalContent and truncate cap
			// what others may hold): the extent may append into it.
			x.list = []extent{{n: int64(len(c.lit)), data: c.lit}}
		}
		c.lit, c.x = nil, x
	}
	return c.x
}

// own makes x's list its own before it changes: a snapshot or a copy may be reading it.
func (x *extents) own() {
	if !x.shared {
		return
	}
	x.list = slices.Clone(x.list)
	if n := len(x.list); n > 0 && x.list[n-1].literal() {
		// A copy of a frozen file shares its last literal's spare capacity with every other
		// copy: cap it, so that an append copies it rather than writes there.
		t := &x.list[n-1]
		t.data = t.data[:len(t.data):len(t.data)]
	}
	x.shared = false
}

// tail is the last extent, nil if none; c has extents.
func (x *extents) tail() *extent {
	if len(x.list) == 0 {
		return nil
	}
	return &x.list[len(x.list)-1]
}

// push adds e at the end.
func (x *extents) push(e extent) {
	x.own()
	e.off = x.size
	x.list = append(x.list, e)
	x.size += e.n
}

// verdict is what an appended unit becomes.
type verdict uint8

const (
	asLiteral  verdict = iota
	extendTail         // more of the last run or repeat
	newRun             // a run of its one byte
	newRepeat          // a repeat of itself: the bytes before it are the same
)

// append adds b at the end of the content, compacting it as it goes (see the top).
func (c *content) append(b []byte) {
	lit := 0 // b[lit:i] is literal, not added yet: literal pages are added together
	for i := 0; i < len(b); {
		u := b[i:min(i+page, len(b))]
		v := c.judge(u, b[lit:i])
		if v == asLiteral {
			i += len(u)
			continue
		}
		c.appendLiteral(b[lit:i])
		c.appendUnit(u, v)
		i += len(u)
		lit = i
	}
	c.appendLiteral(b[lit:])
}

// judge says what u becomes, coming after the content and then pending literal bytes.
func (c *content) judge(u, pending []byte) verdict {
	if len(pending) == 0 && c.x != nil {
		if t := c.x.tail(); t != nil && !t.literal() && !t.generated() && continues(u, t.data, int(t.n%int64(len(t.data)))) {
			return extendTail
		}
	}
	if len(u) < minCompact {
		return asLiteral
	}
	if allByte(u, u[0]) {
		return newRun
	}
	k := len(u)
	before := pending
	if len(pending) == 0 {
		before = c.tailLiteral()
	}
	if len(before) >= k && bytes.Equal(before[len(before)-k:], u) {
		return newRepeat
	}
	return asLiteral
}

// tailLiteral is the bytes of the last extent when it is a literal, or the last it was
// written when it is generated (as far as they are kept: genTail).
func (c *content) tailLiteral() []byte {
	if c.x == nil {
		return c.lit
	}
	if t := c.x.tail(); t != nil && t.literal() {
		return t.data
	}
	return c.x.genLookback()
}

// appendUnit adds u as judged (not asLiteral).
func (c *content) appendUnit(u []byte, v verdict) {
	x := c.promote()
	k := int64(len(u))
	switch v {
	case extendTail:
		x.own()
		x.tail().n += k
		x.size += k
	case newRun:
		x.push(extent{n: k, data: runOf(u[0])})
	case newRepeat:
		// The bytes before u are u: they leave the last literal for a repeat of twice u.
		// They were just added when they were pending; either way they end the last extent
		// unless the literal was split there (maxLiteral), when u stays literal.
		t := x.tail()
		if back := x.genLookback(); len(back) >= int(k) && bytes.Equal(back[len(back)-int(k):], u) {
			// The bytes before u were generated: they leave it all the same, as they would
			// a literal (genTail is the generated extent's last bytes, which it holds).
			block := slices.Clone(u)
			x.own()
			if t = x.tail(); t.n == k {
				x.list = x.list[:len(x.list)-1]
			} else {
				t.n -= k
			}
			x.size -= k
			x.push(extent{n: 2 * k, data: block})
			return
		}
		if t == nil || !t.literal() || t.n < k {
			c.appendLiteral(u)
			return
		}
		x.own()
		t = x.tail()
		x.lit -= k
		block := t.data[t.n-k : t.n : t.n]
		if t.n == k {
			t.n, t.data = 2*k, block
		} else {
			t.data = t.data[: t.n-k : t.n-k]
			t.n -= k
			x.size -= k
			x.push(extent{n: 2 * k, data: block})
			return
		}
		x.size += k
	}
}

// appendLiteral adds b as literal bytes, merged into the last literal up to maxLiteral,
// as far as MaxLiteralPerFile allows: the rest is generated.
func (c *content) appendLiteral(b []byte) {
	if len(b) == 0 {
		return
	}
	if c.x == nil && len(c.lit)+len(b) <= maxLiteral {
		c.lit = append(c.lit, b...)
		return
	}
	x := c.promote()
	keep := int(min(int64(len(b)), max(MaxLiteralPerFile-x.lit, 0)))
	x.appendLiteral(b[:keep])
	if keep < len(b) {
		x.appendGenerated(b[keep:])
	}
}

// appendLiteral adds b as literal bytes, merged into the last literal up to maxLiteral.
func (x *extents) appendLiteral(b []byte) {
	if len(b) == 0 {
		return
	}
	x.own()
	x.lit += int64(len(b))
	if t := x.tail(); t != nil && t.literal() && t.n < maxLiteral {
		m := min(len(b), maxLiteral-int(t.n))
		t.data = append(t.data, b[:m]...)
		t.n += int64(m)
		x.size += int64(m)
		b = b[m:]
	}
	for len(b) > 0 {
		m := min(len(b), maxLiteral)
		x.push(extent{n: int64(m), data: slices.Clone(b[:m])})
		b = b[m:]
	}
}

// appendZeros adds n zero bytes.
func (c *content) appendZeros(n int64) {
	if n <= 0 {
		return
	}
	if n < minCompact {
		c.append(zeros[:n])
		return
	}
	x := c.promote()
	if t := x.tail(); t != nil && !t.literal() && len(t.data) == 1 && t.data[0] == 0 {
		x.own()
		x.tail().n += n
		x.size += n
		return
	}
	x.push(extent{n: n, data: runOf(0)})
}

// writeAt writes b at off, as pwrite does: zeros fill a gap past the end.
func (c *content) writeAt(b []byte, off int64) {
	size := c.size()
	if off > size {
		c.appendZeros(off - size)
		size = off
	}
	if len(b) == 0 {
		return
	}
	over := b[:min(int64(len(b)), size-off)]
	if len(over) > 0 {
		c.promote().overwrite(over, off)
	}
	c.append(b[len(over):])
}

// overwrite replaces the bytes at [off, off+len(b)), within the content, with b: the
// extents there are cut and b's go between, so that no snapshot sees it.
func (x *extents) overwrite(b []byte, off int64) {
	end := off + int64(len(b))
	i, j := x.find(off), x.find(end-1)
	var head, tail []extent
	if first := &x.list[i]; first.off < off {
		head = []extent{first.slice(0, off-first.off)}
	}
	if last := &x.list[j]; last.end() > end {
		tail = []extent{last.slice(end-last.off, last.n)}
	}
	// b's literal bytes count with what the file keeps of the rest, as if it were appended.
	lit := x.lit + litBytes(head) + litBytes(tail) - litBytes(x.list[i:j+1])
	mid := content{x: &extents{lit: lit, genEnd: -1}}
	mid.append(b)
	midList := mid.x.list
	repl := make([]extent, 0, len(midList)+2)
	repl = append(repl, head...)
	repl = append(repl, midList...)
	repl = append(repl, tail...)
	x.own()
	x.lit = mid.x.lit
	x.genEnd = -1
	x.list = slices.Replace(x.list, i, j+1, repl...)
	x.renumber(max(i-1, 0), i+len(repl)+1)
}

// renumber sets the offsets from extent lo on, merging neighbours in [lo, hi) that are
// better as one: runs of one byte, and small literals (so that a file overwritten a
// little at a time does not become a list of slivers).
func (x *extents) renumber(lo, hi int) {
	hi = min(hi, len(x.list))
	out := lo
	for i := lo; i < len(x.list); i++ {
		e := x.list[i]
		if out > lo && i < hi {
			p := &x.list[out-1]
			switch {
			case len(p.data) == 1 && len(e.data) == 1 && p.data[0] == e.data[0]:
				p.n += e.n
				p.data = runOf(p.data[0])
				continue
			case p.literal() && e.literal() && p.n+e.n <= page:
				p.data = append(p.data[:p.n:p.n], e.data...)
				p.n += e.n
				continue
			}
		}
		if out > 0 {
			e.off = x.list[out-1].end()
		} else {
			e.off = 0
		}
		x.list[out] = e
		out++
	}
	clear(x.list[out:])
	x.list = x.list[:out]
}

// truncate cuts or extends (with zeros) the content to size bytes.
func (c *content) truncate(size int64) {
	cur := c.size()
	switch {
	case size >= cur:
		c.appendZeros(size - cur)
		return
	case size == 0:
		*c = content{}
		return
	case c.x == nil:
		c.lit = c.lit[:size:size] // a snapshot may read on past size: appends must not write there
		return
	}
	x := c.x
	x.own()
	x.genEnd = -1
	i := x.find(size - 1)
	x.lit -= litBytes(x.list[i:])
	e := &x.list[i]
	cut := e.slice(0, size-e.off)
	cut.off = e.off
	*e = cut
	x.lit += litBytes(x.list[i : i+1])
	clear(x.list[i+1:]) // what was cut off is garbage now, however big
	x.list = x.list[:i+1]
	x.size = size
}

// continues reports whether u goes on from phase ph of a run or repeat of block.
func continues(u, block []byte, ph int) bool {
	if len(block) == 1 {
		return allByte(u, block[0])
	}
	n := min(len(u), len(block)-ph)
	if !bytes.Equal(u[:n], block[ph:ph+n]) {
		return false
	}
	for u = u[n:]; len(u) > 0; {
		m := min(len(u), len(block))
		if !bytes.Equal(u[:m], block[:m]) {
			return false
		}
		u = u[m:]
	}
	return true
}

// allByte reports whether every byte of u is b: u[0] is, and each byte is the one before.
func allByte(u []byte, b byte) bool {
	return len(u) > 0 && u[0] == b && bytes.Equal(u[1:], u[:len(u)-1])
}

// litBytes is the literal bytes of list.
func litBytes(list []extent) (n int64) {
	for i := range list {
		if list[i].literal() {
			n += list[i].n
		}
	}
	return n
}

var crcTable = crc64.MakeTable(crc64.ECMA)
