package programs

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// gzip, gunzip and zcat: busybox's archival/gzip.c and bbunzip.c. Each FILE is packed to
// FILE.gz (or unpacked from FILE.gz, FILE.tgz to FILE.tar), which must not exist (-f
// removes it first), and is then removed (not with -k); -c writes to stdout; "-" or no
// FILE is stdin to stdout. What is unpacked streams into the output a window at a time,
// so a gzip bomb grows its file through the filesystem (which counts it against the
// container's disk) and never a buffer. The compressed bytes are Go's, not busybox's
// deflate's: the same data, another encoding.

// The options bbunpack shares, as busybox's BBUNPK_OPT_*.
type unpackOpts struct {
	stdout, force, keep, verbose, test bool
	zcat                               bool // zcat's "seamless" mode
	decompress                         bool
}

func runGzip(c *cmd) int {
	o, args := c.getopt("cfkvqdtn123456789", []getopt.Long{
		{Name: "stdout", Key: 'c'}, {Name: "to-stdout", Key: 'c'}, {Name: "force", Key: 'f'},
		{Name: "verbose", Key: 'v'}, {Name: "decompress", Key: 'd'}, {Name: "uncompress", Key: 'd'},
		{Name: "test", Key: 't'}, {Name: "quiet", Key: 'q'}, {Name: "fast", Key: '1'},
		{Name: "best", Key: '9'}, {Name: "no-name", Key: 'n'},
	})
	if o.Has('d') || o.Has('t') {
		// busybox's gzip -d is gunzip, which parses the arguments again with its own
		// options: "gzip --decompress" and "gzip -d -9" are errors.
		return runGunzip(c)
	}
	u := unpackOpts{stdout: o.Has('c'), force: o.Has('f'), keep: o.Has('k'), verbose: o.Has('v')}
	return c.bbunpack(args, u)
}

func runGunzip(c *cmd) int {
	o, args := c.getopt("cfkvqdtn", []getopt.Long{
		{Name: "stdout", Key: 'c'}, {Name: "to-stdout", Key: 'c'}, {Name: "force", Key: 'f'},
		{Name: "test", Key: 't'}, {Name: "no-name", Key: 'n'},
	})
	u := unpackOpts{stdout: o.Has('c'), force: o.Has('f'), keep: o.Has('k'), verbose: o.Has('v'),
		test: o.Has('t'), decompress: true}
	if c.name == "zcat" {
		u.stdout, u.zcat = true, true
	}
	return c.bbunpack(args, u)
}

// gzSink is where packed or unpacked data goes: stdout, nowhere (-t) or a file, appended
// to as it comes.
type gzSink struct {
	c       *cmd
	file    string // "" for stdout
	discard bool
	n       int64
}

func (s *gzSink) Write(b []byte) (int, error) {
	s.c.tick()
	s.n += int64(len(b))
	switch {
	case s.discard:
		return len(b), nil
	case s.file == "":
		return s.c.out.Write(b)
	}
	id := s.c.p.Identity()
	if err := s.c.fs().WriteFile(s.file, b, 0, true, id.UID, id.GID); err != nil {
		return 0, &gzWriteError{err}
	}
	return len(b), nil
}

// gunzipName is the name FILE unpacks to: without .gz, or .tgz made .tar; "" for another
// suffix.
func gunzipName(name string) string {
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return ""
	}
	switch name[dot+1:] {
	case "gz":
		return name[:dot]
	case "tgz":
		return name[:dot] + ".tar"
	}
	return ""
}

// bbunpack is busybox's loop over the files of gzip, gunzip and zcat.
func (c *cmd) bbunpack(args []string, u unpackOpts) int {
	if len(args) == 0 {
		args = []string{"-"}
	}
	status := 0
	for _, name := range args {
		c.tick()
		var in io.Reader
		var info vfs.Info
		file := name != "-"
		if file {
			var err error
			if info, err = c.fs().Stat(c.abs(name)); err != nil {
				c.perror(err, "%s", name)
				status = 1
				continue
			}
			if in, err = c.open(name); err != nil {
				c.perror(err, "can't open '%s'", name)
				status = 1
				continue
			}
		} else {
			in = c.stdin()
		}
		br := bufio.NewReaderSize(in, 32<<10)
		if u.zcat {
			// zcat wants gzip's magic first, and dies without it.
			magic := make([]byte, 2)
			if n, _ := io.ReadFull(br, magic); n < 2 {
				c.die("short read")
			}
			if magic[0] != 0x1f || magic[1] != 0x8b {
				c.die("no gzip/bzip2/xz magic")
			}
		}
		if u.stdout || u.test {
			file = false
		}
		sink := &gzSink{c: c, discard: u.test}
		newName := ""
		if file {
			if u.decompress {
				newName = gunzipName(name)
				if newName == "" {
					c.errorf("%s: unknown suffix - ignored", name)
					status = 1
					continue
				}
			} else {
				newName = name + ".gz"
			}
			p := c.abs(newName)
			if u.force {
				if i, err := c.fs().Lstat(p); err == nil && !i.Mode.IsDir() {
					c.fs().Remove(p, false)
				}
			}
			if _, err := c.fs().Lstat(p); err == nil {
				c.perror(vfs.EEXIST, "can't open '%s'", newName)
				status = 1
				continue
			}
			id := c.p.Identity()
			if err := c.fs().WriteFile(p, nil, info.Mode.Perm()&^c.umask(), false, id.UID, id.GID); err != nil {
				c.perror(err, "can't open '%s'", newName)
				status = 1
				continue
			}
			sink.file = p
		}
		var n int64
		var mtime uint32
		ok := true
		if u.decompress {
			n, mtime, ok = c.gunzip(br, sink, !u.zcat)
			if !ok && !u.zcat {
				status = 1
			}
		} else {
			c.gzip(br, sink)
		}
		if !file {
			continue
		}
		del := newName
		if ok {
			if mtime != 0 {
				c.fs().Chtimes(c.abs(newName), time.Unix(int64(mtime), 0))
			}
			if u.verbose {
				percent := uint64(0)
				if n != 0 {
					percent = uint64(info.Size) * 100 / uint64(n)
				}
				c.out.Flush()
				c.p.Stderr().Write([]byte(name + ": " + itoa(int64(uint32(100-percent))) + "% - replaced with " + newName + "\n"))
			}
			del = name
			if u.keep {
				del = ""
			}
		}
		if del != "" {
			if err := c.fs().Remove(c.abs(del), false); err != nil {
				if i, serr := c.fs().Lstat(c.abs(del)); serr == nil && i.Mode.IsDir() {
					err = vfs.EISDIR
				}
				c.perror(err, "can't remove file '%s'", del)
				c.exit(1)
			}
		}
	}
	return status
}

// gzip packs r into w as one gzip member with no name and no time, as busybox's does
// from a file or stdin. A read error ends the input (a directory packs as empty).
func (c *cmd) gzip(r io.Reader, w *gzSink) {
	zw, _ := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	zw.OS = 3 // Unix
	buf := make([]byte, 32<<10)
	for {
		c.tick()
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := zw.Write(buf[:n]); werr != nil {
				c.perror(werr, "write")
				c.exit(1)
			}
		}
		if err != nil {
			break
		}
	}
	if err := zw.Close(); err != nil {
		c.perror(err, "write")
		c.exit(1)
	}
}

// gunzip unpacks the gzip members of r into w, as busybox's unpack_gz_stream: members
// follow one another while the next two bytes are gzip's magic, and anything else after a
// member ends the stream quietly. withMagic is false when zcat read the first magic
// already. It returns the bytes unpacked, the last member's time, and false (its message
// printed) on corrupt input.
func (c *cmd) gunzip(br *bufio.Reader, w *gzSink, withMagic bool) (int64, uint32, bool) {
	if withMagic {
		magic := make([]byte, 2)
		if n, _ := io.ReadFull(br, magic); n < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
			c.errorf("invalid magic")
			return 0, 0, false
		}
	}
	var total int64
	var mtime uint32
	for {
		t, ok := gzHeader(br)
		if !ok {
			c.errorf("corrupted data")
			return total, mtime, false
		}
		mtime = t
		crc := crc32.NewIEEE()
		fr := flate.NewReader(br)
		start := w.n
		err := gzInflate(fr, io.MultiWriter(w, crc))
		n := w.n - start
		total += n
		if err != nil {
			var werr *gzWriteError
			switch {
			case errors.As(err, &werr):
				c.perror(werr.err, "write")
			case errors.Is(err, io.ErrUnexpectedEOF):
				c.errorf("unexpected end of file")
			default:
				c.errorf("corrupted data")
			}
			return total, mtime, false
		}
		var trailer [8]byte
		if _, err := io.ReadFull(br, trailer[:]); err != nil {
			c.errorf("corrupted data")
			return total, mtime, false
		}
		if binary.LittleEndian.Uint32(trailer[:4]) != crc.Sum32() {
			c.errorf("crc error")
			return total, mtime, false
		}
		ok = true
		if binary.LittleEndian.Uint32(trailer[4:]) != uint32(n) {
			c.errorf("incorrect length")
			ok = false
		}
		next, err := br.Peek(2)
		if err != nil || next[0] != 0x1f || next[1] != 0x8b {
			return total, mtime, ok
		}
		br.Discard(2)
	}
}

// gzInflate copies what fr unpacks to w in windows of 32 KiB, as busybox's inflate
// writes its window when full and at the end: what an error cuts short of a window is
// not written.
func gzInflate(fr io.Reader, w io.Writer) error {
	window := make([]byte, 32<<10)
	n := 0
	for {
		m, err := fr.Read(window[n:])
		n += m
		if n == len(window) || err == io.EOF && n > 0 {
			if _, werr := w.Write(window[:n]); werr != nil {
				return werr
			}
			n = 0
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// gzWriteError is a failed write of what was unpacked, told from a read error.
type gzWriteError struct{ err error }

func (e *gzWriteError) Error() string { return e.err.Error() }

// gzHeader reads a member's header after its magic: method 8, then the optional extra
// field, name, comment and header crc, skipped. It returns the member's time.
func gzHeader(br *bufio.Reader) (uint32, bool) {
	var h [8]byte
	if _, err := io.ReadFull(br, h[:]); err != nil || h[0] != 8 {
		return 0, false
	}
	flags := h[1]
	if flags&0x04 != 0 {
		var x [2]byte
		if _, err := io.ReadFull(br, x[:]); err != nil {
			return 0, false
		}
		if _, err := br.Discard(int(binary.LittleEndian.Uint16(x[:]))); err != nil {
			return 0, false
		}
	}
	for _, bit := range []byte{0x08, 0x10} { // a name, a comment: to a NUL
		for flags&bit != 0 {
			b, err := br.ReadByte()
			if err != nil {
				return 0, false
			}
			if b == 0 {
				break
			}
		}
	}
	if flags&0x02 != 0 {
		if _, err := br.Discard(2); err != nil {
			return 0, false
		}
	}
	return binary.LittleEndian.Uint32(h[2:6]), true
}
