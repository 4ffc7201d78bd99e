package programs

import (
	"io/fs"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

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
		if !c.walk(name, o.Has('R'), func(p string, info vfs.Info, depth int) bool {
			if depth == 0 {
				st, err := c.fs().Stat(c.abs(p))
				if err != nil {
					if !o.Has('f') {
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
				if !o.Has('f') {
					c.perror(err, "%s", p)
				}
				return false
			}
			if o.Has('v') || o.Has('c') && unixMode(info.Mode) != m {
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
