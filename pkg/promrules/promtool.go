package promrules

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"sigs.k8s.io/yaml"
)

// PromtoolOptions say how WritePromtoolTest names what it refers to.
type PromtoolOptions struct {
	// RuleFiles are the rule files as the test file names them (relative to its directory,
	// or absolute), in the order of Options.Files.
	RuleFiles []string
	// ScrapeInterval is the spacing of the samples appended (the input_series interval).
	ScrapeInterval time.Duration
	// End is the run's end: the input series run until it.
	End time.Time
	// Name names the test group.
	Name string
}

// promtoolTest is the file `promtool test rules` reads.
type promtoolTest struct {
	RuleFiles          []string        `json:"rule_files"`
	EvaluationInterval model.Duration  `json:"evaluation_interval"`
	GroupEvalOrder     []string        `json:"group_eval_order"`
	Tests              []promtoolGroup `json:"tests"`
}

type promtoolGroup struct {
	Name          string          `json:"name,omitempty"`
	Interval      model.Duration  `json:"interval"`
	InputSeries   []promtoolInput `json:"input_series"`
	AlertRuleTest []promtoolAlert `json:"alert_rule_test,omitempty"`
}

type promtoolInput struct {
	Series string `json:"series"`
	Values string `json:"values"`
}

type promtoolAlert struct {
	EvalTime  model.Duration      `json:"eval_time"`
	Alertname string              `json:"alertname"`
	ExpAlerts []promtoolExpAlerts `json:"exp_alerts"`
}

type promtoolExpAlerts struct {
	ExpLabels      map[string]string `json:"exp_labels"`
	ExpAnnotations map[string]string `json:"exp_annotations,omitempty"`
}

// WritePromtoolTest writes a `promtool test rules` file that replays the run: every series
// appended, as input_series at the scrape interval (a missing sample `_`, a staleness marker
// `stale`), and at every evaluation where an alert changed state, the alerts of that name
// firing then (none once they resolved; pending ones do not fire yet). promtool evaluates
// the same rules over the same samples and must find the same alerts. Needs
// Options.KeepSamples.
//
// promtool's series start at the Unix epoch. The run's samples keep their own timestamps
// (so time(), timestamp() and timestamp-valued series such as pleg_last_seen_seconds agree):
// each series is padded with missing samples from the epoch to the run's start, which must
// be a whole number of scrape and evaluation intervals after it (1970-01-01T01:00:00Z is).
func (e *Evaluator) WritePromtoolTest(w io.Writer, opts PromtoolOptions) error {
	if e.log == nil {
		return errors.New("promtool test: the samples were not kept (Options.KeepSamples)")
	}
	if f := e.failed; f != nil {
		return fmt.Errorf("promtool test: rule %s failed to evaluate at %s (%v): promtool stops at a rule's first failure",
			f.Rule, f.At.UTC().Format(time.RFC3339), f.Err)
	}
	if len(opts.RuleFiles) != len(e.files) {
		return fmt.Errorf("promtool test: %d rule file names for %d rule files", len(opts.RuleFiles), len(e.files))
	}
	// promtool evaluates the groups in group_eval_order, by name (in no set order without it):
	// the order they are evaluated in here.
	var order []string
	seen := map[string]string{}
	for _, g := range e.groups {
		if other, dup := seen[g.g.Name()]; dup {
			return fmt.Errorf("promtool test: group %q is in %s and %s: promtool orders groups by name", g.g.Name(), other, g.g.File())
		}
		seen[g.g.Name()] = g.g.File()
		order = append(order, g.g.Name())
		if g.g.Interval() != e.inter {
			// promtool evaluates every group at evaluation_interval.
			return fmt.Errorf("promtool test: group %q of %s evaluates every %v, not at the evaluation interval %v: promtool would evaluate it every %v",
				g.g.Name(), g.g.File(), g.g.Interval(), e.inter, e.inter)
		}
	}
	step := opts.ScrapeInterval
	if step <= 0 {
		return errors.New("promtool test: the scrape interval must be positive")
	}
	epoch := time.Unix(0, 0)
	if e.start.Before(epoch) || e.start.Sub(epoch)%step != 0 || e.start.Sub(epoch)%e.inter != 0 {
		return fmt.Errorf("promtool test: the run starts at %s, not a whole number of scrape (%v) and evaluation (%v) intervals after promtool's T+0, 1970-01-01T00:00:00Z",
			e.start.UTC().Format(time.RFC3339), step, e.inter)
	}
	startMs := epoch.UnixMilli()
	n := int(opts.End.Sub(epoch)/step) + 1
	grp := promtoolGroup{Name: opts.Name, Interval: model.Duration(step)}
	for _, s := range e.log.sorted() {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = "_"
		}
		for i, ts := range s.ts {
			k := (ts - startMs) / step.Milliseconds()
			if (ts-startMs)%step.Milliseconds() != 0 || k < 0 || int(k) >= n {
				return fmt.Errorf("promtool test: %s has a sample at %dms, off the %v scrape grid", s.labels, ts-startMs, step)
			}
			vals[k] = seriesValue(s.vs[i])
		}
		grp.InputSeries = append(grp.InputSeries, promtoolInput{Series: seriesName(s.labels), Values: compress(vals)})
	}
	for _, c := range e.checks {
		t := promtoolAlert{EvalTime: model.Duration(c.at.Sub(epoch)), Alertname: c.alert, ExpAlerts: []promtoolExpAlerts{}}
		for _, a := range c.firing {
			exp := promtoolExpAlerts{ExpLabels: map[string]string{}}
			a.labels.Range(func(l labels.Label) {
				if l.Name != labels.AlertName {
					exp.ExpLabels[l.Name] = l.Value
				}
			})
			if a.annots.Len() > 0 {
				exp.ExpAnnotations = a.annots.Map()
			}
			t.ExpAlerts = append(t.ExpAlerts, exp)
		}
		grp.AlertRuleTest = append(grp.AlertRuleTest, t)
	}
	out := promtoolTest{RuleFiles: opts.RuleFiles, EvaluationInterval: model.Duration(e.inter), GroupEvalOrder: order, Tests: []promtoolGroup{grp}}
	data, err := yaml.Marshal(out)
	if err != nil {
		return fmt.Errorf("promtool test: %w", err)
	}
	header := "# promtool test rules: written by `minikubelet simulate --emit-promtool-test`. The series are the\n" +
		"# run's, sampled every scrape interval; each alert_rule_test is an evaluation at which an alert changed\n" +
		"# state, with the alerts of that name firing then.\n"
	_, err = io.WriteString(w, header+string(data))
	return err
}

// seriesName is a series in PromQL's notation: name{label="value", ...}.
func seriesName(l labels.Labels) string {
	var b strings.Builder
	b.WriteString(l.Get(labels.MetricName))
	b.WriteByte('{')
	first := true
	l.Range(func(lb labels.Label) {
		if lb.Name == labels.MetricName {
			return
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(lb.Name)
		b.WriteString("=")
		b.WriteString(strconv.Quote(lb.Value))
	})
	b.WriteByte('}')
	return b.String()
}

// seriesValue is one value in promtool's series notation.
func seriesValue(v float64) string {
	switch {
	case value.IsStaleNaN(v):
		return "stale"
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, +1):
		return "Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// compress writes runs of one value as promtool's `vxN` (N+1 values) and runs of missing
// samples as `_xN` (N of them).
func compress(vals []string) string {
	var parts []string
	for i := 0; i < len(vals); {
		j := i
		for j+1 < len(vals) && vals[j+1] == vals[i] {
			j++
		}
		run := j - i + 1
		switch {
		case run == 1:
			parts = append(parts, vals[i])
		case vals[i] == "_":
			parts = append(parts, fmt.Sprintf("_x%d", run))
		case vals[i] == "stale", vals[i] == "NaN", vals[i] == "Inf", vals[i] == "-Inf":
			// No run notation: the lexer would read "NaNx3" as one identifier.
			for k := 0; k < run; k++ {
				parts = append(parts, vals[i])
			}
		default:
			parts = append(parts, fmt.Sprintf("%sx%d", vals[i], run-1))
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}
