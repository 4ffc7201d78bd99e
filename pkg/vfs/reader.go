package vfs

import (
	"io"
)

// Reader reads a file as it was when Open opened it: a snapshot, which costs no copy.
// Nothing written to the file afterwards is seen (an append neither: the reader ends
// where the file ended), and truncating or removing the file does not change what it
// reads, as a process that opened a file keeps reading its pages. Read and Seek share an
// offset and are not safe for concurrent use; ReadAt and Size are.
type Reader struct {
	c   content
	off int64
}

var (
	_ io.Reader   = (*Reader)(nil)
	_ io.ReaderAt = (*Reader)(nil)
	_ io.Seeker   = (*Reader)(nil)
)

// Size is the file's size when it was opened.
func (r *Reader) Size() int64 { return r.c.size() }

// Read reads from the offset on.
func (r *Reader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n := r.c.readAt(b, r.off)
	if n == 0 {
		return 0, io.EOF
	}
	r.off += int64(n)
	return n, nil
}

// ReadAt reads len(b) bytes from off, or what there is with io.EOF.
func (r *Reader) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, EINVAL
	}
	n := r.c.readAt(b, off)
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// Seek sets the offset Read reads from, as lseek does: past the end is allowed (reads
// there end at once).
func (r *Reader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.c.size()
	default:
		return r.off, EINVAL
	}
	if offset < 0 {
		return r.off, EINVAL
	}
	r.off = offset
	return offset, nil
}
