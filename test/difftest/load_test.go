package difftest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The corpus reader: a comment before the first script, each script's text to the next
// header with its newlines, names prefixed by their archive's; the known list: names and
// reasons, comments and blank lines skipped.
func TestLoadCorpusAndKnown(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.txtar", "comment\n-- one --\necho 1\n\n-- two --\ncat <<EOF\n-- not a header\nEOF\n")
	write("a.txtar", "-- x --\ntrue")
	write("known.txt", "# comment\n\nb/one   why it differs\n")
	got := loadCorpus(t, dir)
	want := []script{{name: "a/x", body: "true"}, {name: "b/one", body: "echo 1\n\n"}, {name: "b/two", body: "cat <<EOF\n-- not a header\nEOF\n"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(script{})); diff != "" {
		t.Errorf("corpus (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"b/one": "why it differs"}, loadKnown(t, filepath.Join(dir, "known.txt"))); diff != "" {
		t.Errorf("known (-want +got):\n%s", diff)
	}
}
