package fake

import (
	"encoding/binary"
	"iter"
)

// logBuffer is a container's log as written, kept compactly: a line is a record of a few
// bytes of header (its time as a delta from the line before, its stream, its length) and
// its text, or the text's number in the node's dictionary (lineTexts) for a line many
// containers print, in chunks of about logChunkBytes. A node of 10,000 containers that each
// print a short line every few seconds keeps what it printed, as a node's disk does, at a
// tenth of the memory a LogLine per line took; rotation drops whole chunks.
type logBuffer struct {
	chunks  []*logChunk
	written int64 // the bytes written so far, a line and its newline each
	dropped int64 // of which rotation dropped these
}

type logChunk struct {
	buf  []byte
	last int64 // the time of its last line: the next line's base
	size int64 // its lines' bytes, as counted in written
}

// logChunkBytes is the size at which a chunk is full: small enough that reading the tail
// of a log decodes little more than the tail.
const logChunkBytes = 4 << 10

const (
	logStderr  = 1 << 0
	logPartial = 1 << 1
	logShared  = 1 << 2 // the text is a number in the node's dictionary
)

// add appends l, its text as a number in d when d holds it (d may be nil).
func (b *logBuffer) add(l LogLine, d *lineTexts) {
	var c *logChunk
	if n := len(b.chunks); n > 0 && len(b.chunks[n-1].buf) < logChunkBytes {
		c = b.chunks[n-1]
	} else {
		c = &logChunk{}
		b.chunks = append(b.chunks, c)
	}
	var flags byte
	if l.Stream == StreamStderr {
		flags |= logStderr
	}
	if l.Partial {
		flags |= logPartial
	}
	id, shared := d.id(l.Text)
	if shared {
		flags |= logShared
	}
	c.buf = binary.AppendVarint(c.buf, l.Time-c.last)
	c.buf = append(c.buf, flags)
	if shared {
		c.buf = binary.AppendUvarint(c.buf, uint64(id))
	} else {
		c.buf = binary.AppendUvarint(c.buf, uint64(len(l.Text)))
		c.buf = append(c.buf, l.Text...)
	}
	c.last = l.Time
	n := int64(len(l.Text)) + 1
	c.size += n
	b.written += n
}

// kept is the size of what the buffer holds.
func (b *logBuffer) kept() int64 { return b.written - b.dropped }

// rotate drops the oldest chunks that leave at least limit kept, once more than a quarter
// over it (as a log file is rotated when full, not at every line).
func (b *logBuffer) rotate(limit int64) {
	if b.kept() <= limit+limit/4 {
		return
	}
	drop := 0
	for drop < len(b.chunks)-1 && b.kept()-b.chunks[drop].size >= limit {
		b.dropped += b.chunks[drop].size
		drop++
	}
	b.chunks = append(b.chunks[:0:0], b.chunks[drop:]...)
}

// backward yields the lines newest first; d is the dictionary they were added with.
func (b *logBuffer) backward(d *lineTexts) iter.Seq[LogLine] {
	return func(yield func(LogLine) bool) {
		var lines []LogLine
		for i := len(b.chunks) - 1; i >= 0; i-- {
			lines = b.chunks[i].decode(lines[:0], d)
			for j := len(lines) - 1; j >= 0; j-- {
				if !yield(lines[j]) {
					return
				}
			}
		}
	}
}

// decode appends the chunk's lines, oldest first.
func (c *logChunk) decode(into []LogLine, d *lineTexts) []LogLine {
	var t int64
	buf := c.buf
	for len(buf) > 0 {
		dt, n := binary.Varint(buf)
		buf = buf[n:]
		t += dt
		flags := buf[0]
		v, n := binary.Uvarint(buf[1:])
		buf = buf[1+n:]
		l := LogLine{Time: t, Stream: StreamStdout, Partial: flags&logPartial != 0}
		if flags&logShared != 0 {
			l.Text = d.text(v)
		} else {
			l.Text = string(buf[:v])
			buf = buf[v:]
		}
		if flags&logStderr != 0 {
			l.Stream = StreamStderr
		}
		into = append(into, l)
	}
	return into
}
