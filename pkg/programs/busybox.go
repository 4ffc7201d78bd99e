package programs

import (
	"fmt"
	"io"
	"path"
	"strings"
)

func runBusybox(c *cmd) int {
	// Invoked by an applet's name (a link to busybox), busybox is that applet.
	if base := path.Base(c.argv0); base != "busybox" {
		if a, ok := applets[base]; ok {
			return runApplet(c.p, base, a, append([]string{c.argv0}, c.args...))
		}
		c.out.Flush()
		fmt.Fprintf(c.p.Stderr(), "%s: applet not found\n", base)
		return 127
	}
	if len(c.args) == 0 || c.args[0] == "--help" {
		c.out.Flush()
		io.WriteString(c.p.Stderr(), banner+"\nUsage: busybox [function [arguments]...]\n   or: busybox --list\n   or: function [arguments]...\n\nCurrently defined functions:\n\t"+strings.Join(Names(), ", ")+"\n")
		if len(c.args) == 0 {
			return 1
		}
		return 0
	}
	if c.args[0] == "--list" {
		for _, n := range Names() {
			c.write(n + "\n")
		}
		return 0
	}
	name := c.args[0]
	a, ok := applets[name]
	if !ok || name == "busybox" {
		c.out.Flush()
		fmt.Fprintf(c.p.Stderr(), "%s: applet not found\n", name)
		return 127
	}
	return runApplet(c.p, name, a, c.args)
}
