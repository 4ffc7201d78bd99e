package shell

import (
	"errors"
	"io"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// pipeSize is a pipe's buffer, as Linux's default: a writer waits when it is full.
const pipeSize = 64 << 10

// pipe connects a writer and a reader of the machine. Its counts are of open ends.
type pipe struct {
	buf     []byte
	readers int
	writers int
	// charged is what of buf the machine's cgroup was charged for (a pipe's buffer is the
	// kernel's memory, counted to the cgroup of whoever filled it); an Input fed from
	// outside is not.
	charged int64
	m       *Machine // whose cgroup was charged
}

// fill charges p's machine for n bytes p is about to write into the pipe.
func (pp *pipe) fill(p *Proc, n int) {
	if p.m.cfg.Memory == nil {
		return
	}
	p.m.chargeMachine(int64(n))
	pp.charged += int64(n)
	pp.m = p.m
}

// drained gives back what reading n bytes from the pipe freed.
func (pp *pipe) drained(p *Proc, n int) {
	if pp.charged == 0 {
		return
	}
	d := min(int64(n), pp.charged)
	pp.charged -= d
	pp.m.chargeMachine(-d)
}

// dropped gives back the whole buffer: nobody can read it any more.
func (pp *pipe) dropped() {
	if pp.charged != 0 {
		pp.m.chargeMachine(-pp.charged)
		pp.charged = 0
	}
}

// Input is a process's standard input fed from outside the machine (an exec session's
// stdin, a container's attached stdin). Feed and Close are called by the machine's owner.
type Input struct{ p *pipe }

// NewInput is an open input with nothing in it yet.
func NewInput() *Input { return &Input{p: &pipe{writers: 1}} }

// Feed appends b to what the process can read.
func (in *Input) Feed(b []byte) { in.p.buf = append(in.p.buf, b...) }

// Close is end of file, once what was fed has been read.
func (in *Input) Close() {
	if in.p.writers > 0 {
		in.p.writers--
	}
}

// StaticInput is an input that holds b and then ends.
func StaticInput(b []byte) *Input { return &Input{p: &pipe{buf: append([]byte(nil), b...)}} }

type fdKind uint8

const (
	fdNull   fdKind = iota // /dev/null: reads end, writes vanish
	fdPipeR                // the read end of a pipe
	fdPipeW                // the write end of a pipe
	fdOutput               // an Output outside the machine
	fdFile                 // a file of the filesystem, written through
	fdBytes                // a here-document's bytes, read from an offset
	fdReader               // a file opened for reading: its content as it was opened
)

// fd is an open file description. Several descriptors may share one (dup).
type fd struct {
	kind   fdKind
	closed bool
	refs   int32
	pipe   *pipe
	out    Output
	// *fdState is a file's, a here-document's or an opened file's state, apart: every
	// process has three descriptors, and a node of 10,000 pods 60,000 of them, few of
	// them files.
	*fdState
}

// fdState is what a descriptor of a file (fdFile), bytes (fdBytes) or an opened file
// (fdReader) keeps.
type fdState struct {
	fs   *vfs.View
	path string
	data []byte
	off  int
	file *vfs.Reader // fdReader's: it keeps the offset
}

func inputFD(in *Input) *fd {
	if in == nil {
		return &fd{kind: fdNull, refs: 1}
	}
	in.p.readers++
	return &fd{kind: fdPipeR, pipe: in.p, refs: 1}
}

func outputFD(out Output) *fd {
	if out == nil {
		return &fd{kind: fdNull, refs: 1}
	}
	return &fd{kind: fdOutput, out: out, refs: 1}
}

// dup is another reference to f, as dup(2) and fork share descriptions.
func (f *fd) dup() *fd {
	if f == nil {
		return nil
	}
	f.refs++
	return f
}

func (f *fd) close() {
	if f == nil || f.closed {
		return
	}
	f.refs--
	if f.refs > 0 {
		return
	}
	f.closed = true
	switch f.kind {
	case fdPipeR:
		f.pipe.readers--
		if f.pipe.readers == 0 {
			f.pipe.dropped()
		}
	case fdPipeW:
		f.pipe.writers--
	}
}

// newPipe returns the two ends of a fresh pipe.
func newPipe() (r, w *fd) {
	p := &pipe{readers: 1, writers: 1}
	return &fd{kind: fdPipeR, pipe: p, refs: 1}, &fd{kind: fdPipeW, pipe: p, refs: 1}
}

// errBrokenPipe is a write to a pipe nobody reads: the writer dies of SIGPIPE.
var errBrokenPipe = errors.New("Broken pipe")

// errBadFD is a read or write of a descriptor not open that way.
var errBadFD = errors.New("Bad file descriptor")

// read reads from f for p, waiting while a pipe is empty and has a writer.
func (f *fd) read(p *Proc, b []byte) (int, error) {
	if f == nil {
		return 0, errBadFD
	}
	switch f.kind {
	case fdNull:
		return 0, io.EOF
	case fdBytes:
		if f.off >= len(f.data) {
			return 0, io.EOF
		}
		n := copy(b, f.data[f.off:])
		f.off += n
		return n, nil
	case fdReader:
		return f.file.Read(b)
	case fdPipeR:
		for len(f.pipe.buf) == 0 {
			if f.pipe.writers == 0 {
				return 0, io.EOF
			}
			p.pipe = f.pipe
			p.interrupted = false
			p.suspend(reading)
			if p.takeInterrupt() && len(f.pipe.buf) == 0 {
				return 0, errInterrupted
			}
		}
		n := copy(b, f.pipe.buf)
		f.pipe.buf = f.pipe.buf[n:]
		f.pipe.drained(p, n)
		if len(f.pipe.buf) == 0 {
			f.pipe.buf = nil
		}
		return n, nil
	}
	return 0, errBadFD
}

// errInterrupted is a read a trapped signal cut short (EINTR).
var errInterrupted = errors.New("Interrupted system call")

// write writes b to f for p, waiting while a pipe is full.
func (f *fd) write(p *Proc, b []byte) (int, error) {
	if f == nil {
		return 0, errBadFD
	}
	switch f.kind {
	case fdNull:
		return len(b), nil
	case fdOutput:
		return f.out.Write(b)
	case fdFile:
		if err := f.fs.WriteFile(f.path, b, 0o666&^p.umask, true, p.id.UID, p.id.GID); err != nil {
			return 0, err
		}
		return len(b), nil
	case fdPipeW:
		written := 0
		for written < len(b) {
			if f.pipe.readers == 0 {
				p.deliver(SIGPIPE)
				return written, errBrokenPipe
			}
			room := pipeSize - len(f.pipe.buf)
			if room <= 0 {
				p.pipe = f.pipe
				p.suspend(writing)
				continue
			}
			n := min(room, len(b)-written)
			f.pipe.fill(p, n)
			f.pipe.buf = append(f.pipe.buf, b[written:written+n]...)
			written += n
		}
		return written, nil
	}
	return 0, errBadFD
}

// procReader and procWriter bind a descriptor number of p to io interfaces.
type procReader struct {
	p *Proc
	n int
}

func (r procReader) Read(b []byte) (int, error) { return r.p.fds[r.n].read(r.p, b) }

type procWriter struct {
	p *Proc
	n int
}

func (w procWriter) Write(b []byte) (int, error) {
	n, err := w.p.fds[w.n].write(w.p, b)
	if errors.Is(err, errBrokenPipe) && w.p.killSig != 0 {
		panic(errKilled{}) // SIGPIPE's default action
	}
	return n, err
}

// Stdin, Stdout and Stderr are p's standard streams. Reading an empty pipe or writing a
// full one waits (the program gives control back to the machine meanwhile).
func (p *Proc) Stdin() io.Reader  { return procReader{p, 0} }
func (p *Proc) Stdout() io.Writer { return procWriter{p, 1} }
func (p *Proc) Stderr() io.Writer { return procWriter{p, 2} }

// FD returns descriptor n as a reader and writer (for redirections to numbered
// descriptors).
func (p *Proc) FD(n int) (io.Reader, io.Writer) { return procReader{p, n}, procWriter{p, n} }

// ReadAll reads p's stdin to its end, charging p for what it keeps.
func (p *Proc) ReadAll() ([]byte, error) { return io.ReadAll(p.Holding(p.Stdin())) }

// Holding is r read by a program that keeps what it reads (sort, tac, a script read
// whole): p is charged for every byte before it is kept.
func (p *Proc) Holding(r io.Reader) io.Reader { return holdingReader{p, r} }

type holdingReader struct {
	p *Proc
	r io.Reader
}

func (h holdingReader) Read(b []byte) (int, error) {
	n, err := h.r.Read(b)
	h.p.Charge(int64(n))
	return n, err
}
