package netclients

import (
	"fmt"
	"io"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// usageError prints busybox's "applet: message" for a bad command line, then its banner
// and usage, and returns the status it exits with.
func usageError(p *shell.Proc, name, usage string, err error) int {
	if err != nil {
		fmt.Fprintf(p.Stderr(), "%s: %v\n", name, err)
	}
	io.WriteString(p.Stderr(), banner+"\nUsage: "+name+" "+usage+"\n")
	return 1
}
