package promrules

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"sigs.k8s.io/yaml"
)

// DefaultInterval is the evaluation interval of a group that sets none: Prometheus' default
// evaluation_interval is 1m, but the shipped prometheus.yml and kube-prometheus use 15s (and
// 30s), so 15s it is.
const DefaultInterval = 15 * time.Second

// File is a rules file: a Prometheus rule file (groups:) or a PrometheusRule object as
// kube-prometheus ships them (kind: PrometheusRule, spec.groups). Name is how errors and
// the emitted promtool tests call it.
type File struct {
	Name string
	Data []byte
}

// Options configure an Evaluator.
type Options struct {
	Files []File
	// Interval is the evaluation interval of the groups that set none (DefaultInterval
	// when 0).
	Interval time.Duration
	// Start is T+0: a group of interval i evaluates at Start, Start+i, Start+2i, ...
	Start time.Time
	// EvalFrom, when before Start, is where the evaluations begin instead (from the same
	// grid): the run that writes a promtool test evaluates the hour before its start, with
	// no samples, as promtool does, so that an alert on an absent series fires as there.
	EvalFrom time.Time
	// Dir is where the in-memory TSDB may keep its head chunks; a temporary directory
	// (removed by Close) when empty.
	Dir string
	// KeepSamples keeps every sample appended and the firing alerts at each transition,
	// for WritePromtoolTest.
	KeepSamples bool
}

// State is an alert's state as the timeline prints it.
type State string

// The alert states of a Transition. Resolved is an alert that was pending or firing and is
// no longer (Prometheus drops a pending one silently and keeps a resolved firing one for
// 15 minutes; both stop being in ALERTS).
const (
	Pending  State = "pending"
	Firing   State = "firing"
	Resolved State = "resolved"
)

// Transition is an alert changing state at an evaluation.
type Transition struct {
	At     time.Time
	Alert  string
	State  State
	Labels labels.Labels // the alert's labels, alertname included
	// Annotations are the alert's expanded annotations (as they were last evaluated).
	Annotations labels.Labels
}

// RuleError is a rule whose evaluation failed at At (reported when its error changes).
type RuleError struct {
	At   time.Time
	Rule string
	Err  error
}

// Evaluator evaluates rule groups with Prometheus' engine over the samples appended to it,
// at their evaluation instants on the caller's (virtual) clock. Not safe for concurrent
// use: one simulation drives it.
type Evaluator struct {
	db      *tsdb.DB
	tmpDir  string
	engine  *promql.Engine
	groups  []*schedGroup
	files   []File
	alerts  map[string]alertSeen // active alerts by rule and labels
	lastErr map[string]string    // by group and rule name
	targets map[string]map[uint64]labels.Labels
	log     *sampleLog // nil unless Options.KeepSamples
	checks  []firingAt // the firing alerts of a name whenever one of them changed state
	failed  *RuleError // the first rule that failed to evaluate (promtool stops there)
	start   time.Time
	inter   time.Duration

	// names are the __name__ matchers of every selector in the rules; nil when one selector
	// has none (it may select any series). selects caches their verdict per name.
	names   [][]*labels.Matcher
	selects map[string]bool
}

// firingAt is the alerts of one name firing at an evaluation (promtool's exp_alerts).
type firingAt struct {
	at     time.Time
	alert  string
	firing []alertSeen
}

type schedGroup struct {
	g    *rules.Group
	next time.Time
}

type alertSeen struct {
	state  State
	labels labels.Labels
	annots labels.Labels
}

// New loads the rule files (refusing any Prometheus refuses, with its error and the file
// and rule named) and opens the storage the rules read.
func New(opts Options) (*Evaluator, error) {
	interval := opts.Interval
	if interval == 0 {
		interval = DefaultInterval
	}
	if interval < 0 {
		return nil, fmt.Errorf("evaluation interval %v must be positive", interval)
	}
	if len(opts.Files) == 0 {
		return nil, errors.New("no rule files")
	}
	ld := loader{files: map[string][]byte{}, parsed: map[string]*rulefmt.RuleGroups{}}
	names := make([]string, 0, len(opts.Files))
	for _, f := range opts.Files {
		data, err := groupsOf(f)
		if err != nil {
			return nil, err
		}
		if _, dup := ld.files[f.Name]; dup {
			return nil, fmt.Errorf("rule file %s given twice", f.Name)
		}
		ld.files[f.Name] = data
		names = append(names, f.Name)
	}
	// The order of evaluation: files as given, groups as written (LoadGroups keys them).
	order, err := ld.groupOrder(names)
	if err != nil {
		return nil, err
	}

	dir, tmp := opts.Dir, ""
	if dir == "" {
		d, err := os.MkdirTemp("", "minikubelet-rules-")
		if err != nil {
			return nil, fmt.Errorf("rules storage: %w", err)
		}
		dir, tmp = d, d
	}
	tsOpts := tsdb.DefaultOptions()
	tsOpts.WALSegmentSize = -1 // no write-ahead log: nothing outlives the run
	tsOpts.NoLockfile = true
	tsOpts.StripeSize = 256 // a node's few hundred series, not a server's millions
	// The head accepts a sample up to half a block range older than its newest one; a scrape
	// window of a stopped kubelet can span the rest of the run, so make that range a year.
	tsOpts.MinBlockDuration = (365 * 24 * time.Hour).Milliseconds()
	tsOpts.MaxBlockDuration = tsOpts.MinBlockDuration
	db, err := tsdb.Open(dir, log.NewNopLogger(), nil, tsOpts, nil)
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return nil, fmt.Errorf("rules storage: %w", err)
	}
	db.DisableCompactions() // the head keeps every sample; the run is short
	e := &Evaluator{db: db, tmpDir: tmp, files: opts.Files, alerts: map[string]alertSeen{}, lastErr: map[string]string{},
		targets: map[string]map[uint64]labels.Labels{}, start: opts.Start, inter: interval}
	if opts.KeepSamples {
		e.log = newSampleLog()
	}
	e.engine = promql.NewEngine(promql.EngineOpts{
		MaxSamples:               50000000,
		Timeout:                  2 * time.Minute,
		LookbackDelta:            5 * time.Minute,
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		NoStepSubqueryIntervalFn: func(int64) int64 { return interval.Milliseconds() },
	})
	mgr := rules.NewManager(&rules.ManagerOptions{
		QueryFunc:   rules.EngineQueryFunc(e.engine, db),
		NotifyFunc:  func(context.Context, string, ...*rules.Alert) {},
		Context:     context.Background(),
		Appendable:  db,
		Queryable:   db,
		Logger:      log.NewNopLogger(),
		GroupLoader: ld,
	})
	groups, errs := mgr.LoadGroups(interval, labels.EmptyLabels(), "", nil, names...)
	if len(errs) > 0 {
		e.Close()
		return nil, errors.Join(errs...)
	}
	e.names = nameMatchers(groups)
	for _, key := range order {
		g := groups[key]
		for _, ar := range g.AlertingRules() {
			// A fresh Prometheus has no earlier state to restore: its alerts write ALERTS
			// from the first evaluation.
			ar.SetRestored(true)
		}
		first := opts.Start
		if !opts.EvalFrom.IsZero() && opts.EvalFrom.Before(first) {
			first = opts.EvalFrom
		}
		e.groups = append(e.groups, &schedGroup{g: g, next: first})
	}
	return e, nil
}

// nameMatchers returns the __name__ matchers of every selector of the groups' rules, or nil
// when a selector has none.
func nameMatchers(groups map[string]*rules.Group) [][]*labels.Matcher {
	var out [][]*labels.Matcher
	all := false
	for _, g := range groups {
		for _, r := range g.Rules() {
			parser.Inspect(r.Query(), func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				var ms []*labels.Matcher
				for _, m := range vs.LabelMatchers {
					if m.Name == labels.MetricName {
						ms = append(ms, m)
					}
				}
				all = all || len(ms) == 0
				out = append(out, ms)
				return nil
			})
		}
	}
	if all {
		return nil
	}
	return out
}

// Selects says whether a selector of the rules may select a series of this name. The
// scrape stores only those: a series no rule can select changes no rule's result (nor an
// emitted promtool test's), and storing every series was most of an evaluated run's cost.
func (e *Evaluator) Selects(name string) bool {
	if e.names == nil {
		return true
	}
	if v, ok := e.selects[name]; ok {
		return v
	}
	v := false
	for _, ms := range e.names {
		match := true
		for _, m := range ms {
			match = match && m.Matches(name)
		}
		if v = match; v {
			break
		}
	}
	if e.selects == nil {
		e.selects = map[string]bool{}
	}
	e.selects[name] = v
	return v
}

// Close releases the storage.
func (e *Evaluator) Close() {
	if e.db != nil {
		_ = e.db.Close()
		e.db = nil
	}
	if e.tmpDir != "" {
		os.RemoveAll(e.tmpDir)
		e.tmpDir = ""
	}
}

// Files are the rule files, as given.
func (e *Evaluator) Files() []File { return e.files }

// Append stores one scrape of a target at t: the samples it returned, and a staleness
// marker for each series the target returned at its previous scrape and not at this one,
// as Prometheus' scrape loop writes them.
func (e *Evaluator) Append(target string, t time.Time, samples []Sample) error {
	app := e.db.Appender(context.Background())
	ms := t.UnixMilli()
	seen := make(map[uint64]labels.Labels, len(samples))
	for _, s := range samples {
		if _, err := app.Append(0, s.Labels, ms, s.Value); err != nil {
			_ = app.Rollback()
			return fmt.Errorf("append %s at %s: %w", s.Labels, t.UTC().Format(time.RFC3339), err)
		}
		seen[s.Labels.Hash()] = s.Labels
		if e.log != nil {
			e.log.add(s.Labels, ms, s.Value)
		}
	}
	stale := math.Float64frombits(value.StaleNaN)
	prev := e.targets[target]
	gone := map[uint64]labels.Labels{}
	for h, l := range prev {
		if _, ok := seen[h]; !ok {
			gone[h] = l
		}
	}
	for _, h := range sortedHashes(gone) {
		if _, err := app.Append(0, prev[h], ms, stale); err != nil {
			_ = app.Rollback()
			return fmt.Errorf("append a staleness marker for %s: %w", prev[h], err)
		}
		if e.log != nil {
			e.log.add(prev[h], ms, stale)
		}
	}
	e.targets[target] = seen
	return app.Commit()
}

// NextEval is the earliest instant a group is due.
func (e *Evaluator) NextEval() time.Time {
	var next time.Time
	for i, g := range e.groups {
		if i == 0 || g.next.Before(next) {
			next = g.next
		}
	}
	return next
}

// EvalBefore evaluates every group at each of its instants before limit, in time order
// (groups due at the same instant in the order of the files), and returns the alerts'
// transitions and the rules whose evaluation failed.
func (e *Evaluator) EvalBefore(ctx context.Context, limit time.Time) ([]Transition, []RuleError) {
	var trans []Transition
	var errs []RuleError
	for len(e.groups) > 0 {
		t := e.NextEval()
		if !t.Before(limit) {
			break
		}
		var now []Transition
		for _, g := range e.groups {
			if !g.next.Equal(t) {
				continue
			}
			g.g.Eval(ctx, t)
			g.next = t.Add(g.g.Interval())
			now = append(now, e.transitions(g.g, t)...)
			errs = append(errs, e.ruleErrors(g.g, t)...)
		}
		if e.log != nil {
			e.recordChecks(t, now)
		}
		trans = append(trans, now...)
	}
	return trans, errs
}

// recordChecks notes, for every alert name that changed state at t, which of its alerts
// fire at t (across groups and files, as promtool gathers them).
func (e *Evaluator) recordChecks(t time.Time, trans []Transition) {
	done := map[string]bool{}
	for _, tr := range trans {
		if done[tr.Alert] {
			continue
		}
		done[tr.Alert] = true
		c := firingAt{at: t, alert: tr.Alert}
		for _, k := range sortedKeys(e.alerts) {
			if a := e.alerts[k]; a.state == Firing && a.labels.Get(labels.AlertName) == tr.Alert {
				c.firing = append(c.firing, a)
			}
		}
		e.checks = append(e.checks, c)
	}
}

// transitions compares the group's active alerts with those of its last evaluation.
func (e *Evaluator) transitions(g *rules.Group, t time.Time) []Transition {
	var out []Transition
	for i, r := range g.Rules() { // in the file's order (AlertingRules sorts them by name)
		ar, ok := r.(*rules.AlertingRule)
		if !ok {
			continue
		}
		// A rule is its place in its group: two rules may share a name (a warning and a
		// critical threshold of one alert).
		prefix := fmt.Sprintf("%s\x00%s\x00%d\x00", g.File(), g.Name(), i)
		now := map[string]alertSeen{}
		for _, a := range ar.ActiveAlerts() {
			st := Pending
			if a.State == rules.StateFiring {
				st = Firing
			}
			now[prefix+a.Labels.String()] = alertSeen{state: st, labels: a.Labels, annots: a.Annotations}
		}
		for _, k := range sortedKeys(now) {
			if prev, ok := e.alerts[k]; !ok || prev.state != now[k].state {
				a := now[k]
				out = append(out, Transition{At: t, Alert: ar.Name(), State: a.state, Labels: a.labels, Annotations: a.annots})
			}
		}
		for _, k := range sortedKeys(e.alerts) {
			if len(k) < len(prefix) || k[:len(prefix)] != prefix {
				continue
			}
			if _, ok := now[k]; !ok {
				a := e.alerts[k]
				out = append(out, Transition{At: t, Alert: ar.Name(), State: Resolved, Labels: a.labels, Annotations: a.annots})
				delete(e.alerts, k)
			}
		}
		for k, a := range now {
			e.alerts[k] = a
		}
	}
	return out
}

// ruleErrors reports each rule whose last evaluation failed with an error it did not have
// at the evaluation before.
func (e *Evaluator) ruleErrors(g *rules.Group, t time.Time) []RuleError {
	var out []RuleError
	for i, r := range g.Rules() {
		key := fmt.Sprintf("%s\x00%s\x00%d", g.File(), g.Name(), i)
		msg := ""
		if err := r.LastError(); err != nil {
			msg = err.Error()
		}
		if msg != e.lastErr[key] && msg != "" {
			re := RuleError{At: t, Rule: r.Name(), Err: fmt.Errorf("%s: group %q: %w", g.File(), g.Name(), r.LastError())}
			out = append(out, re)
			if e.failed == nil {
				e.failed = &re
			}
		}
		e.lastErr[key] = msg
	}
	return out
}

// loader is rules.GroupLoader over the files' contents. It parses each file once: New asks
// for the groups' order, then LoadGroups for the groups.
type loader struct {
	files  map[string][]byte
	parsed map[string]*rulefmt.RuleGroups
}

func (l loader) Load(name string) (*rulefmt.RuleGroups, []error) {
	if rgs, ok := l.parsed[name]; ok {
		return rgs, nil
	}
	rgs, errs := rulefmt.Parse(l.files[name])
	for i, err := range errs {
		errs[i] = fmt.Errorf("rule file %s: %w", name, err)
	}
	if len(errs) == 0 {
		l.parsed[name] = rgs
	}
	return rgs, errs
}

func (loader) Parse(query string) (parser.Expr, error) { return parser.ParseExpr(query) }

// groupOrder parses the files (refusing what Prometheus refuses) and returns their groups'
// keys in file and group order.
func (l loader) groupOrder(names []string) ([]string, error) {
	var keys []string
	for _, n := range names {
		rgs, errs := l.Load(n)
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		for _, rg := range rgs.Groups {
			keys = append(keys, rules.GroupKey(n, rg.Name))
		}
	}
	return keys, nil
}

// RuleFile returns a file's rule groups as a Prometheus rule file: the file itself, or the
// spec of a PrometheusRule object (what a promtool test must name instead).
func RuleFile(f File) ([]byte, error) { return groupsOf(f) }

// groupsOf returns a file's rule groups as a Prometheus rule file: the file itself, or the
// spec of a PrometheusRule object.
func groupsOf(f File) ([]byte, error) {
	var head struct {
		Kind string `json:"kind"`
		Spec *struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(f.Data, &head); err != nil || head.Kind != "PrometheusRule" {
		// Not an object: Prometheus' own parser reports what is wrong with it.
		return f.Data, nil
	}
	if head.Spec == nil {
		return nil, fmt.Errorf("rule file %s: PrometheusRule without spec", f.Name)
	}
	data, err := yaml.Marshal(map[string]any{"groups": head.Spec.Groups})
	if err != nil {
		return nil, fmt.Errorf("rule file %s: spec.groups: %w", f.Name, err)
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("groups: null")) {
		data = []byte("groups: []\n")
	}
	return data, nil
}

var _ storage.Appendable = (*tsdb.DB)(nil)
