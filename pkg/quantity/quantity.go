package quantity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxExponentDigits is the most digits (after leading zeros) the decimal exponent of a
// quantity may have: |exponent| < 1000. resource.ParseQuantity takes time linear in a
// negative exponent (1e-666600 takes 26 ms, 1e-666666000 hours) and comparing a quantity
// with a huge positive one builds the power of ten, so a 13-byte value could stall the
// simulator. Exponents that big mean nothing for a resource amount.
const MaxExponentDigits = 3

// CheckExponent returns an error when s has the form of a number with a decimal exponent
// of more than MaxExponentDigits digits (1e-666666000, "5E+0001000"); any other text is
// left to the parser. Safe for concurrent use.
func CheckExponent(s string) error {
	s = strings.TrimSpace(s)
	i := strings.LastIndexAny(s, "eE")
	if i < 0 || i == len(s)-1 {
		return nil // no exponent; a trailing E is the exa suffix
	}
	// ParseQuantity reads "e5" with no digits before it too (found by FuzzBehavior).
	mantissa, exp := strings.TrimLeft(s[:i], "+-"), strings.TrimLeft(s[i+1:], "+-")
	if mantissa != "" && !isNumber(mantissa) || !isDigits(exp) {
		return nil
	}
	if digits := strings.TrimLeft(exp, "0"); len(digits) > MaxExponentDigits {
		return fmt.Errorf("quantity %q: exponent has more than %d digits", s, MaxExponentDigits)
	}
	return nil
}

// Parse is resource.ParseQuantity after CheckExponent.
func Parse(s string) (resource.Quantity, error) {
	if err := CheckExponent(s); err != nil {
		return resource.Quantity{}, err
	}
	return resource.ParseQuantity(s)
}

// CheckJSON runs CheckExponent on every string and number of a JSON document, so that a
// document is refused before its quantity fields are decoded (resource.Quantity's
// UnmarshalJSON calls ParseQuantity). The error names the JSON path of the value. A
// document that is not valid JSON gives no error here: decoding it reports that.
func CheckJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	return walk(v, "")
}

func walk(v any, path string) error {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the first bad value in a stable order
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if err := walk(x[k], p); err != nil {
				return err
			}
		}
	case []any:
		for i, el := range x {
			if err := walk(el, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case string:
		if err := CheckExponent(x); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case json.Number:
		if err := CheckExponent(string(x)); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isNumber reports whether s is digits with at most one decimal point.
func isNumber(s string) bool {
	int, frac, _ := strings.Cut(s, ".")
	return (int != "" || frac != "") && (int == "" || isDigits(int)) && (frac == "" || isDigits(frac))
}
