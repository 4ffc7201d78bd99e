package promrules

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

const upRules = `groups:
- name: g
  rules:
  - alert: TargetDown
    expr: up == 0
    for: 30s
    labels: {severity: warning}
    annotations: {summary: "{{ $labels.instance }} down, value {{ $value }}"}
  - alert: KeepsFiring
    expr: up == 0
    keep_firing_for: 1m
  - record: job:up:sum
    expr: sum by (job) (up)
`

// feed appends up{instance} = value at every 15s scrape from `from` (inclusive) to `to`
// (exclusive) and evaluates the rules before `to`.
type feed struct {
	t     *testing.T
	e     *Evaluator
	trans []Transition
	errs  []RuleError
}

func (f *feed) scrape(from, to time.Duration, values map[string]float64) {
	f.t.Helper()
	for at := from; at < to; at += 15 * time.Second {
		for inst, v := range values {
			s := Sample{Labels: labels.FromStrings("__name__", "up", "instance", inst, "job", "node"), Value: v}
			if err := f.e.Append(inst, t0.Add(at), []Sample{s}); err != nil {
				f.t.Fatal(err)
			}
		}
		tr, errs := f.e.EvalBefore(context.Background(), t0.Add(at+time.Nanosecond))
		f.trans = append(f.trans, tr...)
		f.errs = append(f.errs, errs...)
	}
}

func (f *feed) lines() []string {
	var out []string
	for _, tr := range f.trans {
		out = append(out, fmt.Sprintf("%v %s %s %s", tr.At.Sub(t0), tr.Alert, tr.State, tr.Labels.Get("instance")))
	}
	return out
}

func newEvaluator(t *testing.T, files ...File) *Evaluator {
	t.Helper()
	e, err := New(Options{Files: files, Start: t0, Dir: t.TempDir(), KeepSamples: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestAlertLifecycle: an alert is pending while its expression holds for less than `for`,
// firing after, resolved when it stops holding; keep_firing_for keeps one firing after;
// staleness ends a series that stopped being scraped, as in Prometheus.
func TestAlertLifecycle(t *testing.T) {
	f := &feed{t: t, e: newEvaluator(t, File{Name: "up.yaml", Data: []byte(upRules)})}
	f.scrape(0, time.Minute, map[string]float64{"a": 1})
	f.scrape(time.Minute, 2*time.Minute, map[string]float64{"a": 0})
	f.scrape(2*time.Minute, 4*time.Minute, map[string]float64{"a": 1})
	want := []string{
		"1m0s TargetDown pending a",
		"1m0s KeepsFiring firing a",
		"1m30s TargetDown firing a",
		"2m0s TargetDown resolved a",
		// keep_firing_for 1m: firing until a minute after the expression stopped holding
		"3m0s KeepsFiring resolved a",
	}
	if got := f.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("transitions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, tr := range f.trans {
		if tr.Alert == "TargetDown" && tr.State == Firing {
			if got := tr.Annotations.Get("summary"); got != "a down, value 0" {
				t.Errorf("summary annotation = %q, want the template expanded", got)
			}
			if tr.Labels.Get("severity") != "warning" {
				t.Errorf("labels %s lack the rule's severity", tr.Labels)
			}
		}
	}
}

// TestStalenessResolves: a series that disappears from its target's scrape gets a
// staleness marker, so `up == 0` stops matching at once instead of 5 minutes later.
func TestStalenessResolves(t *testing.T) {
	f := &feed{t: t, e: newEvaluator(t, File{Name: "up.yaml", Data: []byte(upRules)})}
	f.scrape(0, time.Minute, map[string]float64{"a": 0})
	// The target "a" now returns nothing.
	if err := f.e.Append("a", t0.Add(time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	tr, _ := f.e.EvalBefore(context.Background(), t0.Add(time.Minute+time.Nanosecond))
	f.trans = append(f.trans, tr...)
	got := strings.Join(f.lines(), "\n")
	if !strings.Contains(got, "1m0s TargetDown resolved a") {
		t.Errorf("transitions:\n%s\nwant TargetDown resolved at 1m (the series went stale)", got)
	}
}

// TestPrometheusRuleObject: a PrometheusRule object (kube-prometheus' form) is read as its
// spec's groups.
func TestPrometheusRuleObject(t *testing.T) {
	var obj bytes.Buffer
	obj.WriteString("apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: up}\nspec:\n")
	for _, line := range strings.Split(strings.TrimSpace(upRules), "\n") {
		obj.WriteString("  " + line + "\n")
	}
	f := &feed{t: t, e: newEvaluator(t, File{Name: "up-rule.yaml", Data: obj.Bytes()})}
	f.scrape(0, time.Minute, map[string]float64{"a": 0})
	if got := strings.Join(f.lines(), "\n"); !strings.Contains(got, "30s TargetDown firing a") {
		t.Errorf("transitions:\n%s\nwant TargetDown firing at 30s", got)
	}
}

// TestBadRuleFiles: what Prometheus refuses is refused with its error, the file and the
// group and rule named.
func TestBadRuleFiles(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string
	}{
		{"bad expression", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up ==\n", []string{"rule file bad.yaml", `group "g"`, `"A"`, "parse error"}},
		{"no expression", "groups:\n- name: g\n  rules:\n  - alert: A\n", []string{"rule file bad.yaml", `group "g"`, "field 'expr' must be set in rule"}},
		{"unknown field", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    fro: 1m\n", []string{"rule file bad.yaml", "field fro not found"}},
		{"duplicate group", "groups:\n- name: g\n  rules: []\n- name: g\n  rules: []\n", []string{"rule file bad.yaml", `"g" is repeated in the same file`}},
		{"bad template", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    annotations: {s: '{{ .Nope'}\n", []string{"rule file bad.yaml", `"A"`, "template"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Options{Files: []File{{Name: "bad.yaml", Data: []byte(tt.data)}}, Start: t0, Dir: t.TempDir()})
			if err == nil {
				t.Fatal("New accepted the file")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestEvaluationErrorIsReported: a rule that fails when evaluated (many-to-many matching)
// is reported once per change of its error, and the other rules go on.
func TestEvaluationErrorIsReported(t *testing.T) {
	rules := upRules + `  - record: bad
    expr: up + on() group_left up
`
	f := &feed{t: t, e: newEvaluator(t, File{Name: "up.yaml", Data: []byte(rules)})}
	f.scrape(0, time.Minute, map[string]float64{"a": 0, "b": 1})
	if len(f.errs) != 1 {
		t.Fatalf("%d rule errors, want 1 (reported once): %v", len(f.errs), f.errs)
	}
	if e := f.errs[0]; e.Rule != "bad" || !strings.Contains(e.Err.Error(), "up.yaml") || !strings.Contains(e.Err.Error(), "many-to-many") {
		t.Errorf("rule error = %s: %v, want rule bad, the file and Prometheus' many-to-many error", e.Rule, e.Err)
	}
	if !strings.Contains(strings.Join(f.lines(), "\n"), "TargetDown firing a") {
		t.Errorf("the other rules stopped: %v", f.lines())
	}
}

// TestGroupInterval: a group's own interval is honoured, the others evaluate at Options'.
func TestGroupInterval(t *testing.T) {
	rules := "groups:\n- name: slow\n  interval: 1m\n  rules:\n  - alert: Down\n    expr: up == 0\n"
	f := &feed{t: t, e: newEvaluator(t, File{Name: "slow.yaml", Data: []byte(rules)})}
	f.scrape(0, 50*time.Second, map[string]float64{"a": 1})
	f.scrape(50*time.Second, 3*time.Minute, map[string]float64{"a": 0})
	if got := strings.Join(f.lines(), "\n"); got != "1m0s Down firing a" {
		t.Errorf("transitions:\n%s\nwant Down firing at the group's 1m evaluation only", got)
	}
}

func TestCompress(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{"_", "_", "_", "1", "1", "1", "2"}, "_x3 1x2 2"},
		{[]string{"1"}, "1"},
		{[]string{"stale", "stale", "0"}, "stale stale 0"},
		{[]string{"1e+06", "1e+06"}, "1e+06x1"},
		{[]string{"NaN", "NaN", "Inf", "Inf"}, "NaN NaN Inf Inf"},
	}
	for _, tt := range tests {
		if got := compress(tt.in); got != tt.want {
			t.Errorf("compress(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRulesSharingAName: two rules of a group may be one alert at two thresholds; each keeps
// its own alerts (they neither resolve nor restart each other at every evaluation).
func TestRulesSharingAName(t *testing.T) {
	rules := `groups:
- name: g
  rules:
  - alert: Down
    expr: up == 0
    labels: {severity: warning}
  - alert: Down
    expr: up == 0
    for: 30s
    labels: {severity: critical}
`
	f := &feed{t: t, e: newEvaluator(t, File{Name: "down.yaml", Data: []byte(rules)})}
	f.scrape(0, 2*time.Minute, map[string]float64{"a": 0})
	var got []string
	for _, tr := range f.trans {
		got = append(got, fmt.Sprintf("%v %s %s", tr.At.Sub(t0), tr.State, tr.Labels.Get("severity")))
	}
	want := "0s firing warning\n0s pending critical\n30s firing critical"
	if strings.Join(got, "\n") != want {
		t.Errorf("transitions:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}

// TestLongScrapeWindow: one target's samples may be appended for hours before another's
// (a stopped kubelet's scrapes fill the rest of the run at once); the storage takes them.
func TestLongScrapeWindow(t *testing.T) {
	e := newEvaluator(t, File{Name: "up.yaml", Data: []byte(upRules)})
	sample := func(inst string) []Sample {
		return []Sample{{Labels: labels.FromStrings("__name__", "up", "instance", inst, "job", "node"), Value: 0}}
	}
	for at := time.Duration(0); at < 3*time.Hour; at += 15 * time.Second {
		if err := e.Append("a", t0.Add(at), sample("a")); err != nil {
			t.Fatal(err)
		}
	}
	for at := time.Duration(0); at < 3*time.Hour; at += 15 * time.Second {
		if err := e.Append("b", t0.Add(at), sample("b")); err != nil {
			t.Fatalf("target b at %v: %v", at, err)
		}
	}
	trans, errs := e.EvalBefore(context.Background(), t0.Add(3*time.Hour))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	firing := map[string]bool{}
	for _, tr := range trans {
		if tr.Alert == "TargetDown" && tr.State == Firing {
			firing[tr.Labels.Get("instance")] = true
		}
	}
	if !firing["a"] || !firing["b"] {
		t.Errorf("TargetDown fired for %v, want a and b", firing)
	}
}

// TestSelects: a scrape stores only the series some rule can select, by name; a selector
// without a name may select anything, so then every series is stored.
func TestSelects(t *testing.T) {
	tests := []struct {
		name  string
		expr  string
		keeps []string
		drops []string
	}{
		{"by name", `rate(foo_total[5m]) > 0 and on() up == 1`, []string{"foo_total", "up"}, []string{"foo", "bar"}},
		{"histogram", `histogram_quantile(0.9, rate(lat_seconds_bucket[5m])) > 1`, []string{"lat_seconds_bucket"}, []string{"lat_seconds_sum", "lat_seconds_count"}},
		{"name regexp", `{__name__=~"kube_.*"} > 0`, []string{"kube_pod_info", "kube_node"}, []string{"up"}},
		{"no name", `count({job="kubelet"}) > 0`, []string{"anything", "up"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := fmt.Sprintf("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: '%s'\n", tt.expr)
			e := newEvaluator(t, File{Name: "r.yaml", Data: []byte(rules)})
			for _, n := range tt.keeps {
				if !e.Selects(n) {
					t.Errorf("Selects(%q) = false, want true", n)
				}
			}
			for _, n := range tt.drops {
				if e.Selects(n) {
					t.Errorf("Selects(%q) = true, want false", n)
				}
			}
		})
	}
}

// TestFromFamiliesKeeps: the families and series a rule cannot select are not stored; the
// rest are stored whole.
func TestFromFamiliesKeeps(t *testing.T) {
	mfs := parseText(t, `# TYPE lat_seconds histogram
lat_seconds_bucket{le="1"} 1
lat_seconds_bucket{le="+Inf"} 2
lat_seconds_sum 3
lat_seconds_count 2
# TYPE other counter
other_total 5
# TYPE up gauge
up 1
`)
	keep := func(n string) bool { return n == "lat_seconds_bucket" || n == "up" }
	var got []string
	for _, s := range FromFamilies(mfs, labels.FromStrings("job", "kubelet"), keep) {
		got = append(got, fmt.Sprintf("%s %v", s.Labels, s.Value))
	}
	want := []string{
		`{__name__="lat_seconds_bucket", job="kubelet", le="1"} 1`,
		`{__name__="lat_seconds_bucket", job="kubelet", le="+Inf"} 2`,
		`{__name__="up", job="kubelet"} 1`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func parseText(t *testing.T, text string) []*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	// In name order, as a registry gathers them (the parser's map has none).
	var out []*dto.MetricFamily
	for _, n := range slices.Sorted(maps.Keys(fams)) {
		out = append(out, fams[n])
	}
	return out
}
