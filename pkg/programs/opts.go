package programs

import (
	"strings"
)

// opts is what getopt found: how often each option was given and the arguments of those
// that take one, in order.
type opts struct {
	n    map[byte]int
	args map[byte][]string
	seq  []optArg // every option in the order given (sed's -e and -f interleave)
}

type optArg struct {
	opt byte
	arg string
}

func (o opts) has(b byte) bool { return o.n[b] > 0 }

// val is the last argument given to option b ("" when it was not given).
func (o opts) val(b byte) string {
	if a := o.args[b]; len(a) > 0 {
		return a[len(a)-1]
	}
	return ""
}

func (o opts) vals(b byte) []string { return o.args[b] }

// getopt parses c.args by spec as busybox's getopt32 does on glibc (the busybox image's
// libc): short options may be bundled (-la) and their arguments attached (-n5) or
// separate (-n 5); options and operands may mix, as glibc permutes them, unless spec
// starts with '+', which stops at the first operand (the rest is a command's argv); "--"
// ends the options. A ':' after a letter means it takes an argument. long maps a long
// option to the short one it means: "recursive", "color=" when it takes an argument.
// A wrong option prints glibc's message and busybox's usage, and exits with errStatus.
func (c *cmd) getopt(spec string, long map[string]byte) (opts, []string) {
	o := opts{n: map[byte]int{}, args: map[byte][]string{}}
	stopAtOperand := strings.HasPrefix(spec, "+")
	spec = strings.TrimPrefix(spec, "+")
	takesArg := func(b byte) (known, arg bool) {
		i := strings.IndexByte(spec, b)
		if i < 0 || b == ':' {
			return false, false
		}
		return true, i+1 < len(spec) && spec[i+1] == ':'
	}
	add := func(b byte, arg string, hasArg bool) {
		o.n[b]++
		if hasArg {
			o.args[b] = append(o.args[b], arg)
		}
		o.seq = append(o.seq, optArg{b, arg})
	}
	var operands []string
	args := c.args
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return o, append(operands, args[i+1:]...)
		case strings.HasPrefix(a, "--"):
			// getopt32 always calls getopt_long, with busybox's long options or none.
			name, val, hasVal := strings.Cut(a[2:], "=")
			key, b, ok := matchLong(long, name)
			if !ok {
				c.errorf("unrecognized option '%s'", a)
				c.showUsage(c.errStatus)
			}
			switch {
			case strings.HasSuffix(key, "="):
				if !hasVal {
					if i+1 >= len(args) {
						c.errorf("option '--%s' requires an argument", strings.TrimSuffix(key, "="))
						c.showUsage(c.errStatus)
					}
					i++
					val = args[i]
				}
				add(b, val, true)
			case strings.HasSuffix(key, "?"):
				add(b, val, hasVal)
			default:
				if hasVal {
					c.errorf("option '--%s' doesn't allow an argument", key)
					c.showUsage(c.errStatus)
				}
				add(b, "", false)
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				b := a[j]
				known, arg := takesArg(b)
				if !known {
					c.errorf("invalid option -- '%c'", b)
					c.showUsage(c.errStatus)
				}
				if !arg {
					add(b, "", false)
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						c.errorf("option requires an argument -- '%c'", b)
						c.showUsage(c.errStatus)
					}
					i++
					val = args[i]
				}
				add(b, val, true)
				break
			}
		default:
			if stopAtOperand {
				return o, append(operands, args[i:]...)
			}
			operands = append(operands, a)
		}
	}
	return o, operands
}

// matchLong finds a long option by its name or, as glibc allows, a prefix of just one.
func matchLong(long map[string]byte, name string) (string, byte, bool) {
	var found []string
	for key := range long {
		k := strings.TrimRight(key, "=?")
		if k == name {
			return key, long[key], true
		}
		if strings.HasPrefix(k, name) {
			found = append(found, key)
		}
	}
	if len(found) == 1 {
		return found[0], long[found[0]], true
	}
	return "", 0, false
}
