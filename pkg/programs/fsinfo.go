package programs

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// What the filesystem does not know and stat, df and du show: fixed, plausible values of a
// node's disk.
const (
	// simulatedDev is every file's st_dev (an overlay's anonymous device).
	simulatedDev = 0x2b
	// Disk sizes for df and stat -f, in 1K blocks.
	diskBlocksK = 100 << 20 // 100 GiB
	diskUsedK   = 10 << 20
	diskFiles   = 6553600
	diskFree    = 6400000
)

func runStat(c *cmd) int {
	o, args := c.getopt("c:fLt", nil)
	if len(args) == 0 {
		c.showUsage(1)
	}
	status := 0
	for _, name := range args {
		c.tick()
		if o.Has('f') {
			if !c.statfs(name, o) {
				status = 1
			}
			continue
		}
		info, err := c.statOrLstat(name, o.Has('L'))
		if err != nil {
			c.perror(err, "can't stat '%s'", name)
			status = 1
			continue
		}
		format := o.Val('c')
		if !o.Has('c') {
			switch {
			case o.Has('t'):
				format = "%n %s %b %f %u %g %D %i %h %t %T %X %Y %Z %o"
			default:
				format = "  File: %N\n" +
					"  Size: %-10s\tBlocks: %-10b IO Block: %-6o %F\n" +
					"Device: %Dh/%dd\tInode: %-10i  Links: %h\n" +
					"Access: (%04a/%10.10A)  Uid: (%5u/%8U)   Gid: (%5g/%8G)\n" +
					"Access: %x\nModify: %y\nChange: %z"
			}
		}
		c.write(c.statFormat(format, name, info) + "\n")
	}
	return status
}

// statFormat expands stat's format directives (printf-style flags and width allowed) for
// the file name described by info.
func (c *cmd) statFormat(format, name string, info vfs.Info) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0'.0123456789", format[j]) >= 0 {
			j++
		}
		if j >= len(format) {
			b.WriteString(format[i:])
			break
		}
		spec := format[i+1 : j]
		verb := format[j]
		i = j
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		num := func(v int64) { fmt.Fprintf(&b, "%"+spec+"d", v) }
		str := func(s string) { fmt.Fprintf(&b, "%"+spec+"s", s) }
		human := func(t time.Time) string {
			return t.UTC().Format("2006-01-02 15:04:05.000000000 -0700")
		}
		switch verb {
		case 'n':
			str(name)
		case 'N':
			if info.Mode&fs.ModeSymlink != 0 {
				fmt.Fprintf(&b, "'%s' -> '%s'", name, info.Target)
			} else {
				str(name)
			}
		case 'd':
			num(simulatedDev)
		case 'D':
			fmt.Fprintf(&b, "%"+spec+"x", simulatedDev)
		case 'i':
			num(inode(c.abs(name)))
		case 'a':
			fmt.Fprintf(&b, "%"+spec+"o", unixMode(info.Mode))
		case 'A':
			str(modeString(info.Mode))
		case 'f':
			fmt.Fprintf(&b, "%"+spec+"x", rawMode(info.Mode))
		case 'F':
			str(fileType(info))
		case 'h':
			num(c.nlink(lsEntry{path: name, info: info}))
		case 'u':
			num(info.UID)
		case 'U':
			if u, ok := c.userByID(info.UID); ok {
				str(u.name)
			} else {
				str("UNKNOWN")
			}
		case 'g':
			num(info.GID)
		case 'G':
			if g, ok := c.groupByID(info.GID); ok {
				str(g.name)
			} else {
				str("UNKNOWN")
			}
		case 't', 'T':
			fmt.Fprintf(&b, "%"+spec+"x", 0)
		case 's':
			num(info.Size)
		case 'B':
			num(512)
		case 'b':
			num(int64(blocks512(info)))
		case 'o':
			num(4096)
		case 'x', 'y', 'z':
			str(human(info.ModTime))
		case 'X', 'Y', 'Z':
			num(info.ModTime.Unix())
		default:
			fmt.Fprintf(&b, "%"+spec+"c", verb)
		}
	}
	return b.String()
}

// rawMode is st_mode as the kernel has it: type bits and permissions.
func rawMode(m fs.FileMode) uint32 {
	t := uint32(0o100000)
	switch {
	case m.IsDir():
		t = 0o040000
	case m&fs.ModeSymlink != 0:
		t = 0o120000
	case m&fs.ModeNamedPipe != 0:
		t = 0o010000
	case m&fs.ModeSocket != 0:
		t = 0o140000
	case m&fs.ModeCharDevice != 0:
		t = 0o020000
	case m&fs.ModeDevice != 0:
		t = 0o060000
	}
	return t | unixMode(m)
}

// fileType is stat's %F.
func fileType(info vfs.Info) string {
	m := info.Mode
	switch {
	case m.IsRegular():
		if info.Size == 0 {
			return "regular empty file"
		}
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character special file"
	case m&fs.ModeDevice != 0:
		return "block special file"
	}
	return "weird file"
}

// statfs is stat -f: the simulated disk.
func (c *cmd) statfs(name string, o getopt.Result) bool {
	if _, err := c.fs().Stat(c.abs(name)); err != nil {
		c.perror(err, "can't read file system information for '%s'", name)
		return false
	}
	format := o.Val('c')
	if !o.Has('c') {
		format = "  File: \"%n\"\n    ID: %-8i Namelen: %-7l Type: %T\n" +
			"Block size: %-10s\nBlocks: Total: %-10b Free: %-10f Available: %a\n" +
			"Inodes: Total: %-10c Free: %d"
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 >= len(format) {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0.0123456789", format[j]) >= 0 {
			j++
		}
		if j >= len(format) {
			break
		}
		spec, verb := format[i+1:j], format[j]
		i = j
		num := func(v int64) { fmt.Fprintf(&b, "%"+spec+"d", v) }
		switch verb {
		case 'n':
			fmt.Fprintf(&b, "%"+spec+"s", name)
		case 'i':
			fmt.Fprintf(&b, "%"+spec+"x", 0)
		case 'l':
			num(255)
		case 't':
			fmt.Fprintf(&b, "%"+spec+"x", 0x794c7630)
		case 'T':
			fmt.Fprintf(&b, "%"+spec+"s", "overlayfs")
		case 's', 'S':
			num(4096)
		case 'b':
			num(diskBlocksK / 4)
		case 'f', 'a':
			num((diskBlocksK - diskUsedK) / 4)
		case 'c':
			num(diskFiles)
		case 'd':
			num(diskFree)
		case '%':
			b.WriteByte('%')
		default:
			fmt.Fprintf(&b, "%"+spec+"c", verb)
		}
	}
	c.write(b.String() + "\n")
	return true
}

func runDu(c *cmd) int {
	o, args := c.getopt("aHkLsxd:lcbhm", nil)
	unit := uint64(1024)
	switch {
	case o.Has('b'):
		unit = 1
	case o.Has('h'):
		unit = 0
	case o.Has('m'):
		unit = 1 << 20
	}
	if o.Has('k') {
		unit = 1024
	}
	if _, ok := c.lookupEnv("POSIXLY_CORRECT"); ok && !o.Has('k') && !o.Has('h') && !o.Has('m') && !o.Has('b') {
		unit = 512
	}
	maxDepth := int(^uint(0) >> 1)
	if o.Has('d') {
		maxDepth = c.positive(o.Val('d'))
	}
	if o.Has('s') {
		maxDepth = 0
	}
	if len(args) == 0 {
		args = []string{"."}
	}
	status := 0
	print := func(size uint64, name string) {
		block := uint64(512)
		if o.Has('b') {
			block = 1
		}
		if unit != 0 {
			size += (unit - 1) / 1024
		}
		c.printf("%s\t%s\n", humanSize(size, block, unit), name)
	}
	var du func(name string, depth int, follow bool) uint64
	du = func(name string, depth int, follow bool) uint64 {
		c.tick()
		info, err := c.fs().Lstat(c.abs(name))
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
			return 0
		}
		if info.Mode&fs.ModeSymlink != 0 && follow {
			if info, err = c.fs().Stat(c.abs(name)); err != nil {
				c.perror(err, "%s", name)
				status = 1
				return 0
			}
		}
		sum := blocks512(info)
		if o.Has('b') {
			sum = uint64(info.Size)
		}
		if info.Mode.IsDir() {
			entries, err := c.fs().ReadDir(c.abs(name))
			if err != nil {
				c.perror(err, "can't open '%s'", name)
				status = 1
				return sum
			}
			for _, e := range entries {
				sum += du(joinPath(name, e.Name()), depth+1, o.Has('L'))
			}
		} else if !o.Has('a') && depth != 0 {
			return sum
		}
		if depth <= maxDepth {
			print(sum, name)
		}
		return sum
	}
	total := uint64(0)
	for _, a := range args {
		total += du(a, 0, o.Has('L') || o.Has('H'))
	}
	if o.Has('c') {
		print(total, "total")
	}
	return status
}

func runDf(c *cmd) int {
	o, args := c.getopt("PkmhTaiB:t:", nil)
	unit := uint64(1024)
	hdr := "1K-blocks"
	switch {
	case o.Has('h'):
		unit, hdr = 0, "     Size"
	case o.Has('m'):
		unit, hdr = 1<<20, "1M-blocks"
	}
	if o.Has('i') {
		hdr = "   Inodes"
	}
	typ := ""
	if o.Has('T') {
		typ = "Type       "
	}
	use := "Use%"
	if o.Has('P') {
		use = "Capacity"
	}
	c.printf("Filesystem           %s%-15sUsed Available %s Mounted on\n", typ, hdr, use)
	type mnt struct {
		dev, typ, path string
		sizeK, usedK   uint64 // a tmpfs's blocks; 0: the disk's
	}
	mounts := []mnt{{dev: "overlay", typ: "overlay", path: "/"}}
	for _, m := range c.fs().Mounts() {
		if m == "/" {
			continue
		}
		// A tmpfs of a known size (a memory-backed emptyDir) is its own filesystem.
		if st, err := c.fs().Stat(m); err == nil && st.FSType == "tmpfs" && st.FSSize > 0 {
			used, _ := c.fs().DirBytes(m)
			mounts = append(mounts, mnt{dev: "tmpfs", typ: "tmpfs", path: m, sizeK: uint64(st.FSSize) / 1024, usedK: (uint64(used) + 1023) / 1024})
			continue
		}
		mounts = append(mounts, mnt{dev: "/dev/root", typ: "ext4", path: m})
	}
	if len(args) > 0 {
		var chosen []mnt
		for _, a := range args {
			p, err := c.realpath(a)
			if err != nil {
				c.perror(err, "%s", a)
				continue
			}
			best := mounts[0]
			for _, m := range mounts {
				if p == m.path || strings.HasPrefix(p, strings.TrimSuffix(m.path, "/")+"/") {
					if len(m.path) > len(best.path) {
						best = m
					}
				}
			}
			chosen = append(chosen, best)
		}
		mounts = chosen
	}
	for _, m := range mounts {
		c.tick()
		total, used := uint64(diskBlocksK), uint64(diskUsedK)
		if m.sizeK > 0 {
			total, used = m.sizeK, min(m.usedK, m.sizeK)
		}
		block := uint64(1024)
		if o.Has('i') {
			total, used, block = diskFiles, diskFiles-diskFree, 1
		}
		avail := total - used
		pct := (used*100 + total/2) / total
		line := padRight(m.dev, 20)
		if o.Has('T') {
			line += " " + padRight(m.typ, 10)
		}
		u := unit
		if o.Has('i') && u != 0 {
			u = 1
		}
		line += " " + padLeft(humanSize(total, block, u), 9) + " "
		line += padLeft(humanSize(used, block, u), 9) + " "
		line += padLeft(humanSize(avail, block, u), 9) + " " + padLeft(strconv.FormatUint(pct, 10), 3) + "% " + m.path
		c.write(line + "\n")
	}
	return 0
}
