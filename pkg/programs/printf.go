package programs

import (
	"fmt"
	"strconv"
	"strings"
)

func runPrintf(c *cmd) int {
	args := c.args
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		c.showUsage(1)
	}
	format, args := args[0], args[1:]
	status := 0
	// The format is reused while arguments remain, as long as it consumes some.
	for {
		n, stop, ok := c.printFormatted(format, args, &status)
		if !ok {
			return 1
		}
		if stop || n == 0 || n >= len(args) {
			break
		}
		args = args[n:]
	}
	return status
}

// printFormatted prints format once with args, as busybox's print_formatted. It returns
// how many arguments it used, whether \c (or %b's \c) stopped all output, and false for a
// bad directive.
func (c *cmd) printFormatted(f string, args []string, status *int) (used int, stop bool, ok bool) {
	next := func() (string, bool) {
		if used < len(args) {
			used++
			return args[used-1], true
		}
		return "", false
	}
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case '\\':
			i++
			if i < len(f) && f[i] == 'c' {
				return used, true, true
			}
			ch, j := escape(f, i)
			c.out.WriteByte(ch)
			i = j - 1
		case '%':
			start := i
			i++
			if i >= len(f) {
				c.errorf("%%: invalid format")
				return used, false, false
			}
			if f[i] == '%' {
				c.out.WriteByte('%')
				continue
			}
			if f[i] == 'b' {
				if a, ok := next(); ok {
					if c.printEscaped(a) {
						return used, true, true
					}
				}
				continue
			}
			spec := "%"
			for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
				spec += string(f[i])
				i++
			}
			if i < len(f) && f[i] == '*' {
				i++
				if a, ok := next(); ok {
					spec += strconv.Itoa(c.widthArg(a, status))
				}
			} else {
				for i < len(f) && f[i] >= '0' && f[i] <= '9' {
					spec += string(f[i])
					i++
				}
			}
			if i < len(f) && f[i] == '.' {
				spec += "."
				i++
				if i < len(f) && f[i] == '*' {
					i++
					if a, ok := next(); ok {
						spec += strconv.Itoa(max(c.widthArg(a, status), 0))
					}
				} else {
					for i < len(f) && f[i] >= '0' && f[i] <= '9' {
						spec += string(f[i])
						i++
					}
				}
			}
			for i < len(f) && (f[i]|0x20 == 'l' || f[i] == 'h' || f[i] == 'z') {
				i++
			}
			if i >= len(f) || strings.IndexByte("diouxXfeEgGcs", f[i]) < 0 {
				c.errorf("%s: invalid format", f[start:])
				return used, false, false
			}
			arg, _ := next()
			c.printDirective(spec, f[i], arg, status)
		default:
			c.out.WriteByte(f[i])
		}
	}
	return used, false, true
}

// printEscaped prints %b's argument with its escapes; true when \c stopped output.
func (c *cmd) printEscaped(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			c.out.WriteByte(s[i])
			continue
		}
		i++
		if i < len(s) && s[i] == 'c' {
			return true
		}
		if i < len(s) && s[i] == '0' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '7' {
			i++
		}
		ch, j := escape(s, i)
		c.out.WriteByte(ch)
		i = j - 1
	}
	return false
}

func (c *cmd) widthArg(a string, status *int) int {
	n, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil {
		c.errorf("invalid number '%s'", a)
		*status = 1
		return 0
	}
	return n
}

// printDirective prints one conversion of arg, converting it as C's printf would take
// it: a number for d, i, o, u, x, X (a leading quote gives the next character's code),
// a float for e, f, g; a bad number complains and prints 0.
func (c *cmd) printDirective(spec string, conv byte, arg string, status *int) {
	numArg := func() string {
		a := strings.TrimLeft(arg, " \t\n")
		if len(a) > 0 && (a[0] == '"' || a[0] == '\'') {
			if len(a) > 1 {
				return strconv.Itoa(int(a[1]))
			}
			return "0"
		}
		return a
	}
	bad := func(a string) {
		c.errorf("invalid number '%s'", a)
		*status = 1
	}
	switch conv {
	case 'c':
		if arg != "" {
			fmt.Fprintf(c.out, spec+"c", arg[0])
		} else {
			fmt.Fprintf(c.out, spec+"s", "")
		}
	case 's':
		fmt.Fprintf(c.out, spec+"s", arg)
	case 'd', 'i':
		a := numArg()
		v, err := parseCInt(a)
		if err != nil {
			bad(a)
			v = 0
		}
		fmt.Fprintf(c.out, spec+"d", v)
	case 'o', 'u', 'x', 'X':
		a := numArg()
		v, err := parseCInt(a)
		if err != nil {
			bad(a)
			v = 0
		}
		verb := string(conv)
		if conv == 'u' {
			verb = "d"
		}
		// Negative numbers print as their two's complement, as C's unsigned conversions.
		fmt.Fprintf(c.out, spec+verb, uint64(v))
	default:
		a := numArg()
		v, err := strconv.ParseFloat(strings.TrimSpace(a), 64)
		if err != nil && a != "" {
			bad(a)
			v = 0
		}
		if !strings.Contains(spec, ".") && (conv == 'g' || conv == 'G') {
			spec += ".6" // C's default precision; Go's %g would print the shortest
		}
		fmt.Fprintf(c.out, spec+string(conv), v)
	}
}

// parseCInt parses an integer as strtoll with base 0: decimal, 0x hex, 0 octal, with an
// optional sign.
func parseCInt(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t := strings.TrimPrefix(s, "+")
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(t, "-")
	base := 10
	switch {
	case strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X"):
		base, t = 16, t[2:]
	case len(t) > 1 && t[0] == '0':
		base, t = 8, t[1:]
	}
	u, err := strconv.ParseUint(t, base, 64)
	if err != nil {
		return 0, err
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}
