package programs

import (
	"strconv"
	"strings"
)

// runMount is busybox mount as an unprivileged container runs it: without operands it
// lists what /proc/mounts holds ("DEV on DIR type TYPE (OPTS)"), only the types -t names
// (a comma list; "no" before it inverts it), as the e2e suite asks `mount -t cgroup2` to
// find cgroup v2. Mounting needs CAP_SYS_ADMIN, which a container lacks: mount(2) fails
// with EPERM and busybox says so.
func runMount(c *cmd) int {
	o, args := c.getopt("o:t:rwanfvsiO:", nil)
	if o.Has('a') {
		if _, err := c.fs().Stat("/etc/fstab"); err != nil {
			c.errorf("can't read '/etc/fstab': %s", errText(err))
			return 1
		}
		args = append(args, "-a")
	}
	if len(args) > 0 {
		c.errorf("permission denied (are you root?)")
		return 1
	}
	data, err := c.readAll("/proc/mounts")
	if err != nil {
		c.perror(err, "/proc/mounts")
		return 1
	}
	types := o.Val('t')
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !fstypeMatches(f[2], types) {
			continue
		}
		c.printf("%s on %s type %s (%s)\n", UnescapeMount(f[0]), UnescapeMount(f[1]), f[2], f[3])
	}
	return 0
}

// fstypeMatches reports whether typ is in list, busybox's -t: a comma list of types,
// all of them excluded when it starts with "no"; an empty list matches every type.
func fstypeMatches(typ, list string) bool {
	if list == "" {
		return true
	}
	want := true
	if rest, ok := strings.CutPrefix(list, "no"); ok {
		want, list = false, rest
	}
	for _, t := range strings.Split(list, ",") {
		if t == typ {
			return want
		}
	}
	return !want
}

// UnescapeMount undoes the octal escapes of a /proc/mounts field (\040 for a space), as
// getmntent does.
func UnescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
