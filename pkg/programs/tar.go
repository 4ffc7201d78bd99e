package programs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/shell"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// tar c|x|t [-zvOkmoh] [-f TARFILE] [-C DIR] [FILE]...: busybox's archival/tar.c. -c
// writes an archive with Go's archive/tar (GNU format: long names as ././@LongLink, as
// busybox's); -t and -x read one a header at a time with busybox's checks and messages
// ("invalid tar magic", "short read", "FILE: not found in archive"), listing names (-t),
// names with modes, owners, sizes and times (-tv), extracting (-x) into the filesystem a
// block at a time, or to stdout (-O). -z packs and unpacks with gzip, -j unpacks bzip2
// (packing it, or xz with -J, needs a compressor the simulated image lacks); a gzip or
// bzip2 archive is also recognised without them, as busybox's FEATURE_TAR_AUTODETECT
// does. The first argument may lack its dash ("tar cf x.tar dir", "tar xvf -").
func runTar(c *cmd) int {
	if len(c.args) > 0 && c.args[0] != "" && c.args[0][0] != '-' {
		// busybox moves the first argument's f to its end, so that "tar fx F" reads F.
		a := c.args[0]
		if i := strings.IndexByte(a, 'f'); i >= 0 {
			a = a[:i] + a[i+1:] + "f"
		}
		c.args = append([]string{"-" + a}, c.args[1:]...)
	}
	o, files := c.getopt("txC:f:OopvkchjT:X:zJam", []getopt.Long{
		{Name: "list", Key: 't'}, {Name: "extract", Key: 'x'}, {Name: "directory=", Key: 'C'},
		{Name: "file=", Key: 'f'}, {Name: "to-stdout", Key: 'O'}, {Name: "same-permissions", Key: 'p'},
		{Name: "verbose", Key: 'v'}, {Name: "keep-old", Key: 'k'}, {Name: "create", Key: 'c'},
		{Name: "dereference", Key: 'h'}, {Name: "gzip", Key: 'z'}, {Name: "touch", Key: 'm'},
		{Name: "to-command=", Key: 6},
		{Name: "no-same-owner", Key: 'o'}, {Name: "auto-compress", Key: 'a'},
		{Name: "overwrite", Key: 1}, {Name: "no-recursion", Key: 2}, {Name: "numeric-owner", Key: 3},
		{Name: "no-same-permissions", Key: 4}, {Name: "strip-components=", Key: 5},
	})
	modes := 0
	for _, b := range []byte{'c', 't', 'x'} {
		if o.Has(b) {
			modes++
		}
	}
	if modes != 1 {
		c.showUsage(1)
	}
	t := &tarRun{c: c, o: o, verbose: o.Count('t') + o.Count('v'), archive: "-"}
	if o.Has(5) {
		t.strip = c.positive(o.Val(5))
	}
	if o.Has('f') {
		t.archive = o.Val('f')
	}
	for _, f := range files {
		if len(f) > 1 {
			f = strings.TrimSuffix(f, "/")
		}
		t.accept = append(t.accept, f)
	}
	if o.Has('c') {
		return t.create()
	}
	if o.Has(6) {
		// Set once for every command; tar outlives the commands that stop reading.
		t.env = setenv(c.environ(), "TAR_FILETYPE=f")
		c.p.Trap(shell.SignalNames["PIPE"], true)
	}
	return t.read()
}

type tarRun struct {
	c       *cmd
	o       getopt.Result
	verbose int
	archive string
	accept  []string
	base    string // -C's directory, absolute ("" for the working one)
	warned  bool   // the leading '/' message is printed once
	passed  map[string]bool
	strip   int      // --strip-components
	env     []string // --to-command's environment: the process's and TAR_FILETYPE
}

// path is name as the process sees it after -C.
func (t *tarRun) path(name string) string {
	if t.base == "" || strings.HasPrefix(name, "/") {
		return t.c.abs(name)
	}
	return path.Join(t.base, name)
}

// chdir is -C: busybox changes directory after opening the archive.
func (t *tarRun) chdir() {
	dir := t.o.Val('C')
	if !t.o.Has('C') {
		return
	}
	info, err := t.c.fs().Stat(t.c.abs(dir))
	if err == nil && !info.Mode.IsDir() {
		err = vfs.ENOTDIR
	}
	if err != nil {
		t.c.perror(err, "can't change directory to '%s'", dir)
		t.c.exit(1)
	}
	t.base = t.c.abs(dir)
}

// stripUnsafe is busybox's strip_unsafe_prefix: leading slashes, "../" and everything up
// to a "/../" go, with a message the first time.
func (t *tarRun) stripUnsafe(name string) string {
	cp := name
	for {
		switch {
		case strings.HasPrefix(cp, "/"):
			cp = cp[1:]
			continue
		case strings.HasPrefix(cp, "../"):
			cp = cp[3:]
			continue
		}
		i := strings.Index(cp, "/../")
		if i < 0 {
			break
		}
		cp = cp[i+4:]
	}
	if len(cp) != len(name) && !t.warned {
		t.warned = true
		t.c.errorf("removing leading '%s' from member names", name[:len(name)-len(cp)])
	}
	return cp
}

// tarOut is the archive being written: stdout or a file, appended to as it comes.
type tarOut struct {
	c    *cmd
	file string
}

func (w *tarOut) Write(b []byte) (int, error) {
	w.c.tick()
	if w.file == "" {
		return w.c.out.Write(b)
	}
	id := w.c.p.Identity()
	if err := w.c.fs().WriteFile(w.file, b, 0, true, id.UID, id.GID); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (t *tarRun) create() int {
	c := t.c
	if len(t.accept) == 0 {
		c.die("empty archive")
	}
	out := &tarOut{c: c}
	if t.archive != "-" {
		out.file = c.abs(t.archive)
		if isDevice(out.file) {
			out.file = ""
		} else {
			id := c.p.Identity()
			if err := c.fs().WriteFile(out.file, nil, 0o666&^c.umask(), false, id.UID, id.GID); err != nil {
				c.perror(err, "can't open '%s'", t.archive)
				c.exit(1)
			}
		}
	}
	t.chdir()
	var w io.Writer = out
	var zw *gzip.Writer
	if t.o.Has('z') || t.o.Has('a') && out.file != "" && strings.HasSuffix(t.archive, "gz") {
		zw = gzip.NewWriter(out)
		zw.OS = 3
		w = zw
	}
	for _, z := range []struct {
		opt  byte
		prog string
	}{{'j', "bzip2"}, {'J', "xz"}} {
		if t.o.Has(z.opt) {
			// busybox runs the image's compressor; the simulated image has neither.
			c.perror(vfs.ENOENT, "can't execute '%s'", z.prog)
			c.exit(1)
		}
	}
	tw := tar.NewWriter(w)
	failed := false
	for _, name := range t.accept {
		if !t.add(tw, out, name, true) {
			failed = true
		}
	}
	tw.Close()
	if zw != nil {
		zw.Close()
	}
	if failed {
		c.errorf("error exit delayed from previous errors")
		return 1
	}
	return 0
}

// add writes name (and, a directory, what is in it) to the archive; false after an
// error, which is printed and does not stop the rest.
func (t *tarRun) add(tw *tar.Writer, out *tarOut, name string, top bool) bool {
	c := t.c
	c.tick()
	p := t.path(name)
	var info vfs.Info
	var err error
	if t.o.Has('h') {
		info, err = c.fs().Stat(p)
	} else {
		info, err = c.fs().Lstat(p)
	}
	if err != nil {
		c.perror(err, "%s", name)
		return false
	}
	ok := true
	hname := t.stripUnsafe(name)
	if hname != "" {
		if out.file != "" && p == out.file {
			c.errorf("%s: file is the archive; skipping", name)
			return true
		}
		if !t.header(tw, out, name, hname, p, info) {
			return false
		}
	}
	if info.Mode.IsDir() && !t.o.Has(2) {
		names, err := c.fs().ReadDirNames(p)
		if err != nil {
			c.perror(err, "%s", name)
			return false
		}
		for _, n := range names {
			if !t.add(tw, out, joinPath(name, n), false) {
				ok = false
			}
		}
	}
	return ok
}

// header writes one entry: its header and, a regular file, its content.
func (t *tarRun) header(tw *tar.Writer, out *tarOut, name, hname, p string, info vfs.Info) bool {
	c := t.c
	h := &tar.Header{Name: hname, Mode: int64(unixMode(info.Mode)), Uid: int(info.UID), Gid: int(info.GID),
		Uname: c.userName(info.UID), Gname: c.groupName(info.GID), ModTime: time.Unix(max(info.ModTime.Unix(), 0), 0),
		Format: tar.FormatGNU}
	var r io.Reader
	switch {
	case info.Mode&fs.ModeSymlink != 0:
		h.Typeflag, h.Linkname = tar.TypeSymlink, info.Target
	case info.Mode.IsDir():
		h.Typeflag = tar.TypeDir
		h.Name += "/"
	case info.Mode&fs.ModeNamedPipe != 0:
		h.Typeflag = tar.TypeFifo
	case info.Mode&fs.ModeSocket != 0:
		c.errorf("%s: socket ignored", name)
		return true
	case info.Mode.IsRegular():
		f, err := c.open(p)
		if err != nil {
			c.perror(err, "can't open '%s'", name)
			return false
		}
		h.Typeflag, h.Size, r = tar.TypeReg, info.Size, f
	default:
		c.errorf("%s: unknown file type", name)
		return false
	}
	if err := tw.WriteHeader(h); err != nil {
		c.perror(err, "write")
		c.exit(1)
	}
	if t.verbose > 0 {
		line := hname
		if info.Mode.IsDir() {
			line += "/"
		}
		if out.file == "" {
			c.out.Flush()
			io.WriteString(c.p.Stderr(), line+"\n")
		} else {
			c.write(line + "\n")
		}
	}
	if r != nil {
		buf := make([]byte, 32<<10)
		left := info.Size
		for left > 0 {
			c.tick()
			n, err := r.Read(buf[:min(int64(len(buf)), left)])
			if n > 0 {
				if _, werr := tw.Write(buf[:n]); werr != nil {
					c.perror(werr, "write")
					c.exit(1)
				}
				left -= int64(n)
			}
			if err != nil && left > 0 {
				c.die("short read from %s, aborting", name) // the file shrank
			}
		}
	}
	return true
}

// tarEntry is a header as busybox's get_header_tar makes it.
type tarEntry struct {
	name, link   string
	mode         uint32 // permission bits
	typ          byte
	uid, gid     int64
	uname, gname string
	size, mtime  int64
}

// tarIn reads an archive's blocks, ungzipping them if asked or if they turn out gzip'd.
type tarIn struct {
	t      *tarRun
	r      *bufio.Reader
	offset int64
	file   bool // a file, not a stream: busybox's autodetection may look again
}

// block reads 512 bytes; n is how many there were.
func (in *tarIn) block(b []byte) int {
	in.t.c.tick()
	n, _ := io.ReadFull(in.r, b)
	return n
}

// gunzip makes in read what its gzip stream unpacks to.
func (in *tarIn) gunzip() {
	zr, err := gzip.NewReader(in.r)
	if err != nil {
		in.t.c.errorf("invalid magic")
		in.r = bufio.NewReader(bytes.NewReader(nil))
		return
	}
	in.r = bufio.NewReaderSize(&gzErrReader{c: in.t.c, r: zr}, 32<<10)
}

// bunzip2 makes in read what its bzip2 stream unpacks to.
func (in *tarIn) bunzip2() {
	in.r = bufio.NewReaderSize(&gzErrReader{c: in.t.c, r: bzip2.NewReader(in.r)}, 32<<10)
}

// gzErrReader reports a broken gzip stream as busybox's unpacker does, then ends.
type gzErrReader struct {
	c    *cmd
	r    io.Reader
	done bool
}

func (g *gzErrReader) Read(b []byte) (int, error) {
	if g.done {
		return 0, io.EOF
	}
	n, err := g.r.Read(b)
	if err != nil && err != io.EOF {
		g.done = true
		if err == io.ErrUnexpectedEOF {
			g.c.errorf("unexpected end of file")
		} else if err == gzip.ErrChecksum {
			g.c.errorf("crc error")
		} else {
			g.c.errorf("corrupted data")
		}
		err = io.EOF
	}
	return n, err
}

// octal is busybox's GET_OCTAL: a number in octal (after blanks, up to a NUL or space),
// or base-256 when its first byte's top bit is set; anything else is fatal.
func (t *tarRun) octal(f []byte) int64 {
	i := 0
	for i < len(f) && (f[i] == ' ' || f[i] >= '\t' && f[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(f) && (f[i] == '+' || f[i] == '-') {
		neg = f[i] == '-'
		i++
	}
	start := i
	var v int64
	for i < len(f) && f[i] >= '0' && f[i] <= '7' {
		v = v*8 + int64(f[i]-'0')
		i++
	}
	if i == start {
		i = 0 // no digits: strtoull ends where it began
	}
	if i < len(f) && f[i] != 0 && f[i] != ' ' {
		if f[0]&0x80 == 0 {
			t.c.die("corrupted octal value in tar header")
		}
		v = int64(int8(f[0]<<1) >> 1)
		for _, b := range f[1:] {
			v = v<<8 + int64(b)
		}
		return v
	}
	if neg {
		v = -v
	}
	return v
}

func cstr(f []byte) string {
	if i := bytes.IndexByte(f, 0); i >= 0 {
		return string(f[:i])
	}
	return string(f)
}

func (t *tarRun) read() int {
	c := t.c
	in := &tarIn{t: t}
	if t.archive == "-" {
		in.r = bufio.NewReaderSize(c.stdin(), 32<<10)
	} else {
		r, err := c.open(t.archive)
		if err != nil {
			c.perror(err, "can't open '%s'", t.archive)
			c.exit(1)
		}
		in.r = bufio.NewReaderSize(r, 32<<10)
		_, in.file = r.(*vfs.Reader)
	}
	t.chdir()
	switch {
	case t.o.Has('z'):
		in.gunzip()
	case t.o.Has('j'):
		in.bunzip2()
	}
	t.passed = map[string]bool{}
	status := 1 // an archive without a header is none
	end := false
	var longName, longLink *string
	block := make([]byte, 512)
	for {
		n := in.block(block)
		if n == 0 {
			if in.offset == 0 {
				c.errorf("short read")
			}
			break
		}
		if n != 512 {
			t.autodetect(in, block[:n])
			continue
		}
		if block[0] == 0 && block[345] == 0 && longName == nil {
			in.offset += 512
			if end {
				break
			}
			end, status = true, 0
			continue
		}
		end = false
		if !bytes.HasPrefix(block[257:], []byte("ustar")) && !bytes.Equal(block[257:262], make([]byte, 5)) {
			t.autodetect(in, block)
			continue
		}
		in.offset += 512
		sumU, sumS := 8*32, 8*32 // the checksum field counts as spaces
		for i, b := range block {
			if i >= 148 && i < 156 {
				continue
			}
			sumU += int(b)
			sumS += int(int8(b))
		}
		if sum := int(t.octal(block[148:156])); sum != sumU && sum != sumS {
			c.die("invalid tar header checksum")
		}
		status = 0
		mtime, size := t.octal(block[136:148]), t.octal(block[124:136])
		gid, uid := t.octal(block[116:124]), t.octal(block[108:116])
		e := tarEntry{typ: block[156], mode: uint32(t.octal(block[100:108]) & 0o7777), uid: uid,
			gid: gid, size: size, mtime: mtime,
			uname: cstr(block[265:297]), gname: cstr(block[297:329])}
		if e.typ == 0 {
			e.typ = '0'
		}
		names := e.typ >= '0' && e.typ <= '7'
		if names {
			e.link = cstr(block[157:257])
			e.name = cstr(block[0:100])
			if prefix := cstr(block[345:500]); prefix != "" {
				e.name = joinPath(prefix, e.name)
			}
		}
		switch e.typ {
		case '1', '2', '3', '4', '5', '6':
			e.size = 0
		case '0', '7':
			if strings.HasSuffix(e.name, "/") {
				e.typ, e.size = '5', 0
			}
		case 'L', 'K':
			if e.size < 0 || e.size > 0xfff {
				c.die("bad archive")
			}
			data := t.readData(in, e.size)
			s := cstr(data)
			if e.typ == 'L' {
				longName = &s
			} else {
				longLink = &s
			}
			continue
		case 'x', 'g':
			if e.size < 0 || e.size > 0xfffff {
				c.errorf("warning: skipping header '%c'", e.typ)
				t.skipData(in, e.size)
				continue
			}
			data := t.readData(in, e.size)
			if e.typ == 'x' {
				for _, rec := range paxRecords(data) {
					v := rec[1]
					switch rec[0] {
					case "path":
						longName = &v
					case "linkpath":
						longLink = &v
					}
				}
			}
			continue
		case 'V':
			c.errorf("warning: skipping header '%c'", e.typ)
			t.readData(in, e.size)
			continue
		default:
			c.die("unknown typeflag: 0x%x", e.typ)
		}
		if longName != nil {
			e.name, longName = *longName, nil
		}
		if longLink != nil {
			e.link, longLink = *longLink, nil
		}
		e.name = t.stripUnsafe(e.name)
		t.entry(in, e)
	}
	for _, a := range t.accept {
		if !t.passed[a] {
			c.die("%s: not found in archive", a)
		}
	}
	return status
}

// autodetect is what busybox does with a first block that is no tar header: a gzip'd
// archive (in a file) is unpacked and read again; anything else is fatal.
func (t *tarRun) autodetect(in *tarIn, data []byte) {
	if in.offset == 0 && in.file && len(data) >= 3 {
		gz := data[0] == 0x1f && data[1] == 0x8b
		bz := string(data[:3]) == "BZh"
		if gz || bz {
			in.r = bufio.NewReader(io.MultiReader(bytes.NewReader(append([]byte(nil), data...)), in.r))
			in.file = false
			if gz {
				in.gunzip()
			} else {
				in.bunzip2()
			}
			return
		}
	}
	if len(data) < 2 && in.offset == 0 && in.file {
		t.c.die("short read")
	}
	t.c.die("invalid tar magic")
}

// readData reads an entry's data whole (a long name or pax records, which the caller
// bounds as busybox does) and its padding.
func (t *tarRun) readData(in *tarIn, size int64) []byte {
	data := make([]byte, size)
	if _, err := io.ReadFull(in.r, data); err != nil {
		t.c.die("short read")
	}
	t.skipPad(in, size)
	return data
}

func (t *tarRun) skipPad(in *tarIn, size int64) {
	pad := (512 - size%512) % 512
	in.r.Discard(int(pad))
	in.offset += size + pad
}

func paxRecords(data []byte) [][2]string {
	var out [][2]string
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			break
		}
		n, err := strconv.Atoi(string(data[:sp]))
		if err != nil || n <= sp || n > len(data) {
			break
		}
		rec := strings.TrimSuffix(string(data[sp+1:n]), "\n")
		if k, v, ok := strings.Cut(rec, "="); ok {
			out = append(out, [2]string{k, v})
		}
		data = data[n:]
	}
	return out
}

// matches is busybox's filter: an entry is taken when no FILE was named, or when one
// names it or a directory above it (a shell pattern).
func (t *tarRun) matches(name string) (string, bool) {
	if len(t.accept) == 0 {
		return "", true
	}
	trimmed := strings.TrimSuffix(name, "/")
	for _, a := range t.accept {
		for p := trimmed; ; {
			if ok, _ := path.Match(a, p); ok || a == p {
				return a, true
			}
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				break
			}
			p = p[:i]
		}
	}
	return "", false
}

// entry lists, extracts or skips one entry.
func (t *tarRun) entry(in *tarIn, e tarEntry) {
	c := t.c
	if _, ok := t.matches(e.name); !ok {
		t.skipData(in, e.size)
		return
	}
	switch {
	case t.verbose == 1:
		c.write(e.name + "\n")
	case t.verbose > 1:
		c.write(t.listLine(e) + "\n")
	}
	e.name = strings.TrimSuffix(e.name, "/")
	t.passed[e.name] = true
	// The data goes where busybox's last data action says, with -t as with -x:
	// --to-command, then -O, then the files.
	regular := e.typ == '0' || e.typ == '7'
	switch {
	case t.o.Has(6):
		if regular {
			t.toCommand(in, e)
			return
		}
	case t.o.Has('O'):
		if regular {
			// The data goes straight to stdout, the names through stdio's buffer, as
			// busybox writes them: the names come out later.
			t.copyData(in, e.size, func(b []byte) error { _, err := c.p.Stdout().Write(b); return err })
			return
		}
	case t.o.Has('x'):
		t.extract(in, e)
		return
	}
	t.skipData(in, e.size)
}

// toCommand is --to-command (busybox's data_extract_to_command): the user's shell runs
// the command with the file's data on its standard input and the entry in TAR_*
// variables; tar dies when the command fails. What the command does not read is dropped.
// The names -v prints stay in stdio's buffer meanwhile, as busybox forks without
// flushing it.
func (t *tarRun) toCommand(in *tarIn, e tarEntry) {
	c := t.c
	command := t.o.Val(6)
	env := t.env
	for _, kv := range []string{
		fmt.Sprintf("TAR_MODE=%o", e.mode|0o100000), "TAR_FILENAME=" + e.name, "TAR_REALNAME=" + e.name,
		"TAR_UNAME=" + nullString(e.uname), "TAR_GNAME=" + nullString(e.gname),
		fmt.Sprintf("TAR_SIZE=%d", max(e.size, 0)), fmt.Sprintf("TAR_UID=%d", e.uid), fmt.Sprintf("TAR_GID=%d", e.gid),
	} {
		env = setenv(env, kv)
	}
	sh := "/bin/sh" // get_shell_name: $SHELL, else the user's login shell
	if v := c.p.Getenv("SHELL"); v != "" {
		sh = v
	} else if u, ok := c.userByID(int64(c.p.Identity().UID)); ok && u.shell != "" {
		sh = u.shell
	}
	child, pipe, err := c.p.Popen(shell.Spec{Path: sh, Argv: []string{sh, "-c", command}, Env: env}, true)
	if err != nil {
		// The forked child says so and exits 1: tar then sees the command fail.
		c.perror(err, "can't execute '%s'", sh)
		c.die("'%s' returned status 1", command)
	}
	t.copyData(in, e.size, func(b []byte) error {
		pipe.Write(b) // bb_copyfd_exact_size with a negative size: write errors are ignored
		return nil
	})
	pipe.Close()
	c.p.Pending() // the SIGPIPEs of a command that stopped reading, ignored
	status := c.p.Wait(child)
	if sig := child.KilledBy(); sig != 0 {
		c.die("'%s' terminated by signal %d", command, sig)
	}
	if status != 0 {
		c.die("'%s' returned status %d", command, status)
	}
}

// nullString is how glibc's printf prints a NULL %s: busybox passes the header's user and
// group names, NULL when the archive has none.
func nullString(s string) string {
	if s == "" {
		return "(null)"
	}
	return s
}

// listLine is tar -tv's line: mode, owner/group, size, time, name and link.
func (t *tarRun) listLine(e tarEntry) string {
	m := fileMode(e.mode)
	switch e.typ {
	case '2':
		m |= fs.ModeSymlink
	case '3':
		m |= fs.ModeDevice | fs.ModeCharDevice
	case '4':
		m |= fs.ModeDevice
	case '5':
		m |= fs.ModeDir
	case '6':
		m |= fs.ModeNamedPipe
	}
	user := e.uname
	if user == "" {
		user = strconv.FormatInt(e.uid, 10)
	}
	group := e.gname
	if group == "" {
		group = strconv.FormatInt(e.gid, 10)
	}
	tm := time.Unix(e.mtime, 0).UTC()
	s := fmt.Sprintf("%s %s/%s %9d %4d-%02d-%02d %02d:%02d:%02d %s", modeString(m), user, group, e.size,
		tm.Year(), int(tm.Month()), tm.Day(), tm.Hour(), tm.Minute(), tm.Second(), e.name)
	if e.link != "" {
		s += " -> " + e.link
	}
	return s
}

func (t *tarRun) skipData(in *tarIn, size int64) {
	t.copyData(in, size, nil)
}

// copyData passes an entry's data to write (nil: drops it), a block at a time, and its
// padding.
func (t *tarRun) copyData(in *tarIn, size int64, write func([]byte) error) {
	size = max(size, 0) // a negative base-256 size holds nothing
	buf := make([]byte, 32<<10)
	left := size
	for left > 0 {
		t.c.tick()
		n, err := io.ReadFull(in.r, buf[:min(int64(len(buf)), left)])
		if n > 0 && write != nil {
			if werr := write(buf[:n]); werr != nil {
				t.c.perror(werr, "write")
				t.c.exit(1)
			}
		}
		left -= int64(n)
		if err != nil {
			t.c.die("short read")
		}
	}
	pad := (512 - size%512) % 512
	in.r.Discard(int(pad))
	in.offset += size + pad
}

// mkdirs makes the directories an entry's name leads through, as busybox's
// bb_make_directory: one that is there as something else is told, not fatal.
func (t *tarRun) mkdirs(dir string) {
	c := t.c
	id := c.p.Identity()
	for i := 0; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' || i == 0 {
			continue
		}
		part := dir[:i]
		info, err := c.fs().Stat(t.path(part))
		if err == nil {
			if !info.Mode.IsDir() {
				c.perror(vfs.EEXIST, "can't create directory '%s'", part)
				return
			}
			continue
		}
		if err := c.fs().Mkdir(t.path(part), 0o777&^c.umask(), id.UID, id.GID); err != nil {
			c.perror(err, "can't create directory '%s'", part)
			return
		}
	}
}

// extract makes an entry in the filesystem as busybox's data_extract_all.
func (t *tarRun) extract(in *tarIn, e tarEntry) {
	c := t.c
	fsys := c.fs()
	id := c.p.Identity()
	hardLink := ""
	if e.typ == '1' {
		hardLink = e.link
	}
	// --strip-components: an entry with no more components than that is skipped.
	for n := 0; n < t.strip; n++ {
		i := strings.IndexByte(e.name, '/')
		if i < 0 || i == len(e.name)-1 {
			t.skipData(in, e.size)
			return
		}
		e.name = e.name[i+1:]
		if hardLink != "" {
			j := strings.IndexByte(hardLink, '/')
			if j < 0 || j == len(hardLink)-1 {
				t.skipData(in, e.size)
				return
			}
			hardLink = hardLink[j+1:]
		}
	}
	p := t.path(e.name)
	if i := strings.LastIndexByte(e.name, '/'); i >= 0 {
		t.mkdirs(e.name[:i])
	}
	if e.typ != '5' && !t.o.Has('k') {
		if hardLink != "" && hardLink == e.name {
			t.skipData(in, e.size)
			return
		}
		err := vfs.Errno(0)
		if info, lerr := fsys.Lstat(p); lerr == nil && info.Mode.IsDir() {
			err = vfs.EISDIR // unlink(2) of a directory
		} else if rerr := fsys.Remove(p, false); rerr != nil {
			err = vfs.ErrnoOf(rerr)
		}
		if err != 0 && err != vfs.ENOENT {
			c.perror(err, "can't remove old file %s", e.name)
			c.exit(1)
		}
	}
	switch e.typ {
	case '1':
		t.skipData(in, e.size)
		if err := c.hardLink(t.path(hardLink), p); err != nil {
			c.perror(err, "can't create hardlink '%s'", e.name)
		}
		return
	case '0', '7':
		if _, err := fsys.Lstat(p); err == nil {
			c.perror(vfs.EEXIST, "can't open '%s'", e.name)
			c.exit(1)
		}
		if err := fsys.WriteFile(p, nil, fs.FileMode(e.mode)&0o777&^c.umask(), false, id.UID, id.GID); err != nil {
			c.perror(err, "can't open '%s'", e.name)
			c.exit(1)
		}
		t.copyData(in, e.size, func(b []byte) error {
			return fsys.WriteFile(p, b, 0, true, id.UID, id.GID)
		})
	case '5':
		t.skipData(in, e.size)
		if err := fsys.Mkdir(p, fs.FileMode(e.mode)&0o777&^c.umask(), id.UID, id.GID); err != nil && vfs.ErrnoOf(err) != vfs.EEXIST {
			c.perror(err, "can't make dir %s", e.name)
		}
	case '2':
		t.skipData(in, e.size)
		if err := fsys.Symlink(e.link, p); err != nil {
			c.perror(err, "can't create symlink '%s' to '%s'", e.name, e.link)
		}
		return
	default:
		t.skipData(in, e.size)
		c.errorf("can't create node %s: Operation not permitted", e.name)
		return
	}
	if !t.o.Has('o') {
		uid, gid := e.uid, e.gid
		if !t.o.Has(3) {
			if u, ok := c.userByName(e.uname); ok && e.uname != "" {
				uid = u.uid
			}
			if g, ok := c.groupByName(e.gname); ok && e.gname != "" {
				gid = g.gid
			}
		}
		fsys.Chown(p, uid, gid)
	}
	if id.UID == 0 && !t.o.Has(4) {
		fsys.Chmod(p, fileMode(e.mode))
	}
	if !t.o.Has('m') {
		fsys.Chtimes(p, time.Unix(e.mtime, 0))
	}
}
