package programs

import (
	"io/fs"
	"math"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// truncate [-c] -s SIZE FILE...: busybox's coreutils/truncate.c. Each file cut to SIZE
// bytes, or extended with zeros to it (a k, K, M or G suffix multiplies by 1024 and its
// powers; busybox has no +, -, < or > sizes), created unless -c (a missing file with -c is
// no error). What the file grows by goes through the filesystem, which keeps the
// container's disk limit.
func runTruncate(c *cmd) int {
	o, files := c.getopt("cs:", nil)
	if !o.Has('s') || len(files) == 0 {
		c.showUsage(1)
	}
	size := c.xatoull(o.Val('s'), kMGSuffixes)
	status := 0
	for _, name := range files {
		c.tick()
		p := c.abs(name)
		info, err := c.fs().Stat(p)
		if name == "" {
			err = vfs.ENOENT // open("")
		}
		switch {
		case err == nil && info.Mode.IsDir():
			err = vfs.EISDIR
		case vfs.ErrnoOf(err) == vfs.ENOENT && !o.Has('c'):
			err = c.writeFile(name, nil, true) // open's O_CREAT
		}
		if err != nil {
			if vfs.ErrnoOf(err) != vfs.ENOENT || !o.Has('c') {
				c.perror(err, "%s: open", name)
				status = 1
			}
			continue
		}
		if info.Mode&fs.ModeNamedPipe != 0 { // no reader: O_NONBLOCK's ENXIO
			c.errorf("%s: open: No such device or address", name)
			status = 1
			continue
		}
		if size > math.MaxInt64 || isDevice(p) { // a negative off_t; a device
			err = vfs.EINVAL
		} else {
			err = c.fs().Truncate(p, int64(size))
		}
		if err != nil {
			c.perror(err, "%s: truncate", name)
			status = 1
		}
	}
	return status
}
