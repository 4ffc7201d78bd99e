package shell

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// The table keeps what was set, in order, whatever its size (a scan below 16 variables, an
// index above), and arrays whole.
func TestVarTable(t *testing.T) {
	for _, n := range []int{1, smallTable, smallTable + 1, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var tab varTable
			var want []string
			for i := range n {
				name := fmt.Sprintf("V%d", i)
				tab.set(name, expand.Variable{Set: true, Exported: i%2 == 0, Kind: expand.String, Str: fmt.Sprint(i)})
				want = append(want, name)
			}
			tab.set("V0", expand.Variable{Set: true, ReadOnly: true, Kind: expand.String, Str: "again"}) // in place
			tab.del(fmt.Sprintf("V%d", n/2))
			want = slices.Delete(want, n/2, n/2+1)
			if n/2 != 0 {
				if v := tab.get("V0"); v.Str != "again" || !v.ReadOnly || v.Exported {
					t.Errorf("V0 = %+v", v)
				}
			}
			tab.set("arr", expand.Variable{Set: true, Kind: expand.Indexed, List: []string{"a", "b"}})
			want = append(want, "arr")
			var got []string
			tab.each(func(name string, _ expand.Variable) bool { got = append(got, name); return true })
			if !slices.Equal(got, want) {
				t.Errorf("order = %v, want %v", got, want)
			}
			if v, ok := tab.lookup(fmt.Sprintf("V%d", n/2)); ok {
				t.Errorf("deleted variable still there: %+v", v)
			}
			if v := tab.get("arr"); !slices.Equal(v.List, []string{"a", "b"}) || v.Kind != expand.Indexed {
				t.Errorf("arr = %+v", v)
			}
			c := tab.clone()
			c.set("V1", expand.Variable{Set: true, Kind: expand.String, Str: "child"})
			if n > 1 && tab.get("V1").Str == "child" {
				t.Error("a clone's assignment reached its parent")
			}
		})
	}
}

// A word taken as plain text expands to itself: literalFields agrees with the expand
// package on every word it takes, and leaves it every word it would change.
func TestLiteralFieldsAgreeWithExpand(t *testing.T) {
	words := []string{"tick", "5", "-n", "--x=1", "a.b", "/usr/bin", "x=1", "@", "%", "^", "+", ",", ":", "a,b",
		"c*", "~", "~root", "a~", "'q'", `"d"`, `\e`, "{a,b}", "$HOME", "${x}", "$(echo)", "`echo`", "[ab]", "?", "a]"}
	for _, w := range words {
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader("echo "+w), "")
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		call := f.Stmts[0].Cmd.(*syntax.CallExpr)
		got, ok := literalFields(call.Args[1:])
		want, err := expand.Fields(&expand.Config{Env: expand.ListEnviron("HOME=/root", "x=X")}, call.Args[1:]...)
		if err != nil {
			if ok {
				t.Errorf("%s: taken as plain text, but expanding it fails: %v", w, err)
			}
			continue
		}
		if ok && !slices.Equal(got, want) {
			t.Errorf("%s: literal fields %q, expand says %q", w, got, want)
		}
	}
}
