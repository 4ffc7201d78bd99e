package shell

import (
	"fmt"
	"path"
	"slices"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
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

// simpleFields expands every word as mvdan's expander does: each script prints its
// fields once through simpleFields and once with mvdan's expander alone, on the same
// files and variables, and the two outputs (and statuses) must be the same. Where mvdan's
// globbing differs from ash's, simpleFields gives ash's: what busybox 1.35 prints for the
// same files (and test/difftest checks against it).
func TestSimpleFieldsAgreeWithExpand(t *testing.T) {
	words := []string{
		// literals
		"tick", "5", "-n", "--x=1", "a.b", "/usr/bin", "x=1", "@", "%", "^", "+", ",", ":", "a,b", "a]", "]",
		"~", "~root", "a~", `\e`, "{a,b}", "a{b", "}",
		// quoted text and plain parameters
		"'q'", `"d"`, `""`, `''`, `"a b"`, `"$v"`, `"${v}"`, `"$v"x`, `x"$v"`, `'a'"$v"'b'`, `"<$v>"`, `"$e"`,
		`"$unset"`, `"$1"`, `"$2"`, `"$9"`, `"$#"`, `"$?"`, `"$0"`, `"$$"`, `"$!"`, `"$-"`, `"$LINENO"`,
		`"$@"`, `"$*"`, `"${v:-d}"`, `"${#v}"`, `"${v#a}"`, `"$(echo hi)"`, `"\$v"`, `"a\"b"`, `$'x'`, `"$arr"`,
		`"${arr[1]}"`, `"$ref"`, "$v", "${v}", "$e", "$unset",
		// patterns
		"/d/*", "/d/*.sh", "/d/.*", "/d/?hidden", "/d/.?", "/d/[.]*", "/d/[ab]*", "/d/?", "/d/x?", "/d/*.none", "*", "*.sh", ".*", "s*/x", "/d/*/x",
		"/nodir/*", "/d/f.sh/*", "[", "/d/[", "/d/[!a]*", "/d/[a-", "/d//*", "/d/./*", "/d/../d/*", "./*", "../*",
		`"/d/"*`, `/d/"*"`, `"$v"*`, "/d/\\*", "/d/*\\", "/d/a*b*", "/e/*",
	}
	fs := newTestFS(t)
	for _, f := range []string{"/d/a.sh", "/d/b.sh", "/d/.hidden", "/d/c.txt", "/d/x1", "/d/s/x", "/d/f.sh"} {
		if err := fs.MkdirAll(path.Dir(f), 0o755, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := fs.WriteFile(f, nil, 0o644, false, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.MkdirAll("/e", 0o755, 0, 0); err != nil {
		t.Fatal(err)
	}
	run := func(script string, mvdanOnly bool) string {
		mvdanFieldsOnly = mvdanOnly
		defer func() { mvdanFieldsOnly = false }()
		r := start(t, fs, "sh", "-c", script, "name", "one", "two words")
		r.until(time.Hour)
		return fmt.Sprintf("stdout %q stderr %q status %d", r.out.buf.String(), r.err.buf.String(), r.status)
	}
	ash := map[string]string{
		"/d/.*":      "</d/.>\n</d/..>\n</d/.hidden>\n", // . and .., which readdir lists
		".*":         "<.>\n<..>\n<.hidden>\n",
		"/d/?hidden": "</d/?hidden>\n", // ? does not match a leading dot
		"/d/.?":      "</d/..>\n",
		"/d/[.]*":    "</d/[.]*>\n",
		"/d/[!a]*":   "</d/b.sh>\n</d/c.txt>\n</d/f.sh>\n</d/s>\n</d/x1>\n",
		"/d//*":      "</d//a.sh>\n</d//b.sh>\n</d//c.txt>\n</d//f.sh>\n</d//s>\n</d//x1>\n", // as written
	}
	for _, opts := range []string{"", "set -u;", "set -f;"} {
		for _, w := range words {
			if want, ok := ash[w]; ok && opts != "set -f;" {
				if got := run(opts+` cd /d; for f in `+w+`; do echo "<$f>"; done`, false); got != fmt.Sprintf("stdout %q stderr \"\" status 0", want) {
					t.Errorf("%s for f in %s: simpleFields %s, ash prints %q", opts, w, got, want)
				}
				continue
			}
			script := opts + ` cd /d; v="a b"; e=; false; for f in ` + w + `; do echo "<$f>"; done`
			want, got := run(script, true), run(script, false)
			if testing.Verbose() {
				t.Logf("%s %s: %s", opts, w, got)
			}
			if got != want {
				t.Errorf("%s for f in %s:\n simpleFields %s\n mvdan        %s", opts, w, got, want)
			}
		}
	}
}

// The pattern caches stay bounded whatever patterns a script makes, and still answer.
func TestPatternCacheIsBounded(t *testing.T) {
	for i := range 3 * patternCacheSize {
		if !matchPattern(fmt.Sprintf("x%d*", i), fmt.Sprintf("x%dy", i)) {
			t.Fatalf("pattern %d did not match", i)
		}
	}
	n := 0
	caseCache.m.Range(func(any, any) bool { n++; return true })
	if n > patternCacheSize {
		t.Errorf("the case pattern cache holds %d patterns, bound %d", n, patternCacheSize)
	}
}
