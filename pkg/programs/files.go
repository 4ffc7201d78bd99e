package programs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runCat(c *cmd) int {
	o, args := c.getopt("etvAnbu", nil)
	if len(args) == 0 {
		args = []string{"-"}
	}
	if o.has('A') {
		o.n['e'], o.n['t'], o.n['v'] = 1, 1, 1
	}
	switch {
	case o.has('e') || o.has('t') || o.has('v'):
		return c.catVisible(o, args)
	case o.has('n') || o.has('b'):
		// busybox numbers lines as nl does: each line printed whole, with a newline.
		status, line := 0, 1
		for _, name := range args {
			r, err := c.open(name)
			if err != nil {
				c.perror(err, "%s", name)
				status = 1
				continue
			}
			c.lines(r, func(s string) bool {
				text := strings.TrimSuffix(s, "\n")
				if !o.has('b') || text != "" {
					c.printf("%6d\t", line)
					line++
				}
				c.write(text + "\n")
				return true
			})
		}
		return status
	}
	status := 0
	buf := make([]byte, 64<<10)
	for _, name := range args {
		c.tick()
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "can't open '%s'", name)
			status = 1
			continue
		}
		// cat copies as it reads, so that a pipe's data flows on at once.
		for {
			n, err := r.Read(buf)
			if n > 0 {
				c.out.Write(buf[:n])
				if name == "-" {
					c.out.Flush()
				}
			}
			if err != nil {
				if err != io.EOF {
					c.perror(err, "read error")
					status = 1
				}
				break
			}
			c.tick()
		}
	}
	return status
}

// catVisible is cat -v, -e, -t and -A: control characters as ^X, high ones as M-X, line
// ends as $ (-e), tabs as ^I (-t); -n and -b number lines ("%6u  ").
func (c *cmd) catVisible(o opts, args []string) int {
	status := 0
	numbered := o.has('n') || o.has('b')
	eolSeen := numbered
	lineno := 0
	buf := make([]byte, 64<<10)
	for _, name := range args {
		r, err := c.open(name)
		if err != nil {
			c.perror(err, "can't open '%s'", name)
			status = 1
			continue
		}
		for {
			c.tick()
			n, err := r.Read(buf)
			var b strings.Builder
			for _, ch := range buf[:n] {
				if eolSeen && !(o.has('b') && ch == '\n') {
					lineno++
					fmt.Fprintf(&b, "%6d  ", lineno)
				}
				eolSeen = numbered && ch == '\n'
				switch {
				case ch == '\t' && !o.has('t'):
					b.WriteByte(ch)
				case ch == '\n':
					if o.has('e') {
						b.WriteByte('$')
					}
					b.WriteByte(ch)
				default:
					if ch >= 128 {
						b.WriteString("M-")
						ch -= 128
					}
					if ch < 32 || ch == 127 {
						b.WriteByte('^')
						ch ^= 0x40
					}
					b.WriteByte(ch)
				}
			}
			c.write(b.String())
			if err != nil {
				if err != io.EOF {
					status = 1
				}
				break
			}
		}
	}
	return status
}

func runTouch(c *cmd) int {
	o, args := c.getopt("chr:d:t:amf", map[string]byte{"no-create": 'c', "no-dereference": 'h', "reference=": 'r', "date=": 'd'})
	if len(args) == 0 {
		c.showUsage(1)
	}
	var when *time.Time // the time to set, rather than now
	if r := o.val('r'); r != "" {
		info, err := c.fs().Stat(c.abs(r))
		if err != nil {
			c.perror(err, "can't stat '%s'", r)
			c.exit(1)
		}
		when = &info.ModTime
	}
	for _, d := range []string{o.val('d'), o.val('t')} {
		if d != "" {
			t := c.parseDate(d, c.p.Now().UTC())
			when = &t
		}
	}
	status := 0
	id := c.p.Identity()
	for _, name := range args {
		c.tick()
		p := c.abs(name)
		err := c.fs().Touch(p)
		if vfs.ErrnoOf(err) == vfs.ENOENT {
			if o.has('c') {
				continue
			}
			if _, lerr := c.fs().Lstat(p); lerr != nil {
				err = c.fs().WriteFile(p, nil, 0o666&^c.umask(), true, id.UID, id.GID)
			}
		}
		if err == nil && when != nil {
			err = c.fs().Chtimes(p, *when)
		}
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
		}
	}
	return status
}

func runRm(c *cmd) int {
	o, args := c.getopt("fiRrv", nil)
	force := o.has('f')
	recursive := o.has('r') || o.has('R')
	if len(args) == 0 && !force {
		c.showUsage(1)
	}
	status := 0
	for _, name := range args {
		base := lastComponent(name)
		if base == "." || base == ".." {
			c.errorf("can't remove '.' or '..'")
			status = 1
			continue
		}
		if !c.removeFile(name, force, recursive, o.has('v')) {
			status = 1
		}
	}
	return status
}

// removeFile is busybox's remove_file: it removes name (a directory's contents first when
// recursive) and reports why it cannot.
func (c *cmd) removeFile(name string, force, recursive, verbose bool) bool {
	c.tick()
	p := c.abs(name)
	info, err := c.fs().Lstat(p)
	if err != nil {
		if vfs.ErrnoOf(err) != vfs.ENOENT {
			c.perror(err, "can't stat '%s'", name)
			return false
		}
		if !force {
			c.perror(err, "can't remove '%s'", name)
			return false
		}
		return true
	}
	if info.Mode.IsDir() {
		if !recursive {
			c.errorf("'%s' is a directory", name)
			return false
		}
		entries, err := c.fs().ReadDir(p)
		if err != nil {
			c.perror(err, "can't remove '%s'", name)
			return false
		}
		ok := true
		for _, e := range entries {
			if !c.removeFile(joinPath(name, e.Name()), force, recursive, verbose) {
				ok = false
			}
		}
		if !ok {
			return false
		}
		if err := c.fs().Remove(p, false); err != nil {
			c.perror(err, "can't remove '%s'", name)
			return false
		}
		if verbose {
			c.printf("removed directory: '%s'\n", name)
		}
		return true
	}
	if err := c.fs().Remove(p, false); err != nil {
		c.perror(err, "can't remove '%s'", name)
		return false
	}
	if verbose {
		c.printf("removed '%s'\n", name)
	}
	return true
}

func runRmdir(c *cmd) int {
	o, args := c.getopt("pvi", map[string]byte{"parents": 'p', "verbose": 'v', "ignore-fail-on-non-empty": 'i'})
	if len(args) == 0 {
		c.showUsage(1)
	}
	status := 0
	for _, name := range args {
		c.tick()
		for {
			if o.has('v') {
				c.printf("rmdir: removing directory, '%s'\n", name)
			}
			err := c.rmdir(name)
			if err != nil {
				if o.has('i') && vfs.ErrnoOf(err) == vfs.ENOTEMPTY {
					break
				}
				c.perror(err, "'%s'", name)
				status = 1
				break
			}
			if !o.has('p') {
				break
			}
			if name = dirname(name); name == "." || name == "/" {
				break
			}
		}
	}
	return status
}

// rmdir is rmdir(2): the filesystem's Remove takes files too.
func (c *cmd) rmdir(name string) error {
	info, err := c.fs().Lstat(c.abs(name))
	if err != nil {
		return err
	}
	if !info.Mode.IsDir() {
		return vfs.ENOTDIR
	}
	return c.fs().Remove(c.abs(name), false)
}

func runMkdir(c *cmd) int {
	o, args := c.getopt("m:pv", map[string]byte{"mode=": 'm', "parents": 'p', "verbose": 'v'})
	mode := int64(-1)
	if o.has('m') {
		m, ok := parseMode(o.val('m'), 0o777, c.umask())
		if !ok {
			c.die("invalid mode '%s'", o.val('m'))
		}
		mode = int64(m)
	}
	if len(args) == 0 {
		c.showUsage(1)
	}
	status := 0
	for _, name := range args {
		c.tick()
		if !c.makeDirectory(name, mode, o.has('p'), o.has('v')) {
			status = 1
		}
	}
	return status
}

// makeDirectory is busybox's bb_make_directory: name, with its parents when recursive
// (an existing one is no error then); mode (-1: 0777 less the umask) is set on the last.
func (c *cmd) makeDirectory(name string, mode int64, recursive, verbose bool) bool {
	if name == "/" || name == "." {
		return true
	}
	id := c.p.Identity()
	// With parents, busybox makes each prefix that ends after a run of slashes ("/",
	// "a/", "a/b/"), and names it so when it fails.
	var prefixes []string
	if recursive {
		for i := 0; i < len(name); i++ {
			if name[i] != '/' {
				continue
			}
			for i+1 < len(name) && name[i+1] == '/' {
				i++
			}
			if i+1 < len(name) {
				prefixes = append(prefixes, name[:i+1])
			}
		}
	}
	prefixes = append(prefixes, name)
	for i, p := range prefixes {
		last := i == len(prefixes)-1
		perm := fs.FileMode(0o777 &^ c.umask())
		if !last {
			perm |= 0o300 // intermediate directories must let their maker in
		}
		err := c.fs().Mkdir(c.abs(p), perm, id.UID, id.GID)
		if err != nil {
			info, serr := c.fs().Stat(c.abs(p))
			if vfs.ErrnoOf(err) != vfs.EEXIST || !recursive || serr != nil || !info.Mode.IsDir() {
				c.perror(err, "can't create directory '%s'", p)
				return false
			}
			if last {
				return true
			}
			continue
		}
		if verbose {
			c.printf("created directory: '%s'\n", p)
		}
		if last && mode >= 0 {
			if err := c.fs().Chmod(c.abs(p), fileMode(uint32(mode))); err != nil {
				c.perror(err, "can't set permissions of directory '%s'", p)
				return false
			}
		}
	}
	return true
}

// parseMode is busybox's bb_parse_mode: an octal mode, or symbolic clauses ("u+x,go-w",
// "a=r", "g=u") applied to current. It returns false for a bad mode.
func parseMode(s string, current uint32, umask fs.FileMode) (uint32, bool) {
	if s != "" && s[0] >= '0' && s[0] <= '7' {
		v, err := strconv.ParseUint(s, 8, 32)
		if err != nil || v > 0o7777 {
			return 0, false
		}
		return uint32(v), true
	}
	whoMask := map[byte]uint32{'a': 0o7777, 'u': 0o4700, 'g': 0o2070, 'o': 0o007}
	permMask := map[byte]uint32{'r': 0o444, 'w': 0o222, 'x': 0o111, 'X': 0o111, 's': 0o6000, 't': 0o1000}
	mode := current
	const isDir = 1 << 31 // callers mark directories (for X) with this bit
	i := 0
	for i < len(s) {
		if s[i] == ',' {
			i++
			continue
		}
		who := uint32(0)
		for i < len(s) && strings.IndexByte("augo", s[i]) >= 0 {
			who |= whoMask[s[i]]
			i++
			if i >= len(s) {
				return 0, false
			}
		}
		for i < len(s) && s[i] != ',' {
			op := s[i]
			if op != '+' && op != '-' && op != '=' {
				return 0, false
			}
			i++
			if op == '=' {
				if who != 0 {
					mode &^= who
				} else {
					mode &^= 0o7777
				}
			}
			var perms uint32
			if i < len(s) && strings.IndexByte("ugo", s[i]) >= 0 {
				// Copy another class's bits: g=u.
				src := whoMask[s[i]] & 0o777 & mode
				for _, m := range []uint32{0o444, 0o222, 0o111} {
					if src&m != 0 {
						perms |= m
					}
				}
				i++
			} else {
				for i < len(s) && strings.IndexByte("rwxXst", s[i]) >= 0 {
					if s[i] != 'X' || mode&(isDir|0o111) != 0 {
						perms |= permMask[s[i]]
					}
					i++
				}
			}
			if perms != 0 {
				mask := who
				if who == 0 {
					mask = ^uint32(umask)
				}
				perms &= mask
				if op == '-' {
					mode &^= perms
				} else {
					mode |= perms
				}
			}
		}
	}
	return mode &^ isDir, true
}

// modeForParse is info's permission bits for parseMode, directories marked for X.
func modeForParse(info vfs.Info) uint32 {
	m := unixMode(info.Mode)
	if info.Mode.IsDir() {
		m |= 1 << 31
	}
	return m
}

func runChmod(c *cmd) int {
	// A mode like -x looks like an option: busybox lets it through.
	args := append([]string(nil), c.args...)
	modeAt := -1
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			break
		}
		if len(a) > 1 && strings.IndexByte("-Rvcf", a[1]) < 0 {
			modeAt = i
			args[i] = "a" + a[1:]
			break
		}
	}
	c.args = args
	o, operands := c.getopt("Rvcf", nil)
	if len(operands) < 2 {
		c.showUsage(1)
	}
	mode := operands[0]
	if modeAt >= 0 && strings.HasPrefix(mode, "a") && "a"+c.args[modeAt][1:] == mode {
		mode = "-" + mode[1:]
	}
	status := 0
	for _, name := range operands[1:] {
		if !c.walk(name, o.has('R'), func(p string, info vfs.Info, depth int) bool {
			if depth == 0 {
				st, err := c.fs().Stat(c.abs(p))
				if err != nil {
					if !o.has('f') {
						c.perror(err, "%s", p)
					}
					return false
				}
				info = st
			} else if info.Mode&fs.ModeSymlink != 0 {
				return true
			}
			m, ok := parseMode(mode, modeForParse(info), c.umask())
			if !ok {
				c.die("invalid mode '%s'", mode)
			}
			if err := c.fs().Chmod(c.abs(p), fileMode(m)); err != nil {
				if !o.has('f') {
					c.perror(err, "%s", p)
				}
				return false
			}
			if o.has('v') || o.has('c') && unixMode(info.Mode) != m {
				c.printf("mode of '%s' changed to %04o (%s)\n", p, m, modeString(fileMode(m) | info.Mode.Type())[1:])
			}
			return true
		}) {
			status = 1
		}
	}
	return status
}

// walk is busybox's recursive_action: f on name and, when recursive, on everything under
// it (a directory before its contents), with links not followed below the top. It reports
// an lstat failure itself and returns false if anything failed.
func (c *cmd) walk(name string, recursive bool, f func(p string, info vfs.Info, depth int) bool) bool {
	var rec func(p string, depth int) bool
	rec = func(p string, depth int) bool {
		c.tick()
		info, err := c.fs().Lstat(c.abs(p))
		if err != nil {
			c.perror(err, "%s", p)
			return false
		}
		ok := f(p, info, depth)
		if !recursive {
			return ok
		}
		if depth == 0 && info.Mode&fs.ModeSymlink != 0 {
			if st, err := c.fs().Stat(c.abs(p)); err == nil {
				info = st
			}
		}
		if !info.Mode.IsDir() {
			return ok
		}
		entries, err := c.fs().ReadDir(c.abs(p))
		if err != nil {
			c.perror(err, "%s", p)
			return false
		}
		for _, e := range entries {
			if !rec(joinPath(p, e.Name()), depth+1) {
				ok = false
			}
		}
		return ok
	}
	return rec(name, 0)
}

func runChown(c *cmd) int { return c.chown(false) }
func runChgrp(c *cmd) int { return c.chown(true) }

// chown is chown and chgrp: USER[:GROUP] (or GROUP) by name or number.
func (c *cmd) chown(groupOnly bool) int {
	o, operands := c.getopt("RhvcfLHP", map[string]byte{"recursive": 'R', "dereference": 0xff, "no-dereference": 'h', "verbose": 'v', "changes": 'c', "silent": 'f', "quiet": 'f'})
	if len(operands) < 2 {
		c.showUsage(1)
	}
	spec := operands[0]
	uid, gid := int64(-1), int64(-1)
	group := ""
	if groupOnly {
		group = spec
	} else {
		user, g, hasGroup := strings.Cut(spec, ":")
		if !hasGroup {
			user, g, hasGroup = strings.Cut(spec, ".")
		}
		if user != "" {
			if n, err := parseID(user); err == nil {
				uid = n
			} else if u, ok := c.userByName(user); ok {
				uid = u.uid
			} else {
				c.die("unknown user %s", user)
			}
		}
		if hasGroup {
			group = g
		}
	}
	if group != "" {
		if n, err := parseID(group); err == nil {
			gid = n
		} else if g, ok := c.groupByName(group); ok {
			gid = g.gid
		} else {
			c.die("unknown group %s", group)
		}
	}
	status := 0
	for _, name := range operands[1:] {
		if !c.walk(name, o.has('R'), func(p string, info vfs.Info, depth int) bool {
			// The filesystem follows links: a link's own owner cannot change, so -h does
			// nothing to one.
			if info.Mode&fs.ModeSymlink != 0 && (depth > 0 || o.has('h')) {
				return true
			}
			if err := c.fs().Chown(c.abs(p), uid, gid); err != nil {
				if !o.has('f') {
					c.perror(err, "%s", p)
				}
				return false
			}
			return true
		}) {
			status = 1
		}
	}
	return status
}

func runCp(c *cmd) int {
	o, args := c.getopt("aRrdpPLHfilsTunvt:", map[string]byte{"archive": 'a', "force": 'f', "interactive": 'i', "no-clobber": 'n', "link": 'l', "dereference": 'L', "no-dereference": 'P', "recursive": 'R', "symbolic-link": 's', "no-target-directory": 'T', "target-directory=": 't', "verbose": 'v', "update": 'u', "remove-destination": 0xff, "parents": 0xfe, "reflink?": 0xfd})
	cf := copyFlags{
		recursive: o.has('r') || o.has('R') || o.has('a'),
		preserve:  o.has('p') || o.has('a'),
		force:     o.has('f'),
		noClobber: o.has('n'),
		symlink:   o.has('s'),
	}
	// cp follows links, except that -r, -a, -d and -P copy them as links (-L follows).
	cf.deref = !(cf.recursive || o.has('d') || o.has('P') || o.has('a')) || o.has('L')
	if len(args) < 2 && !(o.has('t') && len(args) == 1) {
		c.showUsage(1)
	}
	last, sources := args[len(args)-1], args[:len(args)-1]
	if o.has('t') {
		last, sources = o.val('t'), args
	}
	if len(sources) == 1 && !o.has('t') {
		src := sources[0]
		sInfo, sErr := c.statOrLstat(src, cf.deref)
		dInfo, dErr := c.fs().Stat(c.abs(last))
		if sErr != nil && vfs.ErrnoOf(sErr) != vfs.ENOENT {
			c.perror(sErr, "can't stat '%s'", src)
			return 1
		}
		sDir := sErr == nil && sInfo.Mode.IsDir()
		dDir := dErr == nil && dInfo.Mode.IsDir()
		if o.has('T') && !sDir && dDir {
			c.die("'%s' is a directory", last)
		}
		if !sDir && !dDir || cf.recursive && sDir && dErr != nil || o.has('T') {
			if !c.copyFile(src, last, cf) {
				return 1
			}
			return 0
		}
	}
	status := 0
	for _, src := range sources {
		if !c.copyFile(src, joinPath(last, lastComponent(src)), cf) {
			status = 1
		}
	}
	return status
}

type copyFlags struct {
	recursive, preserve, force, noClobber, deref, symlink bool
}

func (c *cmd) statOrLstat(name string, follow bool) (vfs.Info, error) {
	if follow {
		return c.fs().Stat(c.abs(name))
	}
	return c.fs().Lstat(c.abs(name))
}

// copyFile is busybox's copy_file: src to dest, a directory's tree when recursive.
func (c *cmd) copyFile(src, dest string, f copyFlags) bool {
	c.tick()
	id := c.p.Identity()
	sInfo, err := c.statOrLstat(src, f.deref)
	if err != nil {
		c.perror(err, "can't stat '%s'", src)
		return false
	}
	dInfo, dErr := c.fs().Lstat(c.abs(dest))
	destExists := dErr == nil
	if dErr != nil && vfs.ErrnoOf(dErr) != vfs.ENOENT {
		c.perror(dErr, "can't stat '%s'", dest)
		return false
	}
	if destExists && c.sameFile(src, dest) {
		c.errorf("'%s' and '%s' are the same file", src, dest)
		return false
	}
	if f.noClobber && destExists {
		return true
	}
	switch {
	case sInfo.Mode.IsDir():
		if !f.recursive {
			c.errorf("omitting directory '%s'", src)
			return false
		}
		sReal, _ := c.realpath(src)
		dReal, _ := c.realpathMissingOK(dest)
		if dReal == sReal || strings.HasPrefix(dReal, sReal+"/") {
			c.errorf("recursion detected, omitting directory '%s'", src)
			return false
		}
		if destExists {
			if st, err := c.fs().Stat(c.abs(dest)); err != nil || !st.Mode.IsDir() {
				c.errorf("target '%s' is not a directory", dest)
				return false
			}
		} else {
			perm := sInfo.Mode.Perm() | 0o700 // filled in first, then given src's mode
			if err := c.fs().Mkdir(c.abs(dest), perm&^c.umask(), id.UID, id.GID); err != nil {
				c.perror(err, "can't create directory '%s'", dest)
				return false
			}
		}
		entries, err := c.fs().ReadDir(c.abs(src))
		if err != nil {
			c.perror(err, "can't open directory '%s'", src)
			return false
		}
		ok := true
		for _, e := range entries {
			if !c.copyFile(joinPath(src, e.Name()), joinPath(dest, e.Name()), f) {
				ok = false
			}
		}
		mode := sInfo.Mode.Perm()
		if !f.preserve {
			mode &^= c.umask()
		}
		if !destExists || f.preserve {
			c.fs().Chmod(c.abs(dest), mode|sInfo.Mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		}
		if f.preserve {
			c.fs().Chown(c.abs(dest), sInfo.UID, sInfo.GID)
		}
		return ok
	case sInfo.Mode&fs.ModeSymlink != 0:
		if destExists {
			if err := c.fs().Remove(c.abs(dest), false); err != nil {
				c.perror(err, "can't remove '%s'", dest)
				return false
			}
		}
		if err := c.fs().Symlink(sInfo.Target, c.abs(dest)); err != nil {
			c.perror(err, "can't create symlink '%s' to '%s'", dest, sInfo.Target)
			return false
		}
		return true
	case f.symlink:
		if err := c.fs().Symlink(src, c.abs(dest)); err != nil {
			c.perror(err, "can't create symlink '%s' to '%s'", dest, src)
			return false
		}
		return true
	}
	data, err := c.fs().ReadFile(c.abs(src))
	if err != nil {
		c.perror(err, "can't open '%s'", src)
		return false
	}
	if destExists && dInfo.Mode.IsDir() {
		c.perror(vfs.EISDIR, "can't create '%s'", dest)
		return false
	}
	if destExists && f.force {
		c.fs().Remove(c.abs(dest), false)
	}
	perm := sInfo.Mode.Perm()
	if !f.preserve {
		perm &^= c.umask()
	}
	if err := c.fs().WriteFile(c.abs(dest), data, perm, false, id.UID, id.GID); err != nil {
		if vfs.ErrnoOf(err) == vfs.ENOENT {
			c.errorf("can't create '%s': Path does not exist", dest)
		} else {
			c.perror(err, "can't create '%s'", dest)
		}
		return false
	}
	if sInfo.Program != "" {
		c.fs().SetProgram(c.abs(dest), sInfo.Program)
	}
	if f.preserve {
		c.fs().Chmod(c.abs(dest), sInfo.Mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
		c.fs().Chown(c.abs(dest), sInfo.UID, sInfo.GID)
	}
	return true
}

// sameFile reports whether a and b are one file: the filesystem has no inode numbers, so
// by their canonical paths.
func (c *cmd) sameFile(a, b string) bool {
	ra, err1 := c.realpath(a)
	rb, err2 := c.realpath(b)
	return err1 == nil && err2 == nil && ra == rb
}

func runMv(c *cmd) int {
	o, args := c.getopt("finTt:v", map[string]byte{"interactive": 'i', "force": 'f', "no-clobber": 'n', "no-target-directory": 'T', "target-directory=": 't', "verbose": 'v'})
	if len(args) < 2 && !(o.has('t') && len(args) == 1) {
		c.showUsage(1)
	}
	last, sources := args[len(args)-1], args[:len(args)-1]
	if o.has('t') {
		last, sources = o.val('t'), args
	}
	if len(sources) == 1 && !o.has('t') {
		dInfo, dErr := c.fs().Stat(c.abs(last))
		if o.has('T') || dErr != nil || !dInfo.Mode.IsDir() {
			return boolStatus(c.move(sources[0], last, o.has('n'), o.has('v')))
		}
	}
	status := 0
	for _, src := range sources {
		c.tick()
		dest := joinPath(last, lastComponent(src))
		if _, err := c.fs().Lstat(c.abs(dest)); err != nil && vfs.ErrnoOf(err) != vfs.ENOENT {
			c.perror(err, "can't stat '%s'", dest)
			return 1
		}
		if !c.move(src, dest, o.has('n'), o.has('v')) {
			status = 1
		}
	}
	return status
}

// move is rename(2) as mv uses it, falling back to copy and remove across mounts.
func (c *cmd) move(src, dest string, noClobber, verbose bool) bool {
	sp, dp := c.abs(src), c.abs(dest)
	dInfo, dErr := c.fs().Lstat(dp)
	if dErr == nil && noClobber {
		return true
	}
	err := c.rename(sp, dp)
	if err == nil {
		if verbose {
			c.printf("'%s' -> '%s'\n", src, dest)
		}
		return true
	}
	if vfs.ErrnoOf(err) != vfs.EXDEV {
		c.perror(err, "can't rename '%s'", src)
		return false
	}
	sInfo, sErr := c.fs().Lstat(sp)
	if sErr != nil {
		c.perror(err, "can't rename '%s'", src)
		return false
	}
	if dErr == nil {
		switch {
		case dInfo.Mode.IsDir() && !sInfo.Mode.IsDir():
			c.errorf("can't overwrite directory with non-directory")
			return false
		case !dInfo.Mode.IsDir() && sInfo.Mode.IsDir():
			c.errorf("can't overwrite non-directory with directory")
			return false
		}
		if err := c.fs().Remove(dp, false); err != nil && vfs.ErrnoOf(err) != vfs.ENOENT {
			c.perror(err, "can't remove '%s'", dest)
			return false
		}
	}
	if !c.copyFile(src, dest, copyFlags{recursive: true, preserve: true}) {
		return false
	}
	return c.removeFile(src, true, true, false)
}

// rename is rename(2): the filesystem's Rename with the checks it leaves to the kernel (a
// directory onto a file, a file onto a directory, a directory into itself).
func (c *cmd) rename(sp, dp string) error {
	sInfo, err := c.fs().Lstat(sp)
	if err != nil {
		return err
	}
	if dInfo, err := c.fs().Lstat(dp); err == nil {
		switch {
		case sInfo.Mode.IsDir() && !dInfo.Mode.IsDir():
			return vfs.ENOTDIR
		case !sInfo.Mode.IsDir() && dInfo.Mode.IsDir():
			return vfs.EISDIR
		}
		if sp == dp {
			return nil
		}
	}
	if sInfo.Mode.IsDir() {
		if rs, err := c.realpath(sp); err == nil {
			if rd, err := c.realpathMissingOK(dp); err == nil && strings.HasPrefix(rd, rs+"/") {
				return vfs.EINVAL
			}
		}
	}
	return c.fs().Rename(sp, dp)
}

func runLn(c *cmd) int {
	o, args := c.getopt("sfnbS:vT", nil)
	if len(args) == 0 {
		c.showUsage(1)
	}
	if len(args) == 1 {
		args = append(args, lastComponent(args[0]))
	}
	last := args[len(args)-1]
	sources := args[:len(args)-1]
	status := 0
	for _, src := range sources {
		c.tick()
		link := last
		if !o.has('T') {
			var info vfs.Info
			var err error
			if o.has('n') {
				info, err = c.fs().Lstat(c.abs(last))
			} else {
				info, err = c.fs().Stat(c.abs(last))
			}
			if err == nil && info.Mode.IsDir() {
				link = joinPath(last, lastComponent(src))
			}
		}
		if !o.has('s') {
			if _, err := c.fs().Stat(c.abs(src)); err != nil {
				if info, lerr := c.fs().Lstat(c.abs(src)); lerr != nil || info.Mode&fs.ModeSymlink == 0 {
					c.perror(err, "%s", src)
					status = 1
					continue
				}
			}
		}
		if o.has('f') {
			c.fs().Remove(c.abs(link), false)
		}
		var err error
		if o.has('s') {
			err = c.fs().Symlink(src, c.abs(link))
		} else {
			err = c.hardLink(src, link)
		}
		if err != nil {
			c.perror(err, "%s", link)
			status = 1
			continue
		}
		if o.has('v') {
			c.printf("'%s' -> '%s'\n", link, src)
		}
	}
	return status
}

// hardLink makes link a copy of src: the filesystem has no hard links, so the two are
// not one file afterwards.
func (c *cmd) hardLink(src, link string) error {
	if _, err := c.fs().Lstat(c.abs(link)); err == nil {
		return vfs.EEXIST
	}
	info, err := c.fs().Stat(c.abs(src))
	if err != nil {
		return err
	}
	if info.Mode.IsDir() {
		return errors.New("Operation not permitted")
	}
	data, err := c.fs().ReadFile(c.abs(src))
	if err != nil {
		return err
	}
	if err := c.fs().WriteFile(c.abs(link), data, info.Mode.Perm(), false, info.UID, info.GID); err != nil {
		return err
	}
	if info.Program != "" {
		c.fs().SetProgram(c.abs(link), info.Program)
	}
	return nil
}

const maxSymlinks = 40

// realpath is realpath(3): name made absolute with every link resolved; every component
// must exist.
func (c *cmd) realpath(name string) (string, error) {
	p := c.abs(name)
	resolved := "/"
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	links := 0
	for len(parts) > 0 {
		part := parts[0]
		parts = parts[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, part)
		info, err := c.fs().Lstat(next)
		if err != nil {
			return "", err
		}
		if info.Mode&fs.ModeSymlink != 0 {
			links++
			if links > maxSymlinks {
				return "", vfs.ELOOP
			}
			t := info.Target
			if strings.HasPrefix(t, "/") {
				resolved = "/"
			}
			parts = append(strings.Split(t, "/"), parts...)
			continue
		}
		if len(parts) > 0 && !info.Mode.IsDir() {
			return "", vfs.ENOTDIR // "file/..." or "file/"
		}
		resolved = next
	}
	return resolved, nil
}

// realpathMissingOK is busybox's xmalloc_realpath_coreutils: realpath, but a missing last
// component (or a dangling link's target) is allowed when its directory exists.
func (c *cmd) realpathMissingOK(name string) (string, error) {
	r, err := c.realpath(name)
	if err == nil || vfs.ErrnoOf(err) != vfs.ENOENT {
		return r, err
	}
	if info, lerr := c.fs().Lstat(c.abs(name)); lerr == nil && info.Mode&fs.ModeSymlink != 0 {
		t := info.Target
		if !strings.HasPrefix(t, "/") {
			t = joinPath(c.p.Dir(), t)
		}
		return c.realpathMissingOK(t)
	}
	trimmed := strings.TrimRight(name, "/")
	if trimmed == "" {
		return "/", nil
	}
	i := strings.LastIndexByte(trimmed, '/')
	switch {
	case i < 0:
		return "", err
	case i == 0:
		return trimmed, nil
	}
	dir, rerr := c.realpath(trimmed[:i])
	if rerr != nil {
		return "", rerr
	}
	return joinPath(dir, trimmed[i+1:]), nil
}

func runReadlink(c *cmd) int {
	o, args := c.getopt("fnvsq", nil)
	if len(args) != 1 {
		c.showUsage(1)
	}
	name := args[0]
	var out string
	if o.has('f') {
		r, err := c.realpathMissingOK(name)
		if err != nil {
			if o.has('v') {
				c.perror(err, "%s", name)
			}
			return 1
		}
		out = r
	} else {
		info, err := c.fs().Lstat(c.abs(name))
		if err == nil && info.Mode&fs.ModeSymlink == 0 {
			err = vfs.EINVAL
		}
		if err != nil {
			if o.has('v') {
				c.perror(err, "%s", name)
			}
			return 1
		}
		out = info.Target
	}
	if o.has('n') {
		c.write(out)
	} else {
		c.write(out + "\n")
	}
	return 0
}

func runRealpath(c *cmd) int {
	if len(c.args) == 0 {
		c.showUsage(1)
	}
	status := 0
	for _, name := range c.args {
		r, err := c.realpathMissingOK(name)
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
			continue
		}
		c.write(r + "\n")
	}
	return status
}

func runBasename(c *cmd) int {
	o, args := c.getopt("+as:z", nil)
	end := "\n"
	if o.has('z') {
		end = "\x00"
	}
	if !o.has('a') && !o.has('s') {
		if len(args) == 0 || len(args) > 2 {
			c.showUsage(1)
		}
		base := lastComponent(args[0])
		if len(args) == 2 {
			if s, ok := strings.CutSuffix(base, args[1]); ok && s != "" {
				base = s
			}
		}
		c.write(base + end)
		return 0
	}
	if len(args) == 0 {
		c.showUsage(1)
	}
	for _, a := range args {
		base := lastComponent(a)
		if sfx := o.val('s'); sfx != "" {
			if s, ok := strings.CutSuffix(base, sfx); ok && s != "" {
				base = s
			}
		}
		c.write(base + end)
	}
	return 0
}

func runDirname(c *cmd) int {
	if len(c.args) != 1 {
		c.showUsage(1)
	}
	c.write(dirname(c.args[0]) + "\n")
	return 0
}

// dirname is POSIX dirname(3).
func dirname(s string) string {
	t := strings.TrimRight(s, "/")
	if t == "" {
		if s == "" {
			return "."
		}
		return "/"
	}
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return "."
	}
	d := strings.TrimRight(t[:i], "/")
	if d == "" {
		return "/"
	}
	return d
}

func runMktemp(c *cmd) int {
	o, args := c.getopt("dqtp:u", map[string]byte{"directory": 'd', "quiet": 'q', "dry-run": 'u', "tmpdir?": 'p'})
	if len(args) > 1 {
		c.showUsage(1)
	}
	dir, _ := c.lookupEnv("TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	if o.val('p') != "" {
		dir = o.val('p')
	}
	tmpl := "tmp.XXXXXX"
	useDir := o.has('t') || o.has('p')
	if len(args) == 1 {
		tmpl = args[0]
	} else {
		useDir = true
	}
	if useDir {
		tmpl = joinPath(dir, tmpl)
	}
	fail := func(err error) int {
		if o.has('q') {
			return 1
		}
		c.errorf("%s", errText(err))
		return 1
	}
	if !strings.HasSuffix(tmpl, "XXXXXX") {
		return fail(vfs.EINVAL)
	}
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	id := c.p.Identity()
	for try := 0; try < 100; try++ {
		b := []byte(tmpl)
		for i := len(b) - 6; i < len(b); i++ {
			b[i] = letters[c.p.Rand().IntN(len(letters))]
		}
		name := string(b)
		p := c.abs(name)
		if _, err := c.fs().Lstat(p); err == nil {
			continue
		}
		var err error
		switch {
		case o.has('u'):
		case o.has('d'):
			err = c.fs().Mkdir(p, 0o700, id.UID, id.GID)
		default:
			err = c.fs().WriteFile(p, nil, 0o600, false, id.UID, id.GID)
		}
		if err != nil {
			return fail(err)
		}
		c.write(name + "\n")
		return 0
	}
	return fail(vfs.EEXIST)
}
