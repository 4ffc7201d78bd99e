package release

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in      string
		kubelet string // KubeletVersion of the result, or "" for an error
		errHas  string
	}{
		{in: "1.34", kubelet: "v1.34.4"},
		{in: "v1.35", kubelet: "v1.35.4"},
		{in: " 1.36 ", kubelet: "v1.36.3"},
		{in: "1.37", kubelet: "v1.37.2"},
		{in: "1.33", errHas: "emulates the kubelet releases 1.34, 1.35, 1.36 and 1.37"},
		{in: "1.38", errHas: "emulates the kubelet releases"},
		{in: "1.35.2", errHas: "give the minor release only (1.35), not a patch"},
		{in: "2.35", errHas: "want a kubelet release as 1.MINOR"},
		{in: "1.+35", errHas: "want a kubelet release as 1.MINOR"},
		{in: "135", errHas: "want a kubelet release as 1.MINOR"},
		{in: "", errHas: "want a kubelet release as 1.MINOR"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			r, err := Parse(tt.in)
			if tt.kubelet == "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) || !strings.Contains(err.Error(), `"`+tt.in+`"`) {
					t.Fatalf("Parse(%q) = %v, %v; want an error naming the value and containing %q", tt.in, r, err, tt.errHas)
				}
				return
			}
			if err != nil || r.KubeletVersion() != tt.kubelet {
				t.Fatalf("Parse(%q) = %v (%s), %v; want %s", tt.in, r, r.KubeletVersion(), err, tt.kubelet)
			}
		})
	}
}

func TestReleases(t *testing.T) {
	all := All()
	if len(all) != 4 || all[0] != Oldest() || all[3] != Newest() {
		t.Fatalf("All() = %v, Oldest %v, Newest %v", all, Oldest(), Newest())
	}
	for i, r := range all {
		if got := r.Version().String(); got != r.String()+".0" && got != r.String() {
			t.Errorf("%v: Version() = %s", r, got)
		}
		if i > 0 && !all[i-1].Before(r.Minor()) {
			t.Errorf("%v is not before %v", all[i-1], r)
		}
		if r.Before(r.Minor()) || r.IsZero() {
			t.Errorf("%v: Before(own minor) or IsZero", r)
		}
	}
	if !(Release{}).IsZero() {
		t.Error("the zero Release is not IsZero")
	}
	all[0] = Newest() // All returns a copy
	if Oldest().Minor() != 34 {
		t.Error("All() shares the table")
	}
}
