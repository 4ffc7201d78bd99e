package shell

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"
)

// simpleWord appends to out the fields of a word of the kinds most commands of real
// scripts have, expanded without mvdan's expander: literals, single-quoted text,
// double-quoted text with plain $name or ${name} parameters, and a literal with a pattern
// in its last path element (/dir/*.sh). It gives what expand.Fields gives for them (and
// ash's globbing where the two differ), and ok false for any other word (unquoted
// parameters, which split; command substitutions; escapes; braces; operators), which
// fields hands to mvdan. Entrypoints run tens of such commands in every container:
// mvdan's expander, which allocates for every word and compiles a regular expression for
// every glob, was a third of what a node of 10,000 nginx pods spent starting them.
func (s *shell) simpleWord(w *syntax.Word, out []string) ([]string, bool) {
	if value, ok := literalWord(w); ok {
		if strings.ContainsAny(value, "{}~\\$'\"`") {
			return out, false
		}
		// As mvdan decides: a "[" without its "]" is no pattern ("[ -f x ]").
		if !pattern.HasMeta(value, 0) {
			return append(out, value), true
		}
		matches, ok := s.globLiteral(value)
		if !ok {
			return out, false
		}
		return append(out, matches...), true
	}
	// Quoted parts (a word with any of them is one field) and literals without pattern
	// characters, which would need escaping next to quoted text.
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "{}~\\$'\"`*?[") {
				return out, false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return out, false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return out, false
			}
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					if strings.ContainsAny(q.Value, "\\$`") {
						return out, false
					}
					b.WriteString(q.Value)
				case *syntax.ParamExp:
					v, ok := s.simpleParam(q)
					if !ok {
						return out, false
					}
					b.WriteString(v)
				default:
					return out, false
				}
			}
		default:
			return out, false
		}
	}
	return append(out, b.String()), true
}

// mvdanFieldsOnly turns simpleWord off, for the test that compares the two.
var mvdanFieldsOnly bool

// literalWord is w's text when it is literals only (the parser splits "d/[.]*" in two).
func literalWord(w *syntax.Word) (string, bool) {
	if len(w.Parts) == 1 {
		lit, ok := w.Parts[0].(*syntax.Lit)
		if !ok {
			return "", false
		}
		return lit.Value, true
	}
	var b strings.Builder
	for _, part := range w.Parts {
		lit, ok := part.(*syntax.Lit)
		if !ok {
			return "", false
		}
		b.WriteString(lit.Value)
	}
	return b.String(), true
}

// simpleParam is the value of $name or ${name}, a variable or a positional or special
// parameter other than $@ and $* (which make fields of their own), when it expands as a
// plain string: ok false for anything else, and for an unset one under set -u (mvdan
// reports it).
func (s *shell) simpleParam(pe *syntax.ParamExp) (string, bool) {
	// The syntax package's own test for $name and ${name} (ParamExp.simple) is unexported.
	if pe.Param == nil || pe.Flags != nil || pe.Excl || pe.Length || pe.Width || pe.IsSet ||
		pe.Split != syntax.OptUnset || pe.GlobSubst != syntax.OptUnset || pe.RcExpand != syntax.OptUnset ||
		pe.NestedParam != nil || pe.Index != nil || len(pe.Modifiers) > 0 || pe.Slice != nil ||
		pe.Repl != nil || pe.Names != 0 || pe.Exp != nil {
		return "", false
	}
	name := pe.Param.Value
	if name == "@" || name == "*" || name == "LINENO" {
		return "", false
	}
	v := (*environ)(s).Get(name)
	if !v.IsSet() {
		if s.nounset {
			return "", false
		}
		return "", true
	}
	if v.Kind != expand.String {
		return "", false
	}
	return v.Str, true
}

// globLiteral expands a literal word with pattern characters in its last path element
// only, as mvdan's globbing does (sorted matches, the word itself when none or when the
// pattern is not one); ok false for what it leaves to mvdan: patterns in a directory
// element, "." or ".." or empty elements, a directory that cannot be read.
func (s *shell) globLiteral(word string) ([]string, bool) {
	if s.noglob {
		return []string{word}, true
	}
	// The directory part stays as written ("d//*" gives "d//a", as in ash; mvdan's would
	// give "d/a"). A ".." is left to mvdan: after a symbolic link it is not lexical.
	dir, pat := path.Split(word)
	if pat == "" || strings.ContainsAny(dir, "*?[") {
		return nil, false
	}
	for _, el := range strings.Split(dir, "/") {
		if el == ".." {
			return nil, false
		}
	}
	match, valid := globMatcher(pat)
	if !valid {
		return []string{word}, true // not a pattern (a lone "["): the word as it is
	}
	list := dir
	if list == "" {
		list = "."
	}
	entries, err := s.p.FS().ReadDir(s.p.Abs(list))
	if err != nil {
		return nil, false
	}
	// As ash's expmeta: a name that starts with a dot, "." and ".." among them (readdir lists
	// them), only for a pattern that starts with one (mvdan's matcher lets ? match a
	// leading dot, and lists neither . nor ..).
	var out []string
	dots := pat[0] == '.'
	if dots {
		for _, name := range []string{".", ".."} {
			if match(name) {
				out = append(out, dir+name)
			}
		}
	}
	for _, e := range entries {
		if name := e.Name(); (dots || name[0] != '.') && match(name) {
			out = append(out, dir+name)
		}
	}
	if len(out) == 0 {
		return []string{word}, true
	}
	slices.Sort(out)
	return out, true
}

// globMatcher is the matcher of a file name pattern as mvdan's globbing makes it (no
// dotglob, nocaseglob or extglob), valid false when pat is not a pattern. Compiled
// patterns are kept: scripts glob the same few again and again.
func globMatcher(pat string) (match func(string) bool, valid bool) {
	re := globCache.compiled(pat, pattern.Filenames|pattern.EntireString|pattern.NoGlobStar)
	if re == nil {
		return nil, false
	}
	return re.MatchString, true
}

// patternCache keeps compiled patterns, at most patternCacheSize: a script that makes
// patterns without end (case "$x" in $y) must not grow the daemon; past the bound the
// cache starts again. Machines of every node share it.
type patternCache struct {
	m sync.Map // pattern -> *regexp.Regexp, nil when not a valid pattern
	n atomic.Int64
}

const patternCacheSize = 4096

func (c *patternCache) get(pat string) (*regexp.Regexp, bool) {
	v, ok := c.m.Load(pat)
	if !ok {
		return nil, false
	}
	return v.(*regexp.Regexp), true
}

// compiled is pat compiled as a regular expression in mode, nil when it is not a valid
// pattern, from the cache when it is there (a cache is used with one mode).
func (c *patternCache) compiled(pat string, mode pattern.Mode) *regexp.Regexp {
	if re, ok := c.get(pat); ok {
		return re
	}
	expr, err := pattern.Regexp(pat, mode)
	var re *regexp.Regexp
	if err == nil {
		re, _ = regexp.Compile(expr) // nil when it does not compile either
	}
	c.put(pat, re)
	return re
}

func (c *patternCache) put(pat string, re *regexp.Regexp) {
	if c.n.Add(1) > patternCacheSize {
		c.m.Clear()
		c.n.Store(1)
	}
	c.m.Store(pat, re)
}

var globCache, caseCache patternCache
