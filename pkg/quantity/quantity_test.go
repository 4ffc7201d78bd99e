package quantity

import (
	"strings"
	"testing"
)

func TestCheckExponent(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" means accepted
	}{
		{"1e-666666000", `quantity "1e-666666000": exponent has more than 3 digits`},
		{"1e666666000", "more than 3 digits"},
		{"-2.5E+0001000", "more than 3 digits"},
		{" 1e1000 ", "more than 3 digits"},
		{"e222222222222222226", "more than 3 digits"},
		{"-E5000", "more than 3 digits"},
		{"1e999", ""},
		{"1e-0000000009", ""}, // the value of the exponent counts, not its leading zeros
		{"1E", ""},            // exa
		{"500m", ""},
		{"64Mi", ""},
		{"sha256:0e12345678", ""}, // not a number
		{"nginx:1e10000", ""},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			err := CheckExponent(tt.in)
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckExponent(%q) = %v, want %q", tt.in, err, tt.want)
			}
		})
	}
}

// TestParseHugeExponent: the value that stalled resource.ParseQuantity for hours is
// refused before it is parsed (a regression hangs until go test's timeout).
func TestParseHugeExponent(t *testing.T) {
	if _, err := Parse("1e-666666000"); err == nil {
		t.Fatal("Parse accepted 1e-666666000")
	}
	if q, err := Parse("250m"); err != nil || q.MilliValue() != 250 {
		t.Errorf("Parse(250m) = %v, %v", q.String(), err)
	}
}

func TestCheckJSON(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{"spec":{"containers":[{"resources":{"limits":{"cpu":"1e-666666000"}}}]}}`, `spec.containers[0].resources.limits.cpu: quantity "1e-666666000"`},
		{`{"a":[1, 2e-100000]}`, `a[1]: quantity "2e-100000"`},
		{`{"image":"x:1e10000","cpu":"1e3"}`, ""},
		{`not json`, ""},
	}
	for _, tt := range tests {
		err := CheckJSON([]byte(tt.in))
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckJSON(%s) = %v, want %q", tt.in, err, tt.want)
		}
	}
}
