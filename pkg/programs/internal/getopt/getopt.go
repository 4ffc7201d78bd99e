package getopt

import (
	"fmt"
	"strings"
)

// Long is a long option: its name and the key (a short option's letter, or a private
// byte for one with no short form) it stands for. The name ends in "=" when the option
// takes an argument (--file=F or --file F) and in "?" when it takes an optional one
// (--color or --color=WHEN only). A table lists them in busybox's order: glibc names the
// possibilities of an ambiguous prefix in that order.
type Long struct {
	Name string
	Key  byte
}

// name is the option's name without its argument mark, and how it takes an argument.
func (l Long) name() (string, argKind) {
	switch {
	case strings.HasSuffix(l.Name, "="):
		return l.Name[:len(l.Name)-1], required
	case strings.HasSuffix(l.Name, "?"):
		return l.Name[:len(l.Name)-1], optional
	}
	return l.Name, none
}

type argKind int

const (
	none argKind = iota
	required
	optional
)

// Opt is one option as given: its key and its argument, if it had one.
type Opt struct {
	Key    byte
	Val    string
	HasVal bool
}

// Result is a parsed command line: the options in the order given, then the operands.
type Result struct {
	Seq      []Opt
	Operands []string
}

// Has reports whether option b was given.
func (r Result) Has(b byte) bool {
	for _, o := range r.Seq {
		if o.Key == b {
			return true
		}
	}
	return false
}

// Count is how many times option b was given (-vv is 2).
func (r Result) Count(b byte) int {
	n := 0
	for _, o := range r.Seq {
		if o.Key == b {
			n++
		}
	}
	return n
}

// Last is the argument b was last given with. An optional argument left out does not
// clear an earlier one, as getopt32 keeps the last optarg it saw.
func (r Result) Last(b byte) (string, bool) {
	for i := len(r.Seq) - 1; i >= 0; i-- {
		if o := r.Seq[i]; o.Key == b && o.HasVal {
			return o.Val, true
		}
	}
	return "", false
}

// Val is Last's argument, "" when b never had one.
func (r Result) Val(b byte) string {
	v, _ := r.Last(b)
	return v
}

// Vals are the arguments of every occurrence of b that had one, in order (a list option
// such as grep -e).
func (r Result) Vals(b byte) []string {
	var out []string
	for _, o := range r.Seq {
		if o.Key == b && o.HasVal {
			out = append(out, o.Val)
		}
	}
	return out
}

// Imply records b as given, for an option that stands for others (cat -A is -vET).
func (r *Result) Imply(b byte) { r.Seq = append(r.Seq, Opt{Key: b}) }

// Parse parses args (without the program name) by spec and long, as glibc's getopt_long
// does for busybox's getopt32:
//   - spec lists the short options; "n:" takes an argument, attached (-n5) or next (-n 5),
//     and "n::" an optional one, attached only; short options bundle (-la);
//   - options and operands may mix, as glibc permutes them, unless spec starts with '+',
//     which stops at the first operand (the rest is a command's argv); "--" ends the
//     options and "-" is an operand;
//   - a long option may be a prefix of one name, or of several that mean the same.
//
// The error is glibc's message, which the applet prints after its name, before its usage.
func Parse(args []string, spec string, long []Long) (Result, error) {
	var r Result
	stopAtOperand := strings.HasPrefix(spec, "+")
	spec = strings.TrimPrefix(spec, "+")
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			r.Operands = append(r.Operands, args[i+1:]...)
			return r, nil
		case strings.HasPrefix(a, "--"):
			given, val, hasVal := strings.Cut(a[2:], "=")
			l, err := match(long, given, a)
			if err != nil {
				return r, err
			}
			name, kind := l.name()
			switch kind {
			case required:
				if !hasVal {
					if i+1 >= len(args) {
						return r, fmt.Errorf("option '--%s' requires an argument", name)
					}
					i++
					val, hasVal = args[i], true
				}
			case none:
				if hasVal {
					return r, fmt.Errorf("option '--%s' doesn't allow an argument", name)
				}
			}
			r.Seq = append(r.Seq, Opt{l.Key, val, hasVal})
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				b := a[j]
				kind, known := short(spec, b)
				if !known {
					return r, fmt.Errorf("invalid option -- '%c'", b)
				}
				if kind == none {
					r.Seq = append(r.Seq, Opt{Key: b})
					continue
				}
				val := a[j+1:]
				if val == "" && kind == required {
					if i+1 >= len(args) {
						return r, fmt.Errorf("option requires an argument -- '%c'", b)
					}
					i++
					val = args[i]
				}
				r.Seq = append(r.Seq, Opt{b, val, val != "" || kind == required})
				break
			}
		default:
			if stopAtOperand {
				r.Operands = append(r.Operands, args[i:]...)
				return r, nil
			}
			r.Operands = append(r.Operands, a)
		}
	}
	return r, nil
}

// short finds option b in spec and how it takes an argument.
func short(spec string, b byte) (argKind, bool) {
	i := strings.IndexByte(spec, b)
	if i < 0 || b == ':' {
		return none, false
	}
	switch {
	case strings.HasPrefix(spec[i+1:], "::"):
		return optional, true
	case strings.HasPrefix(spec[i+1:], ":"):
		return required, true
	}
	return none, true
}

// match finds the long option given names, as glibc does: its exact name, or a prefix of
// one. A prefix of several is ambiguous unless they all mean the same (the same key and
// argument) as the first; the error then names the first and those that differ from it,
// in the table's order. arg is the whole argument, which glibc's messages quote.
func match(long []Long, given, arg string) (Long, error) {
	for _, l := range long {
		if name, _ := l.name(); name == given {
			return l, nil
		}
	}
	var found []Long // the first match, then those that differ from it
	for _, l := range long {
		name, kind := l.name()
		if !strings.HasPrefix(name, given) {
			continue
		}
		if len(found) > 0 {
			if _, first := found[0].name(); l.Key == found[0].Key && kind == first {
				continue
			}
		}
		found = append(found, l)
	}
	switch len(found) {
	case 0:
		return Long{}, fmt.Errorf("unrecognized option '%s'", arg)
	case 1:
		return found[0], nil
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "option '%s' is ambiguous; possibilities:", arg)
	for _, l := range found {
		name, _ := l.name()
		fmt.Fprintf(&msg, " '--%s'", name)
	}
	return Long{}, fmt.Errorf("%s", msg.String())
}
