package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestClassify(t *testing.T) {
	f, err := os.Open("testdata/junit_01.xml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, took, err := parseJUnit(f)
	if err != nil {
		t.Fatal(err)
	}
	if took != 125500*time.Millisecond {
		t.Errorf("took %v, want 2m5.5s", took)
	}
	skips := mustRules(t, `- spec: 'over websockets'
  reason: the test process dials the pod IP
`)
	reasons := mustRules(t, `- failure: 'to be in "Succeeded or Failed"'
  reason: the container never exits
- spec: 'shared volumes'
  failure: 'never matches this'
  reason: a rule whose failure pattern does not match does not apply
`)
	rep := classify(cases, regexp.MustCompile(`\[NodeConformance\]|EmptyDir`), regexp.MustCompile(`\[Serial\]`), skips, reasons)
	rep.took = took
	want := []row{
		{"[sig-node] Containers should use the image defaults if command and args are blank [NodeConformance] [Conformance]", fail, "the container never exits"},
		{"[sig-node] Pods should get a host IP [NodeConformance] [Conformance]", pass, ""},
		{"[sig-node] Pods should support remote command execution over websockets [NodeConformance] [Conformance]", skipped, "the test process dials the pod IP"},
		{"[sig-node] Sysctls [LinuxOnly] [NodeConformance] should support sysctls [Environment:NotInUserNS]", skipped, "Only supported for node OS distro [gci ubuntu] (not debian)"},
		{"[sig-storage] EmptyDir volumes pod should support shared volumes between containers [Conformance]", fail, "failed: [FAILED] unexpected output | not the file"},
	}
	if diff := cmp.Diff(want, rep.rows, cmp.AllowUnexported(row{})); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if got, want := rep.headline(), "**1 of 5** `[NodeConformance]` specs"; !strings.HasPrefix(got, want) {
		t.Errorf("headline %q, want it to start %q", got, want)
	}
	md := rep.markdown("Measured here.")
	for _, s := range []string{
		"Measured here.\n\n1 of 5 pass, 2 fail, 2 skipped; the suite ran 2m6s.",
		"| 1 | the container never exits |",
		`| 5 | [sig-storage] EmptyDir volumes pod should support shared volumes between containers [Conformance] | fail | failed: [FAILED] unexpected output \| not the file |`,
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
}

func mustRules(t *testing.T, src string) []rule {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := readRules(path)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func TestReadRulesRejects(t *testing.T) {
	for name, src := range map[string]string{
		"no reason":     "- spec: x\n",
		"no pattern":    "- reason: why\n",
		"bad pattern":   "- spec: '('\n  reason: why\n",
		"unknown field": "- spec: x\n  reason: why\n  because: y\n",
		"not a list":    "spec: x\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rules.yaml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := readRules(path); err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("readRules(%q) = %v, want an error naming the file", src, err)
			}
		})
	}
}

func TestReplaceSection(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.md")
	if err := os.WriteFile(doc, []byte("# T\n<!-- s -->\nold\n<!-- /s -->\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceSection(doc, "s", "new\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(doc)
	if want := "# T\n<!-- s -->\nnew\n<!-- /s -->\nafter\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := replaceSection(doc, "missing", "x"); err == nil {
		t.Error("a file without the markers: want an error")
	}
	fresh := filepath.Join(dir, "fresh.md")
	if err := replaceSection(fresh, "s", "x\n"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(fresh); string(got) != "<!-- s -->\nx\n<!-- /s -->\n" {
		t.Errorf("fresh file %q", got)
	}
}
