package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"
)

// pattern is n bytes that never repeat within a page: a literal as far as compaction sees.
func pattern(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// checkContent compares every way of reading c with want: whole, from each offset around
// each extent's edges for several lengths, and at random windows.
func checkContent(t *testing.T, c content, want []byte) {
	t.Helper()
	if c.size() != int64(len(want)) {
		t.Fatalf("size %d, want %d", c.size(), len(want))
	}
	if got := c.bytes(); !bytes.Equal(got, want) {
		t.Fatalf("content differs at byte %d (size %d)", firstDiff(got, want), len(want))
	}
	var edges []int64
	if c.x != nil {
		for _, e := range c.x.list {
			edges = append(edges, e.off)
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	for range 50 {
		edges = append(edges, r.Int64N(int64(len(want))+1))
	}
	buf := make([]byte, 3*page)
	for _, edge := range edges {
		for _, d := range []int64{-page - 1, -5, -1, 0, 1, 7} {
			off := edge + d
			if off < 0 {
				continue
			}
			for _, n := range []int{1, 3, 100, page + 3, len(buf)} {
				got := buf[:c.readAt(buf[:n], off)]
				exp := want[min(off, int64(len(want))):min(off+int64(n), int64(len(want)))]
				if !bytes.Equal(got, exp) {
					t.Fatalf("readAt(%d bytes, %d): differs at %d of %d", n, off, firstDiff(got, exp), len(exp))
				}
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestContentCompaction(t *testing.T) {
	block := pattern(1, page)
	odd := pattern(2, 1000)
	cases := []struct {
		name string
		// writes are appended one after another (WriteFile's appending).
		writes     [][]byte
		maxExtents int
	}{
		{name: "zeros a MiB at a time", writes: repeatChunk(make([]byte, 1<<20), 16), maxExtents: 1},
		{name: "one zero write", writes: [][]byte{make([]byte, 8<<20)}, maxExtents: 1},
		{name: "a run of x", writes: repeatChunk(bytes.Repeat([]byte("x"), 5000), 10), maxExtents: 1},
		{name: "a 4 KiB block repeated", writes: repeatChunk(block, 1000), maxExtents: 1},
		{name: "a 4 KiB block repeated in one write", writes: [][]byte{bytes.Repeat(block, 256)}, maxExtents: 1},
		{name: "a 1000 byte block repeated", writes: repeatChunk(odd, 300), maxExtents: 1},
		{name: "a repeat ending in part of its block", writes: append(repeatChunk(block, 10), block[:100]), maxExtents: 1},
		{name: "mixed literal zero repeat", writes: [][]byte{
			[]byte("header\n"), make([]byte, 1<<20), block, block, block, []byte("tail"),
			make([]byte, 10), bytes.Repeat(block, 3), pattern(3, 3*page+17), make([]byte, 3*page),
		}, maxExtents: 10},
		{name: "zero pages inside a literal write", writes: [][]byte{
			append(append(pattern(4, 2*page), make([]byte, 4*page)...), pattern(5, page)...),
		}, maxExtents: 3},
		{name: "a line at a time", writes: lines(5000), maxExtents: 4}, // 220 KB in 64 KiB literals
		{name: "the same line again and again", writes: repeatChunk([]byte("tick\n"), 10000), maxExtents: 1},
		{name: "literal MiBs", writes: [][]byte{pattern(6, 1<<20), pattern(7, 1<<20+5)}, maxExtents: 34},
		{name: "tiny writes", writes: [][]byte{[]byte("a"), []byte("b"), nil, []byte("c")}, maxExtents: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := New(nil)
			var want []byte
			for _, w := range tc.writes {
				if err := v.WriteFile("/f", w, 0o644, true, 0, 0); err != nil {
					t.Fatal(err)
				}
				want = append(want, w...)
			}
			n := nodeAt(t, v, "/f")
			if got := n.data.extentCount(); got > tc.maxExtents {
				t.Errorf("%d extents, want at most %d", got, tc.maxExtents)
			}
			checkContent(t, n.data, want)
			info, err := v.Stat("/f")
			if err != nil || info.Size != int64(len(want)) {
				t.Errorf("stat: size %d (%v), want %d", info.Size, err, len(want))
			}
			// A write of the whole content compacts as appends do.
			if err := v.WriteFile("/g", want, 0o644, false, 0, 0); err != nil {
				t.Fatal(err)
			}
			checkContent(t, nodeAt(t, v, "/g").data, want)
		})
	}
}

// TestContentZeros4000MiB is the case the compaction is for: 4000 MiB of zeros appended a
// MiB at a time is one extent, and reads back as zeros anywhere.
func TestContentZeros4000MiB(t *testing.T) {
	v := New(nil)
	chunk := make([]byte, 1<<20)
	v.WriteFile("/big", []byte("start"), 0o644, false, 0, 0)
	for range 4000 {
		if err := v.WriteFile("/big", chunk, 0o644, true, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	v.WriteFile("/big", []byte("end"), 0o644, true, 0, 0)
	const size = 5 + 4000<<20 + 3
	n := nodeAt(t, v, "/big")
	if got := n.data.extentCount(); got > 3 {
		t.Errorf("%d extents, want 3", got)
	}
	r, err := v.Open("/big")
	if err != nil {
		t.Fatal(err)
	}
	if r.Size() != size {
		t.Fatalf("size %d, want %d", r.Size(), size)
	}
	for _, tc := range []struct {
		off  int64
		want string
	}{
		{0, "start\x00\x00"},
		{3, "rt\x00\x00\x00"},
		{2000 << 20, "\x00\x00\x00\x00"},
		{size - 5, "\x00\x00end"},
		{size - 2, "nd"},
	} {
		b := make([]byte, len(tc.want))
		n, err := r.ReadAt(b, tc.off)
		if err != nil && !(err == io.EOF && n == len(tc.want)) || string(b[:n]) != tc.want {
			t.Errorf("ReadAt(%d) = %q, %v; want %q", tc.off, b[:n], err, tc.want)
		}
	}
	if n, err := r.ReadAt(make([]byte, 1), size); n != 0 || err != io.EOF {
		t.Errorf("ReadAt at the end = %d, %v; want 0, EOF", n, err)
	}
}

func repeatChunk(b []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func lines(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "2024-03-05T14:07:09Z line %d of the log\n", i)
	}
	return out
}

func nodeAt(t *testing.T, v *View, p string) *Node {
	t.Helper()
	n, err := v.Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWriteFileAtTruncate(t *testing.T) {
	block := pattern(8, page)
	base := func(v *View) []byte {
		// literal, zeros, a repeated block, literal: every kind of extent to cut into.
		parts := [][]byte{pattern(9, 3000), make([]byte, 3*page), block, block, block, []byte("end")}
		var all []byte
		for _, p := range parts {
			v.WriteFile("/f", p, 0o644, true, 0, 0)
			all = append(all, p...)
		}
		return all
	}
	cases := []struct {
		name  string
		small bool // start from "hello world" rather than base
		ops   []fileOp
	}{
		{name: "overwrite a literal", small: true, ops: []fileOp{{at: 6, data: []byte("there")}}},
		{name: "write past the end leaves zeros", small: true, ops: []fileOp{{at: 20, data: []byte("x")}}},
		{name: "write over the end grows", small: true, ops: []fileOp{{at: 8, data: []byte("rldwide")}}},
		{name: "append at the end", small: true, ops: []fileOp{{at: 11, data: []byte("!")}}},
		{name: "truncate a literal", small: true, ops: []fileOp{{at: 5, trunc: true}, {at: 5, data: []byte("!")}}},
		{name: "truncate extends with zeros", small: true, ops: []fileOp{{at: 5000, trunc: true}, {at: 4998, data: []byte("ab")}}},
		{name: "negative offset", small: true, ops: []fileOp{{at: -1, data: []byte("x"), wantErr: EINVAL}, {at: -1, trunc: true, wantErr: EINVAL}}},
		{name: "overwrite into the zeros", ops: []fileOp{{at: 3000 + 100, data: []byte("in the zeros")}}},
		{name: "overwrite across every kind", ops: []fileOp{{at: 2990, data: pattern(10, 5*page)}}},
		{name: "overwrite mid block", ops: []fileOp{{at: 3000 + 3*page + page + 17, data: []byte("mid block")}}},
		{name: "overwrite with zeros", ops: []fileOp{{at: 100, data: make([]byte, 2*page)}}},
		{name: "byte at a time", ops: byteOps(3000-50, 200)},
		{name: "truncate mid repeat then append", ops: []fileOp{{at: 3000 + 3*page + page + 100, trunc: true}, {at: 3000 + 3*page + page + 100, data: block}}},
		{name: "truncate mid zeros", ops: []fileOp{{at: 3000 + 5, trunc: true}}},
		{name: "truncate to nothing then write", ops: []fileOp{{at: 0, trunc: true}, {at: 3, data: []byte("x")}}},
		{name: "truncate to the size", ops: []fileOp{{at: 3000 + 6*page + 3, trunc: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := New(nil)
			var want []byte
			if tc.small {
				want = []byte("hello world")
				v.WriteFile("/f", want, 0o644, false, 0, 0)
			} else {
				want = base(v)
			}
			for _, o := range tc.ops {
				var err error
				if o.trunc {
					err = v.Truncate("/f", o.at)
				} else {
					err = v.WriteFileAt("/f", o.data, o.at, 0o644, 0, 0)
				}
				if err != o.wantErr {
					t.Fatalf("%+v: error %v, want %v", o, err, o.wantErr)
				}
				if err != nil {
					continue
				}
				want = modelOp(want, o.at, o.data, o.trunc)
			}
			checkContent(t, nodeAt(t, v, "/f").data, want)
		})
	}
	t.Run("truncate of a missing file", func(t *testing.T) {
		v := New(nil)
		if err := v.Truncate("/nope", 3); err != ENOENT {
			t.Errorf("Truncate = %v, want ENOENT", err)
		}
		if err := v.WriteFileAt("/new", []byte("x"), 2, 0o600, 5, 6); err != nil {
			t.Fatal(err)
		}
		info, _ := v.Stat("/new")
		if info.Size != 3 || info.Mode.Perm() != 0o600 || info.UID != 5 {
			t.Errorf("made %+v", info)
		}
		v.Mkdir("/d", 0o755, 0, 0)
		if err := v.Truncate("/d", 0); err != EISDIR {
			t.Errorf("Truncate of a directory = %v, want EISDIR", err)
		}
	})
}

// fileOp is a WriteFileAt of data at at, or a Truncate to at.
type fileOp struct {
	at      int64
	data    []byte
	trunc   bool
	wantErr error
}

// byteOps writes n bytes one at a time from from.
func byteOps(from int64, n int) []fileOp {
	out := make([]fileOp, n)
	for i := range out {
		out[i].at = from + int64(i)
		out[i].data = []byte{byte('a' + i%26)}
	}
	return out
}

// modelOp is what an op does to plain bytes.
func modelOp(b []byte, at int64, data []byte, trunc bool) []byte {
	if trunc {
		if at <= int64(len(b)) {
			return b[:at:at]
		}
		return append(b, make([]byte, at-int64(len(b)))...)
	}
	if end := at + int64(len(data)); end > int64(len(b)) {
		b = append(b, make([]byte, end-int64(len(b)))...)
	}
	out := bytes.Clone(b)
	copy(out[at:], data)
	return out
}

// A reader sees the file as it was when opened, whatever happens to it afterwards.
func TestOpenSnapshot(t *testing.T) {
	block := pattern(11, page)
	starts := map[string]func(v *View) []byte{
		"small literal": func(v *View) []byte {
			b := []byte("one\ntwo\n")
			v.WriteFile("/f", b, 0o644, false, 0, 0)
			return b
		},
		"extents": func(v *View) []byte {
			var all []byte
			for _, p := range [][]byte{[]byte("head"), make([]byte, 2*page), block, block, pattern(12, 70000)} {
				v.WriteFile("/f", p, 0o644, true, 0, 0)
				all = append(all, p...)
			}
			return all
		},
	}
	changes := map[string]func(v *View) error{
		"append":             func(v *View) error { return v.WriteFile("/f", []byte("more"), 0o644, true, 0, 0) },
		"append a lot":       func(v *View) error { return v.WriteFile("/f", pattern(13, 200000), 0o644, true, 0, 0) },
		"overwrite whole":    func(v *View) error { return v.WriteFile("/f", []byte("new"), 0o644, false, 0, 0) },
		"write at the start": func(v *View) error { return v.WriteFileAt("/f", []byte("XXXX"), 0, 0o644, 0, 0) },
		"truncate":           func(v *View) error { return v.Truncate("/f", 2) },
		"truncate and append": func(v *View) error {
			v.Truncate("/f", 2)
			return v.WriteFile("/f", bytes.Repeat([]byte("z"), 300000), 0o644, true, 0, 0)
		},
		"truncate and append a little": func(v *View) error {
			v.Truncate("/f", 2)
			return v.WriteFile("/f", []byte("ZZ"), 0o644, true, 0, 0)
		},
		"remove": func(v *View) error { return v.Remove("/f", false) },
	}
	for sname, start := range starts {
		for cname, change := range changes {
			t.Run(sname+"/"+cname, func(t *testing.T) {
				v := New(nil)
				want := start(v)
				r, err := v.Open("/f")
				if err != nil {
					t.Fatal(err)
				}
				head := make([]byte, 2)
				io.ReadFull(r, head)
				if err := change(v); err != nil {
					t.Fatal(err)
				}
				rest, err := io.ReadAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if got := append(head, rest...); !bytes.Equal(got, want) {
					t.Errorf("read %d bytes differing at %d, want %d", len(got), firstDiff(got, want), len(want))
				}
				if r.Size() != int64(len(want)) {
					t.Errorf("Size %d, want %d", r.Size(), len(want))
				}
			})
		}
	}
}

// Readers read while the file is appended to, cut and overwritten: under -race, a writer
// that wrote where a snapshot reads would be caught.
func TestSnapshotConcurrent(t *testing.T) {
	v := New(nil)
	block := pattern(14, page)
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 10000)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				r, err := v.Open("/f")
				var want []byte
				if err == nil {
					want, _ = v.ReadFile("/f")
				}
				mu.Unlock()
				if err != nil {
					continue
				}
				off := int64(i*97+g) % (r.Size() + 1)
				n, _ := r.ReadAt(buf, off)
				if !bytes.Equal(buf[:n], want[off:off+int64(n)]) {
					errs <- fmt.Errorf("reader %d: bytes at %d changed under it", g, off)
					return
				}
			}
		}()
	}
	for i := range 400 {
		// Under mu, so that a reader's snapshot and ReadFile see one state: its reads of
		// the snapshot happen outside, while this changes the file.
		mu.Lock()
		switch i % 5 {
		case 0:
			v.WriteFile("/f", []byte(fmt.Sprintf("line %d\n", i)), 0o644, true, 0, 0)
		case 1:
			v.WriteFile("/f", block, 0o644, true, 0, 0)
		case 2:
			v.WriteFileAt("/f", []byte("over"), int64(i*31), 0o644, 0, 0)
		case 3:
			if i%15 == 3 {
				v.Truncate("/f", int64(i*7))
			}
		case 4:
			v.WriteFile("/f", make([]byte, 600), 0o644, true, 0, 0)
		}
		mu.Unlock()
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// Copies of one image file in two containers (two nodes' disks, two locks) append at once
// and each keeps its own bytes: neither writes into what the image or the other holds.
func TestCopyOnWriteShares(t *testing.T) {
	// Each file is written by appends, which leave spare capacity after its last literal
	// to tempt a copy's append to write there.
	for _, tc := range []struct {
		name   string
		writes [][]byte
	}{
		{"small", [][]byte{[]byte("image "), []byte("line\n")}},
		{"extents", [][]byte{pattern(15, 70000), make([]byte, 2*page), pattern(16, 3000), []byte("x")}},
		{"as NewFile", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(nil)
			b.MkdirAll("/etc", 0o755, 0, 0)
			var orig []byte
			for _, w := range tc.writes {
				b.WriteFile("/etc/f", w, 0o644, true, 0, 0)
				orig = append(orig, w...)
			}
			img := b.Root()
			if tc.writes == nil {
				orig = append(make([]byte, 0, 100), "image file"...)
				img.Dir("etc").Add("f", NewFile(orig, 0o644))
			}
			img.Freeze()
			orig = bytes.Clone(orig)
			var wg sync.WaitGroup
			views := make([]*View, 3)
			for i := range views {
				views[i] = NewView(New(nil), img, false)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 50 {
						views[i].WriteFile("/etc/f", []byte{byte('a' + i)}, 0o644, true, 0, 0)
					}
				}()
			}
			wg.Wait()
			for i, v := range views {
				got, _ := v.ReadFile("/etc/f")
				want := append(bytes.Clone(orig), bytes.Repeat([]byte{byte('a' + i)}, 50)...)
				if !bytes.Equal(got, want) {
					t.Errorf("view %d holds %d bytes differing at %d", i, len(got), firstDiff(got, want))
				}
			}
			if got, _ := NewView(New(nil), img, false).ReadFile("/etc/f"); !bytes.Equal(got, orig) {
				t.Error("the image's file changed")
			}
		})
	}
}

func TestOpen(t *testing.T) {
	v := New(nil)
	v.MkdirAll("/d", 0o755, 0, 0)
	v.WriteFile("/d/f", []byte("0123456789"), 0o644, false, 0, 0)
	v.Symlink("/d/f", "/link")
	v.Symlink("/loop", "/loop")
	gen := 0
	v.BindNode("/proc/gen", NewGenerated(func(any) []byte { gen++; return []byte(fmt.Sprint("made ", gen)) }, 0o444), true)
	for _, tc := range []struct {
		path, want string
		err        error
	}{
		{path: "/d/f", want: "0123456789"},
		{path: "/link", want: "0123456789"},
		{path: "/proc/gen", want: "made 1"},
		{path: "/nope", err: ENOENT},
		{path: "/d", err: EISDIR},
		{path: "/d/f/x", err: ENOTDIR},
		{path: "/loop", err: ELOOP},
	} {
		r, err := v.Open(tc.path)
		if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("Open(%s): %v, want %v", tc.path, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		got, _ := io.ReadAll(r)
		if string(got) != tc.want {
			t.Errorf("Open(%s) reads %q, want %q", tc.path, got, tc.want)
		}
	}
	r, _ := v.Open("/d/f")
	for _, tc := range []struct {
		off    int64
		whence int
		pos    int64
		read   string
		err    bool
	}{
		{off: 3, whence: io.SeekStart, pos: 3, read: "34"},
		{off: 1, whence: io.SeekCurrent, pos: 6, read: "67"},
		{off: -1, whence: io.SeekEnd, pos: 9, read: "9"},
		{off: 5, whence: io.SeekEnd, pos: 15, read: ""},
		{off: -100, whence: io.SeekStart, err: true},
	} {
		pos, err := r.Seek(tc.off, tc.whence)
		if tc.err {
			if err == nil {
				t.Errorf("Seek(%d, %d) did not fail", tc.off, tc.whence)
			}
			continue
		}
		b := make([]byte, 2)
		n, _ := r.Read(b)
		if pos != tc.pos || string(b[:n]) != tc.read {
			t.Errorf("Seek(%d, %d) = %d, read %q; want %d, %q", tc.off, tc.whence, pos, b[:n], tc.pos, tc.read)
		}
	}
}

// upperWalk is what UpperBytes must be: the files of v's own tree not the image's.
func upperWalk(v *View) int64 { return fileBytes(v.Root(), true) }

func TestUpperBytes(t *testing.T) {
	img := NewDir(0o755)
	img.Dir("etc").Add("img", NewFile(bytes.Repeat([]byte("i"), 1000), 0o644))
	img.Dir("etc").Add("img2", NewFile(bytes.Repeat([]byte("j"), 300), 0o644))
	img.Dir("etc").Add("img3", NewFile(bytes.Repeat([]byte("k"), 70), 0o644))
	img.Dir("tmp")
	node := New(nil)
	node.MkdirAll("/vol", 0o755, 0, 0)
	v := NewView(node, img, false)
	if err := v.Bind("/data", node, "/vol", false); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
		want int64
	}{
		{"create", func() error { return v.WriteFile("/tmp/a", make([]byte, 100), 0o644, false, 0, 0) }, 100},
		{"append", func() error { return v.WriteFile("/tmp/a", []byte("12345"), 0o644, true, 0, 0) }, 105},
		{"overwrite whole", func() error { return v.WriteFile("/tmp/a", []byte("1234567890"), 0o644, false, 0, 0) }, 10},
		{"write at past the end", func() error { return v.WriteFileAt("/tmp/a", []byte("x"), 19, 0o644, 0, 0) }, 20},
		{"write at within", func() error { return v.WriteFileAt("/tmp/a", []byte("yy"), 0, 0o644, 0, 0) }, 20},
		{"truncate", func() error { return v.Truncate("/tmp/a", 4) }, 4},
		{"a big zero file", func() error { return v.WriteFile("/tmp/z", make([]byte, 10<<20), 0o644, false, 0, 0) }, 4 + 10<<20},
		{"remove it", func() error { return v.Remove("/tmp/z", false) }, 4},
		{"rename", func() error { return v.Rename("/tmp/a", "/tmp/b") }, 4},
		{"append to an image file copies it up", func() error { return v.WriteFile("/etc/img", []byte("+"), 0o644, true, 0, 0) }, 4 + 1001},
		{"chmod of an image file copies it up", func() error { return v.Chmod("/etc/img2", 0o600) }, 4 + 1001 + 300},
		{"rename of an image file copies it up", func() error { return v.Rename("/etc/img3", "/tmp/img3") }, 4 + 1001 + 300 + 70},
		{"rename over an upper file", func() error { return v.Rename("/tmp/img3", "/tmp/b") }, 1001 + 300 + 70},
		{"remove a copied-up file", func() error { return v.Remove("/etc/img2", false) }, 1001 + 70},
		{"write under a mount", func() error { return v.WriteFile("/data/x", make([]byte, 5000), 0o644, false, 0, 0) }, 1001 + 70},
		{"a directory of files", func() error {
			v.MkdirAll("/tmp/d/e", 0o755, 0, 0)
			v.WriteFile("/tmp/d/f", []byte("abc"), 0o644, false, 0, 0)
			return v.WriteFile("/tmp/d/e/g", []byte("defg"), 0o644, false, 0, 0)
		}, 1001 + 70 + 7},
		{"remove it all", func() error { return v.Remove("/tmp/d", true) }, 1001 + 70},
		{"remove /etc with the image's files in it", func() error { return v.Remove("/etc", true) }, 70},
		{"a symbolic link is no file", func() error { return v.Symlink("/tmp/b", "/tmp/l") }, 70},
		{"write through the link", func() error { return v.WriteFile("/tmp/l", []byte("more"), 0o644, true, 0, 0) }, 74},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got, walk := v.UpperBytes(), upperWalk(v); got != s.want || walk != s.want {
			t.Fatalf("after %s: UpperBytes %d, a walk %d, want %d", s.name, got, walk, s.want)
		}
	}
}

func TestDirBytes(t *testing.T) {
	node := New(nil)
	node.MkdirAll("/vol/sub/deeper", 0o755, 0, 0)
	node.WriteFile("/vol/a", []byte("12345"), 0o644, false, 0, 0)
	node.WriteFile("/vol/sub/b", nil, 0o644, false, 0, 0)
	node.Truncate("/vol/sub/b", 1<<30)
	node.WriteFileAt("/vol/sub/deeper/c", []byte("x"), 99, 0o644, 0, 0)
	node.Symlink("/vol/a", "/vol/link")
	node.MkdirAll("/other", 0o755, 0, 0)
	node.WriteFile("/other/o", []byte("other"), 0o644, false, 0, 0)
	v := NewView(node, nil, false)
	v.Bind("/mnt/vol", node, "/vol", false)
	v.Bind("/mnt/vol/sub/other", node, "/other", false)
	v.BindNode("/mnt/vol/gen", NewGenerated(func(any) []byte { return []byte("generated") }, 0o444), true)
	v.WriteFile("/top", []byte("top"), 0o644, false, 0, 0)
	want := int64(5 + 1<<30 + 100)
	for _, tc := range []struct {
		path string
		want int64
		err  error
	}{
		{path: "/mnt/vol", want: want},
		{path: "/mnt/vol/sub", want: 1<<30 + 100},
		{path: "/mnt/vol/sub/other", want: 5},
		{path: "/", want: 3}, // the mounts are not followed below the top
		{path: "/mnt/vol/a", err: ENOTDIR},
		{path: "/nope", err: ENOENT},
	} {
		got, err := v.DirBytes(tc.path)
		if got != tc.want || err != tc.err {
			t.Errorf("DirBytes(%s) = %d, %v; want %d, %v", tc.path, got, err, tc.want, tc.err)
		}
	}
}

func TestNodeSize(t *testing.T) {
	// A node's disk holds some 10 nodes per pod: content must not make each bigger.
	if got := sizeofNode(); got != 80 {
		t.Errorf("a Node is %d bytes, want 80", got)
	}
}

func BenchmarkAppendZeros(b *testing.B) {
	chunk := make([]byte, 1<<20)
	v := New(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		if err := v.WriteFile("/big", chunk, 0o644, true, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadAt(b *testing.B) {
	v := New(nil)
	block := pattern(16, page)
	for i := range 64 {
		v.WriteFile("/f", pattern(uint64(i), 5000), 0o644, true, 0, 0)
		v.WriteFile("/f", make([]byte, 1<<20), 0o644, true, 0, 0)
		v.WriteFile("/f", bytes.Repeat(block, 16), 0o644, true, 0, 0)
	}
	r, err := v.Open("/f")
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	size := r.Size()
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	off := int64(0)
	for b.Loop() {
		r.ReadAt(buf, off)
		off = (off + 1<<20 + 12345) % size
	}
}

func sizeofNode() uintptr { return unsafe.Sizeof(Node{}) }
