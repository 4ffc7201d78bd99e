package layers

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/minikubelet/minikubelet/"

// TestLayers reads the layer table of docs/architecture.md (a row a layer, bottom up, the
// packages in backquotes) and checks it against the code: every package under pkg/ and
// cmd/ is in exactly one row, every row names packages that exist, and a package imports
// only from its own row or those above it. A new package, or an import that goes up,
// fails here until the table says where it lives.
func TestLayers(t *testing.T) {
	root := filepath.Join("..", "..")
	layerOf, names := readTable(t, filepath.Join(root, "docs", "architecture.md"))
	pkgs := map[string][]string{} // package (as the table names it) -> its module imports
	for _, top := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			p, err := build.Default.ImportDir(path, 0)
			if _, none := err.(*build.NoGoError); none {
				return nil
			}
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			name := tableName(filepath.ToSlash(rel))
			for _, imp := range p.Imports {
				if dep, ok := strings.CutPrefix(imp, module); ok && !strings.HasPrefix(dep, "internal/") {
					pkgs[name] = append(pkgs[name], tableName(dep))
				}
			}
			if _, ok := pkgs[name]; !ok {
				pkgs[name] = nil
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(pkgs) < 50 {
		t.Fatalf("found %d packages; is the walk reading the tree?", len(pkgs))
	}
	for name, imports := range pkgs {
		layer, ok := layerOf[name]
		if !ok {
			t.Errorf("package %s is in no row of the table in docs/architecture.md", name)
			continue
		}
		for _, dep := range imports {
			if l, ok := layerOf[dep]; ok && l > layer {
				t.Errorf("%s (%s) imports %s (%s), a layer above it", name, names[layer], dep, names[l])
			}
		}
	}
	for name := range layerOf {
		if _, ok := pkgs[name]; !ok {
			t.Errorf("the table names %s, which is no package", name)
		}
	}
}

// tableName is how the table names a package: its path below pkg/, or cmd/... in full.
func tableName(rel string) string { return strings.TrimPrefix(rel, "pkg/") }

var (
	row      = regexp.MustCompile("^\\| ([^|`]+?) \\| (.+) \\|$")
	backtick = regexp.MustCompile("`([a-z0-9/]+)`")
)

// readTable returns each package's layer (0 the bottom) and the layers' names.
func readTable(t *testing.T, path string) (map[string]int, []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "| Layer | Packages |\n|---|---|\n")
	if !ok {
		t.Fatalf("%s has no table of layers", path)
	}
	layerOf := map[string]int{}
	var names []string
	for _, line := range strings.Split(after, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			break
		}
		names = append(names, m[1])
		for _, b := range backtick.FindAllStringSubmatch(m[2], -1) {
			if prev, dup := layerOf[b[1]]; dup {
				t.Errorf("%s is in two rows: %s and %s", b[1], names[prev], m[1])
			}
			layerOf[b[1]] = len(names) - 1
		}
	}
	if len(names) < 4 {
		t.Fatalf("read %d rows of layers from %s", len(names), path)
	}
	return layerOf, names
}
