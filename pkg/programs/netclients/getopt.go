package netclients

import (
	"fmt"
	"io"
	"strings"

	"github.com/minikubelet/minikubelet/pkg/shell"
)

// longOpt is a long option of a busybox applet: its name, the short option (or private
// key) it stands for, and whether it takes an argument.
type longOpt struct {
	name string
	key  byte
	arg  bool
}

// optArg is one option as given, with its argument.
type optArg struct {
	key byte
	val string
}

// parsed is a command line parsed by getopt: the options in order, then the operands.
type parsed struct {
	seq      []optArg
	operands []string
}

func (o parsed) has(b byte) bool { return o.count(b) > 0 }

func (o parsed) count(b byte) int {
	n := 0
	for _, a := range o.seq {
		if a.key == b {
			n++
		}
	}
	return n
}

// last is the argument of b's last occurrence.
func (o parsed) last(b byte) (string, bool) {
	for i := len(o.seq) - 1; i >= 0; i-- {
		if o.seq[i].key == b {
			return o.seq[i].val, true
		}
	}
	return "", false
}

// all are the arguments of every occurrence of b, in order.
func (o parsed) all(b byte) []string {
	var out []string
	for _, a := range o.seq {
		if a.key == b {
			out = append(out, a.val)
		}
	}
	return out
}

// getopt parses args as glibc's getopt_long does for busybox's getopt32: spec lists the
// short options ("O:" takes an argument, "n::" an optional attached one), long the long
// ones (a unique prefix will do); operands may come between options. The error is
// glibc's message, which the applet prints before its usage.
func getopt(args []string, spec string, long []longOpt) (parsed, error) {
	var o parsed
	short := func(b byte) (known bool, arg int) {
		i := strings.IndexByte(spec, b)
		if i < 0 || b == ':' {
			return false, 0
		}
		switch {
		case strings.HasPrefix(spec[i+1:], "::"):
			return true, 2
		case strings.HasPrefix(spec[i+1:], ":"):
			return true, 1
		}
		return true, 0
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			o.operands = append(o.operands, args[i+1:]...)
			return o, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			var match *longOpt
			for j := range long {
				if long[j].name == name {
					match = &long[j]
					break
				}
				if strings.HasPrefix(long[j].name, name) {
					if match != nil {
						return o, fmt.Errorf("option '%s' is ambiguous", a)
					}
					match = &long[j]
				}
			}
			if match == nil {
				return o, fmt.Errorf("unrecognized option '%s'", a)
			}
			switch {
			case match.arg && !hasVal:
				if i+1 >= len(args) {
					return o, fmt.Errorf("option '--%s' requires an argument", match.name)
				}
				i++
				val = args[i]
			case !match.arg && hasVal:
				return o, fmt.Errorf("option '--%s' doesn't allow an argument", match.name)
			}
			o.seq = append(o.seq, optArg{match.key, val})
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				b := a[j]
				known, arg := short(b)
				if !known {
					return o, fmt.Errorf("invalid option -- '%c'", b)
				}
				if arg == 0 {
					o.seq = append(o.seq, optArg{b, ""})
					continue
				}
				val := a[j+1:]
				if val == "" && arg == 1 {
					if i+1 >= len(args) {
						return o, fmt.Errorf("option requires an argument -- '%c'", b)
					}
					i++
					val = args[i]
				}
				o.seq = append(o.seq, optArg{b, val})
				break
			}
		default:
			o.operands = append(o.operands, a)
		}
	}
	return o, nil
}

// usageError prints busybox's "applet: message" for a bad command line, then its banner
// and usage, and returns the status it exits with.
func usageError(p *shell.Proc, name, usage string, err error) int {
	if err != nil {
		fmt.Fprintf(p.Stderr(), "%s: %v\n", name, err)
	}
	io.WriteString(p.Stderr(), banner+"\nUsage: "+name+" "+usage+"\n")
	return 1
}
