package programs

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
)

// compileRegex compiles a POSIX regular expression, basic (grep, sed) or extended (-E),
// into Go's syntax with POSIX's leftmost-longest matching. RE2 has no backreferences, so
// a pattern with \1 fails. The error words the problem as glibc's regerror does.
func compileRegex(pat string, extended, icase bool) (*regexp.Regexp, error) {
	goPat, err := translateRegex(pat, extended)
	if err != nil {
		return nil, err
	}
	if icase {
		goPat = "(?i)" + goPat
	}
	re, err := regexp.Compile(goPat)
	if err != nil {
		return nil, regexError(err)
	}
	re.Longest()
	return re, nil
}

// regexError words a Go regexp error as glibc's regerror.
func regexError(err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		switch se.Code {
		case syntax.ErrMissingBracket:
			return errors.New("Unmatched [, [^, [:, [., or [=")
		case syntax.ErrMissingParen:
			return errors.New("Unmatched ( or \\(")
		case syntax.ErrUnexpectedParen:
			return errors.New("Unmatched ) or \\)")
		case syntax.ErrMissingRepeatArgument, syntax.ErrInvalidRepeatOp:
			return errors.New("Invalid preceding regular expression")
		case syntax.ErrInvalidRepeatSize:
			return errors.New("Invalid content of \\{\\}")
		case syntax.ErrTrailingBackslash:
			return errors.New("Trailing backslash")
		case syntax.ErrInvalidCharRange:
			return errors.New("Invalid range end")
		case syntax.ErrInvalidCharClass:
			return errors.New("Invalid character class name")
		}
	}
	return errors.New("Invalid regular expression")
}

var errBackref = errors.New("Invalid back reference")

// translateRegex rewrites a POSIX BRE or ERE in Go's syntax.
func translateRegex(p string, extended bool) (string, error) {
	var b strings.Builder
	// atStart: a '*' here is literal (BRE), as at the start or after \( or \|.
	atStart := true
	for i := 0; i < len(p); i++ {
		ch := p[i]
		switch {
		case ch == '[':
			end, cls, err := translateBracket(p, i)
			if err != nil {
				return "", err
			}
			b.WriteString(cls)
			i = end
			atStart = false
			continue
		case ch == '\\':
			if i+1 >= len(p) {
				return "", errors.New("Trailing backslash")
			}
			i++
			n := p[i]
			switch {
			case !extended && strings.IndexByte("(){}|+?", n) >= 0:
				b.WriteByte(n)
				atStart = n == '(' || n == '|'
				continue
			case n >= '1' && n <= '9':
				return "", errBackref
			case n == '<' || n == '>':
				b.WriteString(`\b`)
			case strings.IndexByte("wWsSbB", n) >= 0:
				b.WriteByte('\\')
				b.WriteByte(n)
			case n == 'n':
				b.WriteString(`\n`)
			case n == 't':
				b.WriteString(`\t`)
			default:
				b.WriteString(regexp.QuoteMeta(string(n)))
			}
			atStart = false
			continue
		case ch == '*' && atStart:
			b.WriteString(`\*`)
			atStart = false
			continue
		case ch == '^':
			if extended || atStart {
				b.WriteByte('^')
			} else {
				b.WriteString(`\^`)
			}
			continue // a '*' after a leading ^ is still literal
		case ch == '$':
			rest := p[i+1:]
			if extended || rest == "" || strings.HasPrefix(rest, `\)`) || strings.HasPrefix(rest, `\|`) {
				b.WriteByte('$')
			} else {
				b.WriteString(`\$`)
			}
		case !extended && strings.IndexByte("(){}|+?", ch) >= 0:
			b.WriteByte('\\')
			b.WriteByte(ch)
		case extended && ch == '{':
			// A brace that opens no repetition is literal.
			if i+1 < len(p) && p[i+1] >= '0' && p[i+1] <= '9' {
				b.WriteByte('{')
			} else {
				b.WriteString(`\{`)
			}
		case extended && (ch == '(' || ch == '|'):
			b.WriteByte(ch)
			atStart = true
			continue
		case extended && atStart && (ch == '+' || ch == '?'):
			b.WriteByte('\\')
			b.WriteByte(ch)
		default:
			b.WriteByte(ch)
		}
		atStart = false
	}
	return b.String(), nil
}

// translateBracket rewrites the bracket expression at p[i] ('['): backslashes are
// literal in POSIX, ']' first is literal. It returns the index of the closing ']'.
func translateBracket(p string, i int) (int, string, error) {
	var b strings.Builder
	b.WriteByte('[')
	j := i + 1
	if j < len(p) && p[j] == '^' {
		b.WriteByte('^')
		j++
	}
	if j < len(p) && p[j] == ']' {
		b.WriteString(`\]`)
		j++
	}
	for ; j < len(p); j++ {
		switch ch := p[j]; {
		case ch == ']':
			b.WriteByte(']')
			return j, b.String(), nil
		case ch == '[' && j+1 < len(p) && (p[j+1] == ':' || p[j+1] == '=' || p[j+1] == '.'):
			kind := p[j+1]
			end := strings.Index(p[j+2:], string(kind)+"]")
			if end < 0 {
				return 0, "", errors.New("Unmatched [, [^, [:, [., or [=")
			}
			inner := p[j+2 : j+2+end]
			if kind == ':' {
				b.WriteString("[:" + inner + ":]")
			} else {
				b.WriteString(regexp.QuoteMeta(inner))
			}
			j += 2 + end + 1
		case ch == '\\' || ch == '[':
			b.WriteByte('\\')
			b.WriteByte(ch)
		default:
			b.WriteByte(ch)
		}
	}
	return 0, "", errors.New("Unmatched [, [^, [:, [., or [=")
}
