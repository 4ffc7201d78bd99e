package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/configs"
	"github.com/minikubelet/minikubelet/pkg/promrules"
	"github.com/minikubelet/minikubelet/pkg/simulate"
)

// shippedRules is the --rules value naming the rules of configs/prometheus/rules/, embedded
// in the binary.
const shippedRules = "shipped"

// maxRuleFileSize bounds a rule file read for --rules.
const maxRuleFileSize = 16 << 20

// ruleSettings are simulate's rule flags.
type ruleSettings struct {
	args           []string // --rules
	given          bool     // --rules was on the command line
	evalInterval   time.Duration
	scrapeInterval time.Duration
	promtoolOut    string // --emit-promtool-test

	sources []ruleSource // resolved by options
}

// ruleSource is one rule file: from disk (path) or shipped (path empty).
type ruleSource struct {
	name string // how errors name it: the path as given, or shipped/<file>
	path string
	data []byte
	// groups is the file as a Prometheus rule file, when it is not one itself (a
	// PrometheusRule object): what a promtool test names instead, written beside it.
	groups []byte
}

// besideTest reports whether a promtool test names a copy written beside it (the shipped
// rules, and a PrometheusRule object's groups), rather than the file itself.
func (s ruleSource) besideTest() bool { return s.path == "" || s.groups != nil }

// base is the name of the copy beside a promtool test.
func (s ruleSource) base() string {
	if s.path == "" {
		return strings.TrimPrefix(s.name, shippedRules+"/")
	}
	return filepath.Base(s.path)
}

// options resolves the rule files: those --rules names, else the shipped ones when the
// scenario expects alerts or a promtool test is asked for; nil when no rules are evaluated.
func (rs *ruleSettings) options(sc *simulate.Scenario, promtool io.Writer) (*simulate.RulesOptions, error) {
	args := rs.args
	if !rs.given {
		if !sc.ExpectsAlerts() && rs.promtoolOut == "" {
			return nil, nil
		}
		args = []string{shippedRules}
	}
	if rs.given && len(args) == 0 {
		return nil, errors.New("flag --rules: no rule file named (a file, a directory, or \"shipped\")")
	}
	for _, a := range args {
		srcs, err := readRuleArg(a)
		if err != nil {
			return nil, err
		}
		rs.sources = append(rs.sources, srcs...)
	}
	opts := &simulate.RulesOptions{EvaluationInterval: rs.evalInterval, ScrapeInterval: rs.scrapeInterval}
	for _, src := range rs.sources {
		opts.Files = append(opts.Files, promrules.File{Name: src.name, Data: src.data})
	}
	if rs.promtoolOut != "" {
		opts.PromtoolTest = promtool
		for i, src := range rs.sources {
			groups, err := promrules.RuleFile(promrules.File{Name: src.name, Data: src.data})
			if err == nil && !bytes.Equal(groups, src.data) {
				rs.sources[i].groups = groups
			}
			opts.PromtoolRuleFiles = append(opts.PromtoolRuleFiles, rs.promtoolName(rs.sources[i]))
		}
	}
	return opts, nil
}

// readRuleArg reads one --rules value: a file, every *.yaml and *.yml of a directory (in name
// order), or the shipped rules.
func readRuleArg(arg string) ([]ruleSource, error) {
	if arg == shippedRules {
		var out []ruleSource
		for _, f := range configs.PrometheusRules() {
			out = append(out, ruleSource{name: shippedRules + "/" + f.Name, data: f.Data})
		}
		return out, nil
	}
	info, err := os.Stat(arg)
	if err != nil {
		return nil, fmt.Errorf("flag --rules: %w", err)
	}
	paths := []string{arg}
	if info.IsDir() {
		paths = nil
		entries, err := os.ReadDir(arg)
		if err != nil {
			return nil, fmt.Errorf("flag --rules: %w", err)
		}
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				paths = append(paths, filepath.Join(arg, e.Name()))
			}
		}
		sort.Strings(paths)
		if len(paths) == 0 {
			return nil, fmt.Errorf("flag --rules: directory %s has no .yaml or .yml file", arg)
		}
	}
	var out []ruleSource
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("flag --rules: %w", err)
		}
		if st.Size() > maxRuleFileSize {
			return nil, fmt.Errorf("flag --rules: %s: %d bytes is over the %d byte limit", p, st.Size(), maxRuleFileSize)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("flag --rules: %w", err)
		}
		out = append(out, ruleSource{name: p, path: p, data: data})
	}
	return out, nil
}

// shippedDir is where --emit-promtool-test writes the shipped rules it refers to: beside the
// test file, in <test file without extension>.rules/.
func (rs *ruleSettings) shippedDir() string {
	return strings.TrimSuffix(rs.promtoolOut, filepath.Ext(rs.promtoolOut)) + ".rules"
}

// promtoolName is how the test file names a rule file: relative to the test file's
// directory, as promtool resolves rule_files.
func (rs *ruleSettings) promtoolName(src ruleSource) string {
	path := src.path
	if src.besideTest() {
		path = filepath.Join(rs.shippedDir(), src.base())
	}
	base, err1 := filepath.Abs(filepath.Dir(rs.promtoolOut))
	abs, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	if rel, err := filepath.Rel(base, abs); err == nil {
		return rel
	}
	return abs
}

// writePromtool writes the test file, and beside it the shipped rules it refers to.
func (rs *ruleSettings) writePromtool(content string) error {
	for _, src := range rs.sources {
		if !src.besideTest() {
			continue
		}
		data := src.data
		if src.groups != nil {
			data = src.groups
		}
		dir := rs.shippedDir()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("flag --emit-promtool-test: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, src.base()), data, 0o644); err != nil {
			return fmt.Errorf("flag --emit-promtool-test: %w", err)
		}
	}
	if err := os.WriteFile(rs.promtoolOut, []byte(content), 0o644); err != nil {
		return fmt.Errorf("flag --emit-promtool-test: %w", err)
	}
	return nil
}
