package release

import (
	"os"
	"path/filepath"
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

// TestPinsMatchReleases: the version each release reports is the one its control plane,
// suite and kubelet table are built from (tools/*/go.mod for the newest, tools/*/v1.3x.mod
// for the others) and the one the Makefile's KUBE_PATCHES names, so a new patch moves
// them all.
func TestPinsMatchReleases(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var patches []string
	for _, line := range strings.Split(string(makefile), "\n") {
		if rest, ok := strings.CutPrefix(line, "KUBE_PATCHES :="); ok {
			patches = strings.Fields(strings.ReplaceAll(rest, "$(K8S_VERSION)", Newest().KubeletVersion()))
		}
	}
	if len(patches) != len(All()) {
		t.Fatalf("the Makefile's KUBE_PATCHES %v, want one a release of %v", patches, All())
	}
	for i, r := range All() {
		if patches[i] != r.KubeletVersion() {
			t.Errorf("KUBE_PATCHES names %s, release %s reports %s", patches[i], r, r.KubeletVersion())
		}
		file := "v" + r.String() + ".mod"
		if r == Newest() {
			file = "go.mod"
		}
		for _, tool := range []string{"controlplane", "conformance", "kubeletref"} {
			path := filepath.Join("..", "..", "tools", tool, file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := "k8s.io/kubernetes " + r.KubeletVersion() + "\n"; !strings.Contains(string(data), want) {
				t.Errorf("%s does not require %q", path, strings.TrimSpace(want))
			}
		}
	}
}
