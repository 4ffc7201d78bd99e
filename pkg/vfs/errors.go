package vfs

import (
	"errors"
	"io/fs"
)

// Errno is a system error as C's strerror words it, which is what busybox prints
// ("cat: can't open 'x': No such file or directory"). It matches the io/fs sentinels with
// errors.Is, so callers can test for fs.ErrNotExist.
type Errno int

// The errors the filesystem gives.
const (
	ENOENT    Errno = 2
	EACCES    Errno = 13
	EEXIST    Errno = 17
	ENOTDIR   Errno = 20
	EISDIR    Errno = 21
	EINVAL    Errno = 22
	EROFS     Errno = 30
	ENOTEMPTY Errno = 39
	ELOOP     Errno = 40
	EBUSY     Errno = 16
	EXDEV     Errno = 18
)

var errnoText = map[Errno]string{
	ENOENT:    "No such file or directory",
	EACCES:    "Permission denied",
	EEXIST:    "File exists",
	ENOTDIR:   "Not a directory",
	EISDIR:    "Is a directory",
	EINVAL:    "Invalid argument",
	EROFS:     "Read-only file system",
	ENOTEMPTY: "Directory not empty",
	ELOOP:     "Symbolic link loop",
	EBUSY:     "Resource busy",
	EXDEV:     "Invalid cross-device link",
}

func (e Errno) Error() string {
	if s, ok := errnoText[e]; ok {
		return s
	}
	return "Unknown error"
}

// Is lets errors.Is(err, fs.ErrNotExist) and friends hold for the matching errno.
func (e Errno) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e == ENOENT
	case fs.ErrExist:
		return e == EEXIST || e == ENOTEMPTY
	case fs.ErrPermission:
		return e == EACCES || e == EROFS
	case fs.ErrInvalid:
		return e == EINVAL
	}
	return false
}

// ErrnoOf is the errno an error carries, or EINVAL when it carries none.
func ErrnoOf(err error) Errno {
	var e Errno
	if errors.As(err, &e) {
		return e
	}
	return EINVAL
}
