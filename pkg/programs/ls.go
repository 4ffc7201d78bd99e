package programs

import (
	"hash/fnv"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// lsEntry is one name ls shows: as it is printed, the path to reach it, and its stat.
type lsEntry struct {
	name string // printed
	path string // as given or joined (headers and links use it)
	info vfs.Info
	// stat is the info with a link followed (for -F and the type of a link's target).
	stat vfs.Info
}

type lsOpts struct {
	o    getopt.Result
	long bool
	now  time.Time
}

func runLs(c *cmd) int {
	o, args := c.getopt("1AaCxdLHRFplinshrSXvctuw:ekgGZ", []getopt.Long{
		{Name: "full-time", Key: 'T'}, {Name: "group-directories-first", Key: 'D'},
		{Name: "color?", Key: 'K'},
	})
	l := &lsOpts{o: o, long: o.Has('l') || o.Has('n') || o.Has('g') || o.Has('T'), now: c.p.Now()}
	if len(args) == 0 {
		args = []string{"."}
	}
	status := 0
	var files, dirs []lsEntry
	// Links on the command line are followed unless the listing is of links (-l, -i,
	// -s, -F), or -H/-L say follow.
	follow := !(l.long || o.Has('i') || o.Has('s') || o.Has('F')) || o.Has('H') || o.Has('L')
	for _, a := range args {
		c.tick()
		e, ok := c.lsStat(a, a, follow || o.Has('L'))
		if !ok {
			status = 1
			continue
		}
		if e.info.Mode.IsDir() && !o.Has('d') {
			dirs = append(dirs, e)
		} else {
			files = append(files, e)
		}
	}
	c.lsSort(l, files)
	c.lsSort(l, dirs)
	c.lsShow(l, files)
	showHeader := len(args) > 1 || o.Has('R')
	first := len(files) == 0
	for _, d := range dirs {
		if !c.lsDir(l, d, showHeader, &first) {
			status = 1
		}
	}
	return status
}

// lsStat describes name (printed as shown) for ls, reporting a failure.
func (c *cmd) lsStat(name, shown string, follow bool) (lsEntry, bool) {
	p := c.abs(name)
	var info vfs.Info
	var err error
	if follow {
		info, err = c.fs().Stat(p)
	} else {
		info, err = c.fs().Lstat(p)
	}
	if err != nil {
		c.perror(err, "%s", name)
		return lsEntry{}, false
	}
	e := lsEntry{name: shown, path: name, info: info, stat: info}
	if info.Mode&fs.ModeSymlink != 0 {
		if st, err := c.fs().Stat(p); err == nil {
			e.stat = st
		}
	}
	return e, true
}

// lsDir lists directory d's contents (and, with -R, its subdirectories' after it).
func (c *cmd) lsDir(l *lsOpts, d lsEntry, header bool, first *bool) bool {
	if header {
		if !*first {
			c.write("\n")
		}
		*first = false
		c.write(d.path + ":\n")
	}
	ok := true
	entries, err := c.fs().ReadDir(c.abs(d.path))
	if err != nil {
		c.perror(err, "%s", d.path)
		ok = false
	}
	var list []lsEntry
	if l.o.Has('a') {
		for _, dot := range []string{".", ".."} {
			if e, found := c.lsStat(joinPath(d.path, dot), dot, l.o.Has('L')); found {
				list = append(list, e)
			}
		}
	}
	for _, ent := range entries {
		c.tick()
		name := ent.Name()
		if strings.HasPrefix(name, ".") && !l.o.Has('a') && !l.o.Has('A') {
			continue
		}
		e := lsEntry{name: name, path: joinPath(d.path, name), info: ent.Stat()}
		e.stat = e.info
		if l.o.Has('L') || e.info.Mode&fs.ModeSymlink != 0 {
			if st, err := c.fs().Stat(c.abs(e.path)); err == nil {
				e.stat = st
				if l.o.Has('L') {
					e.info = st
				}
			}
		}
		list = append(list, e)
	}
	if l.long || l.o.Has('s') {
		blocks := uint64(1)
		for _, e := range list {
			blocks += blocks512(e.info)
		}
		if l.o.Has('h') {
			c.printf("total %-7s\n", humanSize(blocks/2*1024, 0, 0))
		} else {
			c.printf("total %d\n", blocks/2)
		}
	}
	c.lsSort(l, list)
	c.lsShow(l, list)
	if l.o.Has('R') {
		var sub []lsEntry
		for _, e := range list {
			if e.info.Mode.IsDir() && e.name != "." && e.name != ".." {
				sub = append(sub, e)
			}
		}
		for _, s := range sub {
			if !c.lsDir(l, s, true, first) {
				ok = false
			}
		}
	}
	return ok
}

// blocks512 is how many 512-byte blocks a file takes: whole 4K blocks for a file's data
// and a directory, none for a (fast) symbolic link.
func blocks512(info vfs.Info) uint64 {
	switch {
	case info.Mode&fs.ModeSymlink != 0:
		return 0
	case info.Mode.IsDir():
		return 8
	}
	return uint64((info.Size+4095)/4096) * 8
}

func (c *cmd) lsSort(l *lsOpts, list []lsEntry) {
	o := l.o
	slices.SortStableFunc(list, func(a, b lsEntry) int {
		d := 0
		if o.Has('D') {
			d = boolInt(b.info.Mode.IsDir()) - boolInt(a.info.Mode.IsDir())
			if d != 0 {
				return d
			}
		}
		switch {
		case o.Has('S'):
			d = cmpInt64(b.info.Size, a.info.Size)
		case o.Has('t'):
			d = b.info.ModTime.Compare(a.info.ModTime)
		case o.Has('X'):
			d = strings.Compare(extension(a.name), extension(b.name))
		}
		if d == 0 {
			d = strings.Compare(a.name, b.name)
		}
		if o.Has('r') {
			d = -d
		}
		return d
	})
}

func extension(name string) string {
	if i := strings.IndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lsShow prints entries one per line (a container's stdout is never a terminal, so ls
// never lays out columns), long when asked.
func (c *cmd) lsShow(l *lsOpts, list []lsEntry) {
	o := l.o
	for _, e := range list {
		c.tick()
		var b strings.Builder
		if o.Has('i') {
			b.WriteString(padLeft(itoa(inode(c.abs(e.path))), 7) + " ")
		}
		if o.Has('s') {
			if o.Has('h') {
				b.WriteString(padLeft(humanSize(blocks512(e.info)<<9, 1, 0), 7) + " ")
			} else {
				b.WriteString(padLeft(itoa(int64(blocks512(e.info)/2)), 6) + " ")
			}
		}
		if l.long {
			b.WriteString(modeString(e.info.Mode) + " ")
			b.WriteString(padLeft(itoa(c.nlink(e)), 4) + " ")
			switch {
			case o.Has('n') && o.Has('g'):
				b.WriteString(padRight(itoa(e.info.GID), 8) + " ")
			case o.Has('n'):
				b.WriteString(padRight(itoa(e.info.UID), 8) + " " + padRight(itoa(e.info.GID), 8) + " ")
			case o.Has('g'):
				b.WriteString(padRight(trunc(c.groupName(e.info.GID), 8), 8) + " ")
			default:
				b.WriteString(padRight(trunc(c.userName(e.info.UID), 8), 8) + " " + padRight(trunc(c.groupName(e.info.GID), 8), 8) + " ")
			}
			if o.Has('h') {
				b.WriteString(padLeft(humanSize(uint64(e.info.Size), 1, 0), 7) + " ")
			} else {
				b.WriteString(padLeft(itoa(e.info.Size), 9) + " ")
			}
			mt := e.info.ModTime.UTC()
			age := l.now.Sub(mt)
			switch {
			case o.Has('T'):
				b.WriteString(mt.Format("2006-01-02 15:04:05 -0700") + " ")
			case age < 365*24*time.Hour/2 && age > -15*time.Minute:
				b.WriteString(mt.Format("Jan _2 15:04") + " ")
			default:
				b.WriteString(mt.Format("Jan _2") + " " + padLeft(mt.Format("2006"), 5) + " ")
			}
		}
		b.WriteString(e.name)
		mode := e.info.Mode
		if l.long && e.info.Mode&fs.ModeSymlink != 0 {
			b.WriteString(" -> " + e.info.Target)
			mode = e.stat.Mode
		}
		if ch := appendChar(o, mode); ch != 0 {
			b.WriteByte(ch)
		}
		b.WriteByte('\n')
		c.write(b.String())
	}
}

// appendChar is what -F and -p put after a name.
func appendChar(o getopt.Result, m fs.FileMode) byte {
	if !o.Has('F') && !o.Has('p') {
		return 0
	}
	if m.IsDir() {
		return '/'
	}
	if !o.Has('F') {
		return 0
	}
	switch {
	case m&fs.ModeSymlink != 0:
		return '@'
	case m&fs.ModeNamedPipe != 0:
		return '|'
	case m&fs.ModeSocket != 0:
		return '='
	case m.IsRegular() && m&0o111 != 0:
		return '*'
	}
	return 0
}

// nlink is a file's link count: the filesystem has no hard links, so 1 for a file and, for
// a directory, 2 and one per subdirectory (their ".."), as on a real filesystem.
func (c *cmd) nlink(e lsEntry) int64 {
	if !e.info.Mode.IsDir() {
		return 1
	}
	entries, err := c.fs().ReadDir(c.abs(e.path))
	if err != nil {
		return 2
	}
	n := int64(2)
	for _, s := range entries {
		if s.IsDir() {
			n++
		}
	}
	return n
}

// inode is a file's inode number: the filesystem has none, so a stable number made from
// its path.
func inode(p string) int64 {
	h := fnv.New32a()
	h.Write([]byte(p))
	return int64(h.Sum32()%(1<<24)) + 2
}

func itoa(n int64) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b []byte
	for n > 0 {
		b = append(b, digits[n%10])
		n /= 10
	}
	if neg {
		b = append(b, '-')
	}
	slices.Reverse(b)
	return string(b)
}

func padLeft(s string, w int) string {
	if len(s) >= w {
		return s
	}
	return strings.Repeat(" ", w-len(s)) + s
}

func padRight(s string, w int) string {
	if len(s) >= w {
		return s
	}
	return s + strings.Repeat(" ", w-len(s))
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
