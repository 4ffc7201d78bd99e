package programs

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// psColumns are ps -o's columns: their width, header and value. The machine keeps no
// times, sizes or terminals: those columns show what an idle, just started process shows.
var psColumns = []struct {
	name, header string
	width        int
	value        func(c *cmd, q shell.ProcInfo) string
}{
	{"user", "USER", 8, func(c *cmd, q shell.ProcInfo) string { return c.userName(q.UID) }},
	{"group", "GROUP", 8, func(c *cmd, q shell.ProcInfo) string { return c.primaryGroup(q.UID) }},
	{"comm", "COMMAND", 16, func(_ *cmd, q shell.ProcInfo) string { return path.Base(firstArg(q.Argv)) }},
	{"args", "COMMAND", 0, func(_ *cmd, q shell.ProcInfo) string { return strings.Join(q.Argv, " ") }},
	{"pid", "PID", 5, func(_ *cmd, q shell.ProcInfo) string { return fmt.Sprintf("%5d", q.PID) }},
	{"ppid", "PPID", 5, func(_ *cmd, q shell.ProcInfo) string { return fmt.Sprintf("%5d", q.PPID) }},
	{"pgid", "PGID", 5, func(_ *cmd, q shell.ProcInfo) string { return fmt.Sprintf("%5d", 1) }},
	{"etime", "ELAPSED", 7, func(*cmd, shell.ProcInfo) string { return " 0:00" }},
	{"nice", "NI", 5, func(*cmd, shell.ProcInfo) string { return fmt.Sprintf("%5d", 0) }},
	{"rgroup", "RGROUP", 8, func(c *cmd, q shell.ProcInfo) string { return c.primaryGroup(q.UID) }},
	{"ruser", "RUSER", 8, func(c *cmd, q shell.ProcInfo) string { return c.userName(q.UID) }},
	{"time", "TIME", 5, func(*cmd, shell.ProcInfo) string { return " 0:00" }},
	{"tty", "TT", 6, func(*cmd, shell.ProcInfo) string { return "?" }},
	{"vsz", "VSZ", 4, func(*cmd, shell.ProcInfo) string { return "0" }},
	{"sid", "SID", 5, func(_ *cmd, q shell.ProcInfo) string { return fmt.Sprintf("%5d", 1) }},
	{"stat", "STAT", 4, func(c *cmd, q shell.ProcInfo) string {
		if q.PID == c.p.PID() {
			return "R"
		}
		return "S"
	}},
	{"rss", "RSS", 4, func(*cmd, shell.ProcInfo) string { return "0" }},
}

func firstArg(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	return argv[0]
}

func runPs(c *cmd) int {
	// busybox's ps lists every process whatever the options; -o picks the columns.
	o, _ := c.getopt("Zo:aAdeflT", nil)
	type col struct {
		header string
		width  int
		value  func(c *cmd, q shell.ProcInfo) string
	}
	var cols []col
	spec := "pid,user,time,args"
	if o.Has('o') {
		spec = strings.Join(o.Vals('o'), ",")
	}
	for _, item := range strings.Split(spec, ",") {
		name, header, hasHeader := strings.Cut(item, "=")
		found := false
		for _, pc := range psColumns {
			if pc.name == name {
				cl := col{pc.header, pc.width, pc.value}
				if hasHeader {
					cl.header = header
					if header != "" {
						cl.width = len(header)
					}
				}
				cols = append(cols, cl)
				found = true
			}
		}
		if !found {
			var names []string
			for _, pc := range psColumns {
				names = append(names, pc.name)
			}
			c.die("bad -o argument '%s', supported arguments: %s", name, strings.Join(names, ","))
		}
	}
	header := false
	for _, cl := range cols {
		if cl.header != "" {
			header = true
		}
	}
	line := func(field func(cl col) string) {
		var b strings.Builder
		for i, cl := range cols {
			v := field(cl)
			if v == "" {
				v = "-"
			}
			if i == len(cols)-1 {
				b.WriteString(v)
				break
			}
			b.WriteString(v + strings.Repeat(" ", max(cl.width-len(v)+1, 1)))
		}
		c.write(b.String() + "\n")
	}
	if header {
		line(func(cl col) string { return cl.header })
	}
	for _, q := range c.p.Procs() {
		c.tick()
		line(func(cl col) string {
			v := cl.value(c, q)
			if cl.width > 0 && len(v) > cl.width {
				v = v[:cl.width]
			}
			return v
		})
	}
	return 0
}

func runPidof(c *cmd) int {
	o, args := c.getopt("so:", nil)
	omit := map[int]bool{}
	for _, v := range o.Vals('o') {
		for _, s := range strings.Split(v, ",") {
			if s == "%PPID" {
				omit[c.p.PPID()] = true
			} else if n, err := strconv.Atoi(s); err == nil {
				omit[n] = true
			}
		}
	}
	status := 1
	first := true
	for _, name := range args {
		procs := c.p.Procs()
		// Newest first, as busybox scans /proc and lists in reverse.
		for i := len(procs) - 1; i >= 0; i-- {
			q := procs[i]
			if omit[q.PID] || len(q.Argv) == 0 {
				continue
			}
			if path.Base(q.Argv[0]) != name && q.Argv[0] != name {
				continue
			}
			if !first {
				c.write(" ")
			}
			c.printf("%d", q.PID)
			first = false
			status = 0
			if o.Has('s') {
				break
			}
		}
	}
	if !first {
		c.write("\n")
	}
	return status
}
