package kubelet

import (
	testingclock "k8s.io/utils/clock/testing"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// The architecture doc's loop table lists every entry of Loops(), in table order, with
// every optional loop present (the evented PLEG's gate on, cluster mode).
func TestArchitectureDocListsTheLoopTable(t *testing.T) {
	raw, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "## The loop table")
	if start < 0 {
		t.Fatal("docs/architecture.md has no \"## The loop table\" section")
	}
	section := doc[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}

	dir := t.TempDir()
	cfg, gate := loadConfig(t, dir, "--feature-gates=EventedPLEG=true")
	k, err := New(Config{Config: cfg, Gate: gate, Clock: testingclock.NewFakeClock(epoch), KubeClient: fake.NewSimpleClientset(), InlineAPICalls: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	var table []string
	for _, l := range k.Loops() {
		table = append(table, l.Name)
	}
	if !slices.Equal(documented, table) {
		t.Fatalf("docs/architecture.md lists the loops\n  %v\nLoops() is\n  %v", documented, table)
	}
}
