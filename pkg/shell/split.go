package shell

import (
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Field splitting with a non-whitespace IFS. mvdan's expand splits the value of an
// unquoted expansion at every IFS character and drops the empty fields between them
// ("a,b,,d" with IFS=, gives three fields), which is right for the whitespace of the
// default IFS only: POSIX, and busybox's ash, make each non-whitespace IFS character end
// a field, empty or not (four fields). When IFS holds such a character, the shell expands
// a word's unquoted parameter, command and arithmetic expansions itself, splits their
// values as POSIX says, and hands expand one word per field: the split text as literal
// parts (still globbed, as an unquoted expansion's value is), the rest of the word's
// parts as they were. read splits its line the same way (readFields).

// ifsWhite reports whether r is IFS whitespace: space, tab or newline.
func ifsWhite(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }

// nonWhiteIFS reports whether ifs has a character other than space, tab and newline.
func nonWhiteIFS(ifs string) bool {
	return strings.ContainsFunc(ifs, func(r rune) bool { return !ifsWhite(r) })
}

// splittable reports whether w has an unquoted expansion whose value is split.
func splittable(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp:
			return true
		}
	}
	return false
}

// allParams reports whether pe is a plain $@ or $*: unquoted, every positional parameter
// is split on its own.
func allParams(pe *syntax.ParamExp) bool {
	return pe.Param != nil && (pe.Param.Value == "@" || pe.Param.Value == "*") && pe.Index == nil &&
		pe.Exp == nil && pe.Repl == nil && pe.Slice == nil && !pe.Length && !pe.Width && !pe.Excl && pe.Names == 0
}

// splitWord expands w's unquoted expansions with cfg and returns the words of its fields,
// for expand.Fields; ifs has a non-whitespace character.
func (s *shell) splitWord(cfg *expand.Config, ifs string, w *syntax.Word) ([]*syntax.Word, error) {
	sp := splitter{ifs: ifs}
	for i, part := range w.Parts {
		switch part := part.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp:
			if pe, ok := part.(*syntax.ParamExp); ok && allParams(pe) {
				for j, v := range s.params {
					if j > 0 {
						sp.end()
					}
					sp.split(v)
				}
				continue
			}
			v, err := expand.Literal(cfg, &syntax.Word{Parts: []syntax.WordPart{part}})
			if err != nil {
				return nil, err
			}
			sp.split(v)
		case *syntax.Lit:
			sp.lit(part, i == 0)
		default:
			sp.quoted(part)
		}
	}
	sp.end()
	return sp.out, nil
}

// splitter builds the words of one word's fields.
type splitter struct {
	ifs string
	cur []syntax.WordPart
	// has: the current field has begun (text, a quoted part, or a delimiter that ended the
	// one before it).
	has bool
	out []*syntax.Word
}

func (sp *splitter) isIFS(r rune) bool   { return strings.ContainsRune(sp.ifs, r) }
func (sp *splitter) isWhite(r rune) bool { return ifsWhite(r) && sp.isIFS(r) }

// emit ends the current field, empty or not.
func (sp *splitter) emit() {
	parts := sp.cur
	if len(parts) == 0 {
		parts = []syntax.WordPart{&syntax.SglQuoted{}} // an empty field
	}
	sp.out = append(sp.out, &syntax.Word{Parts: parts})
	sp.cur, sp.has = nil, false
}

// end ends the current field if it has begun: the end of the word, or of one positional
// parameter of an unquoted $@.
func (sp *splitter) end() {
	if sp.has {
		sp.emit()
	}
}

// lit adds one of the word's own literal parts. A literal that did not start the word
// keeps its leading tilde when it starts a field.
func (sp *splitter) lit(l *syntax.Lit, first bool) {
	sp.has = true
	if !first && len(sp.cur) == 0 && strings.HasPrefix(l.Value, "~") {
		sp.cur = append(sp.cur, &syntax.SglQuoted{Value: "~"}, &syntax.Lit{Value: l.Value[1:]})
		return
	}
	sp.cur = append(sp.cur, l)
}

// quoted adds a quoted part of the word, which is never split.
func (sp *splitter) quoted(p syntax.WordPart) {
	sp.has = true
	sp.cur = append(sp.cur, p)
}

// text adds text of an expansion's value to the current field: literal, so that expand
// still globs it, with what expand would otherwise change in a literal (a backslash, a
// brace, a leading tilde) quoted.
func (sp *splitter) text(t string) {
	if t == "" {
		return
	}
	sp.has = true
	if len(sp.cur) == 0 && t[0] == '~' {
		sp.cur = append(sp.cur, &syntax.SglQuoted{Value: "~"})
		t = t[1:]
	}
	for t != "" {
		i := strings.IndexAny(t, `\{}`)
		if i < 0 {
			sp.cur = append(sp.cur, &syntax.Lit{Value: t})
			return
		}
		if i > 0 {
			sp.cur = append(sp.cur, &syntax.Lit{Value: t[:i]})
		}
		sp.cur = append(sp.cur, &syntax.SglQuoted{Value: t[i : i+1]})
		t = t[i+1:]
	}
}

// skipWhite returns the index of the first character of v from i that is not IFS
// whitespace.
func (sp *splitter) skipWhite(v string, i int) int {
	for i < len(v) {
		r, size := utf8.DecodeRuneInString(v[i:])
		if !sp.isWhite(r) {
			break
		}
		i += size
	}
	return i
}

// split adds an unquoted expansion's value v: IFS whitespace at the start of a field is
// skipped, and a delimiter (a run of IFS whitespace, a non-whitespace IFS character, or
// both: one non-whitespace character with the whitespace around it) ends the field, even
// an empty one. A field the value leaves open goes on with the rest of the word.
func (sp *splitter) split(v string) {
	start := 0 // of the text not added yet
	for i := 0; i < len(v); {
		r, size := utf8.DecodeRuneInString(v[i:])
		if !sp.isIFS(r) {
			i += size
			continue
		}
		sp.text(v[start:i])
		white := sp.isWhite(r)
		i += size
		if white && !sp.has {
			start = i
			continue
		}
		sp.emit()
		i = sp.skipWhite(v, i)
		if white && i < len(v) {
			if r, size := utf8.DecodeRuneInString(v[i:]); sp.isIFS(r) && !sp.isWhite(r) {
				i = sp.skipWhite(v, i+size)
			}
		}
		start = i
	}
	sp.text(v[start:])
}

// readFields splits a line for read into n fields (n >= 1) as busybox's read does: the
// first n-1 as field splitting would, the last taking the rest of the line less its
// trailing IFS whitespace and a final non-whitespace delimiter; without raw, a backslash
// makes the next character plain (never a delimiter) and is dropped. With names false
// (read with no NAME, into REPLY) the line is not split or trimmed.
func readFields(ifs, line string, n int, raw, names bool) []string {
	type char struct {
		r   rune
		esc bool // escaped by a backslash: never IFS
	}
	chars := make([]char, 0, len(line))
	esc := false
	for _, r := range line {
		if !raw && !esc && r == '\\' {
			esc = true
			continue
		}
		chars = append(chars, char{r, esc})
		esc = false
	}
	text := func(cs []char) string {
		var b strings.Builder
		for _, c := range cs {
			b.WriteRune(c.r)
		}
		return b.String()
	}
	if !names {
		return []string{text(chars)}
	}
	isIFS := func(c char) bool { return !c.esc && strings.ContainsRune(ifs, c.r) }
	isWhite := func(c char) bool { return isIFS(c) && ifsWhite(c.r) }
	var fields []string
	var cur []char
	// startword is busybox's: 1 at the start of a field, 2 after a whitespace delimiter
	// (which may absorb one non-whitespace delimiter after it), 0 inside a field.
	startword := 1
	for _, c := range chars {
		if startword > 0 && isIFS(c) {
			if isWhite(c) {
				continue
			}
			startword--
			if startword == 1 {
				continue
			}
		}
		startword = 0
		if len(fields) < n-1 && isIFS(c) {
			fields = append(fields, text(cur))
			cur = nil
			startword = 1
			if isWhite(c) {
				startword = 2
			}
			continue
		}
		cur = append(cur, c)
	}
	// The last field: less its trailing IFS whitespace, and then one non-whitespace
	// delimiter with the whitespace before it, unless another delimiter comes before that.
	trim := func() {
		for len(cur) > 0 && isWhite(cur[len(cur)-1]) {
			cur = cur[:len(cur)-1]
		}
	}
	trim()
	if k := len(cur) - 1; k >= 0 && isIFS(cur[k]) && !isWhite(cur[k]) {
		j := k - 1
		for j >= 0 && isWhite(cur[j]) {
			j--
		}
		if j < 0 || !isIFS(cur[j]) {
			cur = cur[:k]
			trim()
		}
	}
	fields = append(fields, text(cur))
	for len(fields) < n {
		fields = append(fields, "")
	}
	return fields
}
