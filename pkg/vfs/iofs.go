package vfs

import (
	"errors"
	"io"
	"io/fs"
	"path"
)

// FS returns a read-only io/fs view of v: what a container sees, for code written against
// io/fs (fs.WalkDir, fs.Glob, template.ParseFS, testing/fstest). Names are io/fs's,
// relative to the view's root ("." is "/"); a symbolic link is followed by Open and Stat
// and read by ReadLink and Lstat, as fs.ReadLinkFS has it. The view is live: each call
// sees the filesystem as it is then, and an opened file reads the snapshot Open took.
func (v *View) FS() fs.FS { return iofs{v} }

// iofs adapts a View to fs.FS and its optional interfaces.
type iofs struct{ v *View }

var (
	_ fs.StatFS     = iofs{}
	_ fs.ReadDirFS  = iofs{}
	_ fs.ReadFileFS = iofs{}
	_ fs.ReadLinkFS = iofs{}
)

// abs maps an io/fs name to the view's path, or fails as io/fs says an invalid name does.
func abs(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return path.Join("/", name), nil
}

// pathError wraps a view's error (an Errno, which errors.Is matches to io/fs's sentinels)
// as io/fs reports errors.
func pathError(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func (f iofs) Open(name string) (fs.File, error) {
	p, err := abs("open", name)
	if err != nil {
		return nil, err
	}
	info, err := f.v.Stat(p)
	if err != nil {
		return nil, pathError("open", name, err)
	}
	info.Name = path.Base(name) // the name opened, not the link's target's
	if info.Mode.IsDir() {
		return &dirFile{fs: f, name: name, info: info}, nil
	}
	r, err := f.v.Open(p)
	if err != nil {
		return nil, pathError("open", name, err)
	}
	return &file{Reader: r, info: info}, nil
}

func (f iofs) Stat(name string) (fs.FileInfo, error) {
	p, err := abs("stat", name)
	if err != nil {
		return nil, err
	}
	info, err := f.v.Stat(p)
	if err != nil {
		return nil, pathError("stat", name, err)
	}
	info.Name = path.Base(name)
	return fileInfo{info}, nil
}

func (f iofs) Lstat(name string) (fs.FileInfo, error) {
	p, err := abs("lstat", name)
	if err != nil {
		return nil, err
	}
	info, err := f.v.Lstat(p)
	if err != nil {
		return nil, pathError("lstat", name, err)
	}
	info.Name = path.Base(name)
	return fileInfo{info}, nil
}

func (f iofs) ReadLink(name string) (string, error) {
	p, err := abs("readlink", name)
	if err != nil {
		return "", err
	}
	info, err := f.v.Lstat(p)
	if err != nil {
		return "", pathError("readlink", name, err)
	}
	if info.Mode&fs.ModeSymlink == 0 {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return info.Target, nil
}

func (f iofs) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := abs("readdir", name)
	if err != nil {
		return nil, err
	}
	entries, err := f.v.ReadDir(p)
	if err != nil {
		return nil, pathError("readdir", name, err)
	}
	out := make([]fs.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = e
	}
	return out, nil
}

func (f iofs) ReadFile(name string) ([]byte, error) {
	p, err := abs("readfile", name)
	if err != nil {
		return nil, err
	}
	data, err := f.v.ReadFile(p)
	if err != nil {
		return nil, pathError("readfile", name, err)
	}
	return data, nil
}

// file is an open regular file: the snapshot Open took.
type file struct {
	*Reader
	info Info
}

var (
	_ io.ReaderAt = (*file)(nil)
	_ io.Seeker   = (*file)(nil)
)

func (f *file) Stat() (fs.FileInfo, error) { return fileInfo{f.info}, nil }
func (f *file) Close() error               { return nil }

// dirFile is an open directory: ReadDir lists it (from its first call on) in n-sized
// slices, as fs.ReadDirFile has it.
type dirFile struct {
	fs      iofs
	name    string
	info    Info
	entries []fs.DirEntry
	read    bool
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return fileInfo{d.info}, nil }
func (d *dirFile) Close() error               { return nil }

func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: EISDIR}
}

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		entries, err := d.fs.ReadDir(d.name)
		if err != nil {
			return nil, err
		}
		d.entries, d.read = entries, true
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n:n]
	d.entries = d.entries[n:]
	return out, nil
}
