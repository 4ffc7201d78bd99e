package vfs

import (
	"bytes"
	"hash/crc64"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// randStream is the pseudo-random bytes the big tests write, chunk by chunk, made again
// to compare with rather than kept.
type randStream struct{ r *rand.ChaCha8 }

func newRandStream(seed byte) *randStream {
	var s [32]byte
	s[0] = seed
	return &randStream{rand.NewChaCha8(s)}
}

func (s *randStream) next(b []byte) []byte {
	s.r.Read(b)
	return b
}

// readCRC reads r whole in odd-sized pieces and returns its CRC-64 and how much it read.
func readCRC(t *testing.T, r io.Reader) (uint64, int64) {
	t.Helper()
	buf := make([]byte, 100003)
	var sum uint64
	var n int64
	for {
		m, err := r.Read(buf)
		sum = crc64.Update(sum, crcTable, buf[:m])
		n += int64(m)
		if err == io.EOF {
			return sum, n
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func TestMaxLiteralPerFile(t *testing.T) {
	const chunk = 64 << 10
	zeros := make([]byte, chunk)
	block := bytes.Repeat(pattern(3, page), chunk/page)
	tests := []struct {
		name  string
		size  int64
		lossy bool
		// data is chunk i of the file (written into buf), from a stream made for each pass.
		data func(s *randStream, buf []byte, i int64) []byte
		// exact is how much of the file reads back as written.
		exact int64
	}{
		{"random 200 MiB", 200 << 20, true, func(s *randStream, buf []byte, _ int64) []byte { return s.next(buf) }, MaxLiteralPerFile},
		{"random 64 MiB", MaxLiteralPerFile, false, func(s *randStream, buf []byte, _ int64) []byte { return s.next(buf) }, MaxLiteralPerFile},
		{"random 64 MiB then zeros and a repeated block", 200 << 20, false, func(s *randStream, buf []byte, i int64) []byte {
			switch {
			case i < MaxLiteralPerFile/chunk:
				return s.next(buf)
			case i < 2*MaxLiteralPerFile/chunk:
				return zeros
			default:
				return block
			}
		}, 200 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := New(nil)
			buf := make([]byte, chunk)
			before := heapInuse()
			s := newRandStream(1)
			for i := range tc.size / chunk {
				if err := v.WriteFile("/r", tc.data(s, buf, i), 0o644, true, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			grew := int64(heapInuse()) - int64(before)
			t.Logf("heap in use grew %.1f MiB for a %d MiB file", float64(grew)/(1<<20), tc.size>>20)
			if grew > 100<<20 {
				t.Errorf("heap in use grew %d MiB, want at most 100", grew>>20)
			}
			if lossy, err := v.Lossy("/r"); err != nil || lossy != tc.lossy {
				t.Errorf("Lossy = %v, %v; want %v", lossy, err, tc.lossy)
			}
			if info, err := v.Stat("/r"); err != nil || info.Size != tc.size {
				t.Fatalf("Stat = %+v, %v; want size %d", info, err, tc.size)
			}

			// What is kept reads back as written.
			r, err := v.Open("/r")
			if err != nil {
				t.Fatal(err)
			}
			if r.Size() != tc.size {
				t.Fatalf("Size %d, want %d", r.Size(), tc.size)
			}
			s = newRandStream(1)
			got := make([]byte, chunk)
			var lost uint64 // the CRC of what was written past what is kept
			for i := range tc.size / chunk {
				want := tc.data(s, buf, i)
				if i*chunk >= tc.exact {
					lost = crc64.Update(lost, crcTable, want)
					continue
				}
				if _, err := r.ReadAt(got, i*chunk); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("chunk %d differs at byte %d", i, firstDiff(got, want))
				}
			}
			if !tc.lossy {
				return
			}
			// The rest is one generated extent, that records what it replaced.
			x := nodeAt(t, v, "/r").data.x
			if e := x.tail(); !e.generated() || e.off != tc.exact || e.n != tc.size-tc.exact || e.sum != lost {
				t.Errorf("last extent %+v, want generated from %d, %d bytes, sum %#x", *e, tc.exact, tc.size-tc.exact, lost)
			}
			if x.lit != MaxLiteralPerFile {
				t.Errorf("%d literal bytes, want %d", x.lit, MaxLiteralPerFile)
			}
			// It reads the same each time, and from any offset.
			r2, _ := v.Open("/r")
			s1, n1 := readCRC(t, r)
			r.Seek(0, io.SeekStart)
			s2, n2 := readCRC(t, r)
			s3, n3 := readCRC(t, r2)
			if n1 != tc.size || n2 != tc.size || n3 != tc.size || s1 != s2 || s1 != s3 {
				t.Errorf("reads: %d bytes sum %#x, %d sum %#x, %d sum %#x", n1, s1, n2, s2, n3, s3)
			}
			whole := make([]byte, 4*page)
			r.ReadAt(whole, tc.exact+5*page)
			for _, d := range []int64{1, 7, 8, 9, page - 1, page + 3} {
				part := make([]byte, 2*page)
				r.ReadAt(part, tc.exact+5*page+d)
				if !bytes.Equal(part, whole[d:d+2*page]) {
					t.Fatalf("ReadAt(+%d) is not the bytes ReadAt(+0) read there", d)
				}
			}
			// The same data written again (another file) reads the same.
			s = newRandStream(1)
			for i := range tc.size / chunk {
				v.WriteFile("/again", tc.data(s, buf, i), 0o644, true, 0, 0)
			}
			r3, _ := v.Open("/again")
			if s4, n4 := readCRC(t, r3); s4 != s1 || n4 != n1 {
				t.Errorf("the same data written again reads differently")
			}
		})
	}
}

// lossyContent is content past MaxLiteralPerFile (10000 literal bytes left when it
// started): literal, generated, zeros, generated, a repeated block, and what it holds.
func lossyContent(t *testing.T) (content, []byte) {
	t.Helper()
	c := content{x: &extents{lit: MaxLiteralPerFile - 10000, genEnd: -1}}
	block := pattern(4, page)
	for _, b := range [][]byte{pattern(1, 30000), make([]byte, 3*page), pattern(2, 50000), block, block, block, []byte("end")} {
		c.append(b)
	}
	var kinds []string
	for _, e := range c.x.list {
		switch {
		case e.generated():
			kinds = append(kinds, "gen")
		case e.literal():
			kinds = append(kinds, "lit")
		default:
			kinds = append(kinds, "rep")
		}
	}
	if got := strings.Join(kinds, " "); got != "lit gen rep gen rep gen" {
		t.Fatalf("extents %s", got)
	}
	all := c.bytes()
	if !bytes.Equal(all[:10000], pattern(1, 10000)) {
		t.Fatal("the literal bytes differ")
	}
	// The zeros and every repeated block stay exact, the first one too: it was generated
	// until the second came.
	want := append(make([]byte, 3*page), all[30000+3*page:30000+3*page+50000]...)
	want = append(want, bytes.Repeat(block, 3)...)
	if !bytes.Equal(all[30000:30000+len(want)], want) {
		t.Fatalf("zeros or repeats differ at %d", firstDiff(all[30000:30000+len(want)], want))
	}
	return c, all
}

func TestGeneratedEdits(t *testing.T) {
	gen1 := int64(10000) // the first generated extent: [10000, 30000)
	gen2 := int64(30000 + 3*page)
	tests := []struct {
		name string
		edit func(c *content, model []byte) []byte // edits c, returns what it must read
		// lossyAt is a range written that is generated, not compared; [0, 0) if none.
		lossyFrom, lossyTo int64
	}{
		{"zeros inside a generated extent", func(c *content, m []byte) []byte {
			c.writeAt(make([]byte, 5000), gen1+1000)
			copy(m[gen1+1000:], make([]byte, 5000))
			return m
		}, 0, 0},
		{"zeros across literal, generated and zeros", func(c *content, m []byte) []byte {
			c.writeAt(make([]byte, 30000), 5000)
			copy(m[5000:], make([]byte, 30000))
			return m
		}, 0, 0},
		{"a small write inside a generated extent, no room", func(c *content, m []byte) []byte {
			c.writeAt([]byte("hello"), gen2+777)
			return m
		}, gen2 + 777, gen2 + 777 + 5},
		{"random bytes across generated extents", func(c *content, m []byte) []byte {
			b := pattern(9, 40000)
			c.writeAt(b, gen1+5000)
			return m
		}, gen1 + 5000, gen1 + 45000},
		{"room made, random bytes in a generated extent", func(c *content, m []byte) []byte {
			c.writeAt(make([]byte, 9000), 0) // 9000 literal bytes fewer: room for more
			copy(m, make([]byte, 9000))
			b := pattern(9, 8000)
			c.writeAt(b, gen2+100)
			copy(m[gen2+100:], b)
			return m
		}, 0, 0},
		{"truncate inside a generated extent", func(c *content, m []byte) []byte {
			c.truncate(gen1 + 12345)
			return m[:gen1+12345]
		}, 0, 0},
		{"truncate inside and extend", func(c *content, m []byte) []byte {
			c.truncate(gen2 + 3)
			c.truncate(gen2 + 3 + 3*page)
			return append(m[:gen2+3], make([]byte, 3*page)...)
		}, 0, 0},
		{"truncate inside and append random bytes", func(c *content, m []byte) []byte {
			c.truncate(gen2 + 3)
			c.append(pattern(10, 9000))
			return append(m[:gen2+3], make([]byte, 9000)...)
		}, gen2 + 3, gen2 + 3 + 9000},
		{"truncate to the literal prefix frees room", func(c *content, m []byte) []byte {
			c.truncate(5000)
			b := pattern(10, 9000)
			c.append(b)
			return append(m[:5000], b...)
		}, 10000, 14000}, // room for 5000 of them
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, model := lossyContent(t)
			snap := c.snapshot()
			want := tc.edit(&c, bytes.Clone(model))
			checkContent(t, snap, model) // a snapshot taken before does not change
			got := c.bytes()
			if int64(len(got)) != int64(len(want)) {
				t.Fatalf("size %d, want %d", len(got), len(want))
			}
			if tc.lossyTo > 0 {
				// What was written there is generated: the rest is as it was, and it reads
				// the same each time.
				if !bytes.Equal(got[tc.lossyFrom:tc.lossyTo], c.bytes()[tc.lossyFrom:tc.lossyTo]) {
					t.Fatal("generated bytes read differently twice")
				}
				copy(want[tc.lossyFrom:tc.lossyTo], got[tc.lossyFrom:tc.lossyTo])
			}
			checkContent(t, c, want)
			if c.x.lit-(MaxLiteralPerFile-10000) != litBytes(c.x.list) || c.x.lit > MaxLiteralPerFile {
				t.Errorf("lit %d, the literal extents hold %d", c.x.lit, litBytes(c.x.list))
			}
			if !c.lossy() {
				t.Error("not lossy")
			}
		})
	}
}

// TestGeneratedSnapshot is a reader opened before an overwrite and an append of a file
// past MaxLiteralPerFile: it reads what was there.
func TestGeneratedSnapshot(t *testing.T) {
	v := New(nil)
	chunk := pattern(5, 1<<20)
	for range MaxLiteralPerFile>>20 + 2 {
		v.WriteFile("/f", chunk, 0o644, true, 0, 0)
	}
	if lossy, _ := v.Lossy("/f"); !lossy {
		t.Fatal("not lossy")
	}
	r, _ := v.Open("/f")
	before, _ := v.ReadFile("/f")
	v.WriteFileAt("/f", []byte("overwritten"), MaxLiteralPerFile-5, 0o644, 0, 0)
	v.WriteFileAt("/f", make([]byte, page), MaxLiteralPerFile+(1<<20), 0o644, 0, 0)
	v.WriteFile("/f", chunk, 0o644, true, 0, 0)
	if got, _ := io.ReadAll(r); !bytes.Equal(got, before) {
		t.Fatalf("the reader's content changed at %d", firstDiff(got, before))
	}
	after, _ := v.ReadFile("/f")
	want := bytes.Clone(before)
	copy(want[MaxLiteralPerFile-5:], "overw")
	copy(want[MaxLiteralPerFile+(1<<20):], make([]byte, page))
	// What is appended is generated; "overwritten" past the limit too ("ritten").
	if !bytes.Equal(after[:MaxLiteralPerFile], want[:MaxLiteralPerFile]) ||
		!bytes.Equal(after[MaxLiteralPerFile+6:len(before)], want[MaxLiteralPerFile+6:]) {
		t.Error("the file does not read as overwritten")
	}
	if lossy, _ := v.Lossy("/f"); !lossy {
		t.Error("not lossy")
	}
	v.Truncate("/f", 10)
	if lossy, _ := v.Lossy("/f"); lossy {
		t.Error("lossy once cut to its literal bytes")
	}
}

func TestGenRead(t *testing.T) {
	whole := make([]byte, 1000)
	genRead(whole, 42, 0)
	for from := range 40 {
		for _, n := range []int{0, 1, 7, 8, 9, 100} {
			b := make([]byte, n)
			genRead(b, 42, int64(from))
			if !bytes.Equal(b, whole[from:from+n]) {
				t.Fatalf("genRead(%d bytes at %d) differs", n, from)
			}
		}
	}
	other := make([]byte, 1000)
	genRead(other, 43, 0)
	if bytes.Equal(whole, other) {
		t.Error("two seeds, one stream")
	}
}
