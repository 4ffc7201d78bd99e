package vfs

import (
	"encoding/binary"
	"hash/crc64"
)

// Generated extents: what a file is written past MaxLiteralPerFile that would be literal.
//
// A generated extent keeps its length and the CRC-64 of the bytes it stands for (sum), and
// reads as a pseudo-random stream: byte i of the stream of seed is a function of (seed, i)
// alone, so that any byte is read without the ones before it, and reading costs no memory.
// The seed is the CRC-64 of the bytes the extent was first appended in place of, fixed
// then: appends that follow go on with the stream (and update sum), so a byte once read
// reads the same for as long as it is not written, whatever is appended after it or when
// a snapshot was taken. The same bytes written the same way (the same appends after the
// same content) read back the same. An extent cut by an overwrite or a truncation keeps
// its seed and moves its base by what was cut from its start: each byte left reads as it
// did.

// appendGenerated adds b as a generated extent, or as more of the last one.
func (x *extents) appendGenerated(b []byte) {
	if len(b) == 0 {
		return
	}
	look := x.genLookback() != nil
	x.own()
	k := int64(len(b))
	if t := x.tail(); t != nil && t.generated() {
		t.n += k
		t.sum = crc64.Update(t.sum, crcTable, b)
		x.size += k
	} else {
		sum := crc64.Update(0, crcTable, b)
		x.push(extent{n: k, seed: sum, sum: sum})
		look = false
	}
	// Keep the last page written for appends to come (genTail): x's own buffer.
	if !look {
		x.genTail = x.genTail[:0]
	}
	if len(b) >= page {
		x.genTail = append(x.genTail[:0], b[len(b)-page:]...)
	} else {
		x.genTail = append(x.genTail, b...)
		if d := len(x.genTail) - page; d > 0 {
			x.genTail = x.genTail[:copy(x.genTail, x.genTail[d:])]
		}
	}
	x.genEnd = x.size
}

// genLookback is the last bytes of the content, as written, when the last extent is
// generated and they are known (genTail), else nil.
func (x *extents) genLookback() []byte {
	if t := x.tail(); t == nil || !t.generated() || x.genEnd != x.size || len(x.genTail) == 0 {
		return nil
	}
	return x.genTail
}

// genWord is the word w of the stream of seed: its bytes w*8 to w*8+7, little-endian
// (splitmix64 of the seed and the word's index).
func genWord(seed, w uint64) uint64 {
	z := seed + (w+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// genRead fills b with the stream of seed from byte pos on.
func genRead(b []byte, seed uint64, pos int64) {
	w := uint64(pos) / 8
	if ph := int(uint64(pos) % 8); ph != 0 {
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], genWord(seed, w))
		n := copy(b, buf[ph:])
		b = b[n:]
		w++
	}
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, genWord(seed, w))
		b = b[8:]
		w++
	}
	if len(b) > 0 {
		var buf [8]byte
		binary.LittleEndian.PutUint64(buf[:], genWord(seed, w))
		copy(b, buf[:])
	}
}

// lossy reports whether some of c is generated: not the bytes written (MaxLiteralPerFile).
func (c content) lossy() bool {
	if c.x == nil {
		return false
	}
	for i := range c.x.list {
		if c.x.list[i].generated() {
			return true
		}
	}
	return false
}

// Lossy reports whether file p (following symbolic links) holds generated content: literal
// bytes written past MaxLiteralPerFile, which it reads back as deterministic pseudo-random
// bytes of the same length rather than as written. Its errors are ReadFile's.
func (v *View) Lossy(p string) (bool, error) {
	c, gen, _, err := v.snapshot(p)
	if err != nil || gen != nil {
		return false, err
	}
	return c.lossy(), nil
}
