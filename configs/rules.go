package configs

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed prometheus/rules/*.yaml
var rules embed.FS

// RuleFile is one shipped rule file: its name in configs/prometheus/rules/ and its content.
type RuleFile struct {
	Name string
	Data []byte
}

// PrometheusRules returns the shipped rule files of configs/prometheus/rules/, by name.
func PrometheusRules() []RuleFile {
	names, err := fs.Glob(rules, "prometheus/rules/*.yaml")
	if err != nil {
		panic(err) // the pattern is valid
	}
	sort.Strings(names)
	out := make([]RuleFile, 0, len(names))
	for _, n := range names {
		data, err := rules.ReadFile(n)
		if err != nil {
			panic(err) // embedded
		}
		out = append(out, RuleFile{Name: n[len("prometheus/rules/"):], Data: data})
	}
	return out
}
