package getopt

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cpLong := []Long{{"no-clobber", 'n'}, {"no-dereference", 'P'}, {"no-target-directory", 'T'}, {"target-directory=", 't'}, {"verbose", 'v'}}
	sedLong := []Long{{"quiet", 'n'}, {"silent", 'n'}, {"expression=", 'e'}}
	gzLong := []Long{{"stdout", 'c'}, {"to-stdout", 'c'}, {"std-thing", 'c'}, {"color?", 0xff}}
	opt := func(k byte) Opt { return Opt{Key: k} }
	val := func(k byte, v string) Opt { return Opt{k, v, true} }
	for _, tc := range []struct {
		name     string
		args     []string
		spec     string
		long     []Long
		seq      []Opt
		operands []string
		err      string
	}{
		{name: "bundled", args: []string{"-la", "x"}, spec: "la", seq: []Opt{opt('l'), opt('a')}, operands: []string{"x"}},
		{name: "attached and separate arguments", args: []string{"-n5", "-n", "6", "-vn7"}, spec: "n:v", seq: []Opt{val('n', "5"), val('n', "6"), opt('v'), val('n', "7")}},
		{name: "optional short argument is attached only", args: []string{"-nv", "-n", "x"}, spec: "n::", seq: []Opt{val('n', "v"), opt('n')}, operands: []string{"x"}},
		{name: "operands mix with options", args: []string{"a", "-v", "b"}, spec: "v", seq: []Opt{opt('v')}, operands: []string{"a", "b"}},
		{name: "plus stops at the first operand", args: []string{"-i", "cmd", "-v"}, spec: "+iv", seq: []Opt{opt('i')}, operands: []string{"cmd", "-v"}},
		{name: "double dash ends the options", args: []string{"-v", "--", "-x"}, spec: "v", seq: []Opt{opt('v')}, operands: []string{"-x"}},
		{name: "a lone dash is an operand", args: []string{"-", "-v"}, spec: "v", seq: []Opt{opt('v')}, operands: []string{"-"}},
		{name: "long exact", args: []string{"--verbose"}, long: cpLong, seq: []Opt{opt('v')}},
		{name: "long exact beats a longer name", args: []string{"--stdout"}, long: gzLong, seq: []Opt{opt('c')}},
		{name: "long unique prefix", args: []string{"--verb"}, long: cpLong, seq: []Opt{opt('v')}},
		{name: "long argument with =", args: []string{"--target-directory=d"}, long: cpLong, seq: []Opt{val('t', "d")}},
		{name: "long argument next", args: []string{"--target", "d", "x"}, long: cpLong, seq: []Opt{val('t', "d")}, operands: []string{"x"}},
		{name: "prefix of names that mean the same", args: []string{"--st"}, long: gzLong, seq: []Opt{opt('c')}},
		{name: "optional long argument", args: []string{"--color=always", "--color"}, long: gzLong, seq: []Opt{val(0xff, "always"), opt(0xff)}},
		{name: "ambiguous prefix in table order", args: []string{"--no"}, long: cpLong,
			err: "option '--no' is ambiguous; possibilities: '--no-clobber' '--no-dereference' '--no-target-directory'"},
		{name: "ambiguous quotes the whole argument", args: []string{"--no=x"}, long: cpLong,
			err: "option '--no=x' is ambiguous; possibilities: '--no-clobber' '--no-dereference' '--no-target-directory'"},
		{name: "ambiguous lists the first and those that differ from it", args: []string{"--s"}, long: append(sedLong, Long{"sandbox", 0xf0}),
			err: "option '--s' is ambiguous; possibilities: '--silent' '--sandbox'"},
		{name: "unrecognized long", args: []string{"--bogus=1"}, long: cpLong, err: "unrecognized option '--bogus=1'"},
		{name: "long needs its argument", args: []string{"--expression"}, long: sedLong, err: "option '--expression' requires an argument"},
		{name: "long takes no argument", args: []string{"--q=1"}, long: sedLong, err: "option '--quiet' doesn't allow an argument"},
		{name: "invalid short", args: []string{"-vZ"}, spec: "v", err: "invalid option -- 'Z'"},
		{name: "short needs its argument", args: []string{"-n"}, spec: "n:", err: "option requires an argument -- 'n'"},
		{name: "colon is no option", args: []string{"-:"}, spec: "n:", err: "invalid option -- ':'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(tc.args, tc.spec, tc.long)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Seq, tc.seq) || strings.Join(r.Operands, " ") != strings.Join(tc.operands, " ") {
				t.Errorf("got %+v %q, want %+v %q", r.Seq, r.Operands, tc.seq, tc.operands)
			}
		})
	}
}

func TestResult(t *testing.T) {
	r, err := Parse([]string{"-vv", "-e", "a", "--color=always", "--color", "-e", "b"}, "ve:", []Long{{"color?", 'K'}})
	if err != nil {
		t.Fatal(err)
	}
	r.Imply('x')
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"Count", r.Count('v'), 2},
		{"Has", r.Has('x') && !r.Has('q'), true},
		{"Vals", r.Vals('e'), []string{"a", "b"}},
		{"Val keeps an optional argument left out later", r.Val('K'), "always"},
		{"Val of an option without one", r.Val('v'), ""},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if _, ok := r.Last('q'); ok {
		t.Error("Last of an option not given: ok")
	}
}
