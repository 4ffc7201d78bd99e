// Command gengates writes the feature-gate table of a Kubernetes release as JSON: every gate
// of pkg/features/kube_features.go's defaultKubernetesFeatureGates with its default, stage
// and lock, read from the Go source with go/ast (nothing of k8s.io/kubernetes is built or
// imported). pkg/features checks the simulator's gates against its output; `make gates`
// regenerates pkg/features/testdata/kube_features.json.
//
//	go run ./hack/gengates -file $(go mod download -json k8s.io/kubernetes@v1.30.14 | ...)/pkg/features/kube_features.go -version v1.30.14
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strconv"
)

// Gate is one row of the table.
type Gate struct {
	Name          string `json:"name"`
	Default       bool   `json:"default"`
	PreRelease    string `json:"preRelease"` // ALPHA, BETA, DEPRECATED, or "" for GA, as featuregate's constants
	LockToDefault bool   `json:"lockToDefault,omitempty"`
}

// Table is the file gengates writes.
type Table struct {
	Source string `json:"source"`
	Gates  []Gate `json:"gates"`
}

var stages = map[string]string{"Alpha": "ALPHA", "Beta": "BETA", "GA": "", "Deprecated": "DEPRECATED"}

func main() {
	file := flag.String("file", "", "path of k8s.io/kubernetes' pkg/features/kube_features.go")
	version := flag.String("version", "", "the release the file is from, recorded in the output")
	out := flag.String("o", "", "output file (default: stdout)")
	flag.Parse()
	if *file == "" || *version == "" {
		fmt.Fprintln(os.Stderr, "gengates: -file and -version are required")
		os.Exit(2)
	}
	gates, err := parse(*file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gengates: %v\n", err)
		os.Exit(1)
	}
	data, err := json.MarshalIndent(Table{Source: "k8s.io/kubernetes@" + *version + " pkg/features/kube_features.go", Gates: gates}, "", "  ")
	if err != nil {
		fmt.Fprintf(os.Stderr, "gengates: %v\n", err)
		os.Exit(1)
	}
	data = append(data, '\n')
	if *out == "" {
		os.Stdout.Write(data)
		return
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "gengates: %v\n", err)
		os.Exit(1)
	}
}

// parse reads the gate names (the file's `X featuregate.Feature = "X"` constants) and the
// defaultKubernetesFeatureGates map literal.
func parse(path string) ([]Gate, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return nil, err
	}
	names := map[string]string{} // constant -> gate name
	var table *ast.CompositeLit
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range vs.Names {
			if i >= len(vs.Values) {
				break
			}
			switch v := vs.Values[i].(type) {
			case *ast.BasicLit:
				if v.Kind == token.STRING {
					if s, err := strconv.Unquote(v.Value); err == nil {
						names[id.Name] = s
					}
				}
			case *ast.CompositeLit:
				if id.Name == "defaultKubernetesFeatureGates" {
					table = v
				}
			}
		}
		return true
	})
	if table == nil {
		return nil, fmt.Errorf("%s: no defaultKubernetesFeatureGates map", path)
	}
	var gates []Gate
	for _, elt := range table.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			return nil, fmt.Errorf("%s: unexpected entry at %v", path, fset.Position(elt.Pos()))
		}
		var name string
		switch k := kv.Key.(type) {
		case *ast.Ident:
			name = names[k.Name]
		case *ast.SelectorExpr:
			// Another package's gate (genericfeatures.X): named as its constant, which is
			// how every such gate of these releases is declared.
			name = k.Sel.Name
		}
		if name == "" {
			return nil, fmt.Errorf("%s: cannot name the key at %v", path, fset.Position(kv.Pos()))
		}
		spec, ok := kv.Value.(*ast.CompositeLit)
		if !ok {
			return nil, fmt.Errorf("%s: gate %s: the spec is not a literal", path, name)
		}
		g := Gate{Name: name}
		for _, field := range spec.Elts {
			fkv, ok := field.(*ast.KeyValueExpr)
			if !ok {
				return nil, fmt.Errorf("%s: gate %s: positional spec", path, name)
			}
			key := fkv.Key.(*ast.Ident).Name
			switch key {
			case "Default", "LockToDefault":
				id, ok := fkv.Value.(*ast.Ident)
				if !ok || (id.Name != "true" && id.Name != "false") {
					return nil, fmt.Errorf("%s: gate %s: %s is not a literal bool", path, name, key)
				}
				if key == "Default" {
					g.Default = id.Name == "true"
				} else {
					g.LockToDefault = id.Name == "true"
				}
			case "PreRelease":
				sel, ok := fkv.Value.(*ast.SelectorExpr)
				stage, known := "", false
				if ok {
					stage, known = stages[sel.Sel.Name]
				}
				if !known {
					return nil, fmt.Errorf("%s: gate %s: unknown stage", path, name)
				}
				g.PreRelease = stage
			}
		}
		gates = append(gates, g)
	}
	sort.Slice(gates, func(i, j int) bool { return gates[i].Name < gates[j].Name })
	return gates, nil
}
