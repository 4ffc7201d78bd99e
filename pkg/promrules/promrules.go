package promrules

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
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
	// OneAtATime evaluates every group at one instant before the next even when the rules
	// allow a group at a time (see batch): the reference the batched evaluation is tested
	// against.
	OneAtATime bool
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
	targets map[string]*targetCache // by the target's labels
	log     *sampleLog              // nil unless Options.KeepSamples
	checks  []firingAt              // the firing alerts of a name whenever one of them changed state
	failed  *RuleError              // the first rule that failed to evaluate (promtool stops there)
	start   time.Time
	inter   time.Duration

	// batched: the groups are evaluated a group at a time, each rule once over the instants
	// asked for (see batch).
	batched  bool
	parallel bool // see evalBatched

	// names are the __name__ matchers of every selector in the rules; nil when one selector
	// has none (it may select any series). selects caches their verdict per name.
	names     [][]*labels.Matcher
	selectsMu sync.Mutex // Selects is asked by the scrape and by what stores it
	selects   map[string]bool
}

// firingAt is the alerts of one name firing at an evaluation (promtool's exp_alerts).
type firingAt struct {
	at     time.Time
	alert  string
	firing []alertSeen
}

type schedGroup struct {
	g      *rules.Group
	next   time.Time
	alerts map[string]alertSeen // its active alerts, by rule and labels
	// lastErr is each rule's error at its last evaluation, by place in the group.
	lastErr map[int]string
	after   []int // the groups (indexes into Evaluator.groups) whose series it reads
	// recorded is, by place in the group, whether a recording rule wrote samples at its
	// last evaluation (the next writes their staleness markers if it writes none).
	recorded map[int]bool
	// annots are, by place in the group, the annotations of its alerting rules when the
	// group's rules were made without them (see lazyAnnotations); nil otherwise.
	annots []labels.Labels
}

type alertSeen struct {
	state  State
	labels labels.Labels
	annots labels.Labels
	// in is the rule's query result at inAt, the last evaluation the alert was in it (what
	// its annotations are expanded from when the group's rules have none, see annots).
	in   promql.Vector
	inAt time.Time
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
	e := &Evaluator{db: db, tmpDir: tmp, files: opts.Files,
		targets: map[string]*targetCache{}, start: opts.Start, inter: interval}
	if opts.KeepSamples {
		e.log = newSampleLog()
	}
	e.engine = engineFor(interval)
	mopts := &rules.ManagerOptions{
		QueryFunc:   e.query,
		NotifyFunc:  func(context.Context, string, ...*rules.Alert) {},
		Context:     context.Background(),
		Appendable:  db,
		Queryable:   db,
		Logger:      log.NewNopLogger(),
		GroupLoader: ld,
		// The default walks each group's expressions, which are textExpr here.
		RuleDependencyController: noDependencies{},
	}
	mgr := rules.NewManager(mopts)
	groups, errs := mgr.LoadGroups(interval, labels.EmptyLabels(), "", nil, names...)
	if len(errs) > 0 {
		e.Close()
		return nil, errors.Join(errs...)
	}
	inFiles := make([]*rules.Group, 0, len(order))
	for _, key := range order {
		inFiles = append(inFiles, groups[key])
	}
	p := evalOrder(inFiles)
	e.parallel, e.names = p.parallel, p.reads
	// The run that writes a promtool test notes every alert firing at each transition, across
	// groups: that needs them all evaluated at each instant before the next.
	e.batched = p.batchable && !opts.KeepSamples && !opts.OneAtATime
	var annots [][]labels.Labels // by index in the files, see lazyAnnotations
	if e.batched {
		if inFiles, annots, err = lazyAnnotations(mopts, ld, interval, names, order, inFiles); err != nil {
			e.Close()
			return nil, err
		}
	}
	place := make([]int, len(inFiles)) // by index in the files, the index in e.groups
	for at, i := range p.order {
		place[i] = at
	}
	for _, i := range p.order {
		g := inFiles[i]
		for _, ar := range g.AlertingRules() {
			// A fresh Prometheus has no earlier state to restore: its alerts write ALERTS
			// from the first evaluation.
			ar.SetRestored(true)
		}
		first := opts.Start
		if !opts.EvalFrom.IsZero() && opts.EvalFrom.Before(first) {
			first = opts.EvalFrom
		}
		sg := &schedGroup{g: g, next: first, alerts: map[string]alertSeen{}, lastErr: map[int]string{}, recorded: map[int]bool{}}
		if annots != nil {
			sg.annots = annots[i]
		}
		for w := range p.after[i] {
			sg.after = append(sg.after, place[w])
		}
		sort.Ints(sg.after)
		e.groups = append(e.groups, sg)
	}
	return e, nil
}

// Selects says whether a selector of the rules may select a series of this name. The
// scrape stores only those: a series no rule can select changes no rule's result (nor an
// emitted promtool test's), and storing every series was most of an evaluated run's cost.
// Safe for concurrent use.
func (e *Evaluator) Selects(name string) bool {
	if e.names == nil {
		return true
	}
	e.selectsMu.Lock()
	defer e.selectsMu.Unlock()
	if v, ok := e.selects[name]; ok {
		return v
	}
	v := mayRead(e.names, name)
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

// Interval is the evaluation interval of the groups that set none.
func (e *Evaluator) Interval() time.Duration { return e.inter }

// Files are the rule files, as given.
func (e *Evaluator) Files() []File { return e.files }

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

// Batched says whether EvalBefore evaluates each rule once over all the instants it is asked
// for (see batch): a caller that can wait should ask for many at once.
func (e *Evaluator) Batched() bool { return e.batched }

// EvalBefore evaluates every group at each of its instants before limit, in time order
// (groups due at the same instant producers first, then in the order of the files), and
// returns the alerts' transitions and the rules whose evaluation failed.
func (e *Evaluator) EvalBefore(ctx context.Context, limit time.Time) ([]Transition, []RuleError) {
	var trans []Transition
	var errs []RuleError
	if e.batched {
		trans, errs = e.evalBatched(ctx, limit)
	} else {
		trans, errs = e.evalEach(ctx, limit)
	}
	if e.failed == nil && len(errs) > 0 {
		e.failed = &errs[0]
	}
	return trans, errs
}

// evalEach evaluates the groups one instant at a time.
func (e *Evaluator) evalEach(ctx context.Context, limit time.Time) ([]Transition, []RuleError) {
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
			now = append(now, g.transitions(ctx, t, nil)...)
			errs = append(errs, g.ruleErrors(t)...)
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
		all := map[string]alertSeen{}
		for _, g := range e.groups {
			for k, a := range g.alerts {
				all[k] = a
			}
		}
		for _, k := range sortedKeys(all) {
			if a := all[k]; a.state == Firing && a.labels.Get(labels.AlertName) == tr.Alert {
				c.firing = append(c.firing, a)
			}
		}
		e.checks = append(e.checks, c)
	}
}

// transitions compares the group's active alerts with those of its last evaluation.
// b is the batch the group was evaluated from at t, nil when it was not.
func (sg *schedGroup) transitions(ctx context.Context, t time.Time, b *batch) []Transition {
	g := sg.g
	var out []Transition
	m := matches{}
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
			k := prefix + a.Labels.String()
			seen := alertSeen{state: st, labels: a.Labels, annots: a.Annotations}
			if sg.annots != nil {
				// An active alert is in its rule's result exactly when it is not kept
				// firing (Eval clears KeepFiringSince then, and drops or resolves the
				// others), and the rule's evaluation did not fail (Eval then returns
				// before it changes any alert).
				if a.KeepFiringSince.IsZero() && ar.LastError() == nil && b != nil {
					seen.in, seen.inAt = b.returned[ar.Query().String()], t
				} else {
					seen.in, seen.inAt = sg.alerts[k].in, sg.alerts[k].inAt
				}
			}
			now[k] = seen
		}
		for _, k := range sortedKeys(now) {
			if prev, ok := sg.alerts[k]; !ok || prev.state != now[k].state {
				a := now[k]
				out = append(out, Transition{At: t, Alert: ar.Name(), State: a.state, Labels: a.labels, Annotations: sg.annotations(ctx, m, i, ar, a)})
			}
		}
		for _, k := range sortedKeys(sg.alerts) {
			if len(k) < len(prefix) || k[:len(prefix)] != prefix {
				continue
			}
			if _, ok := now[k]; !ok {
				a := sg.alerts[k]
				out = append(out, Transition{At: t, Alert: ar.Name(), State: Resolved, Labels: a.labels, Annotations: sg.annotations(ctx, m, i, ar, a)})
				delete(sg.alerts, k)
			}
		}
		for k, a := range now {
			sg.alerts[k] = a
		}
	}
	return out
}

// ruleErrors reports each rule whose last evaluation failed with an error it did not have
// at the evaluation before.
func (sg *schedGroup) ruleErrors(t time.Time) []RuleError {
	g := sg.g
	var out []RuleError
	for i, r := range g.Rules() {
		msg := ""
		if err := r.LastError(); err != nil {
			msg = err.Error()
		}
		if msg != sg.lastErr[i] && msg != "" {
			out = append(out, RuleError{At: t, Rule: r.Name(), Err: fmt.Errorf("%s: group %q: %w", g.File(), g.Name(), r.LastError())})
		}
		sg.lastErr[i] = msg
	}
	return out
}

// loader is rules.GroupLoader over the files' contents. It parses each file once: New asks
// for the groups' order, then LoadGroups for the groups.
type loader struct {
	files  map[string][]byte
	parsed map[string]*rulefmt.RuleGroups
	// noAnnotations loads the alerting rules without their annotations (see lazyAnnotations).
	noAnnotations bool
}

func (l loader) Load(name string) (*rulefmt.RuleGroups, []error) {
	if rgs, ok := l.parsed[name]; ok {
		return rgs, nil
	}
	rgs, errs := parsed.ruleFile(l.files[name])
	for i, err := range errs {
		errs[i] = fmt.Errorf("rule file %s: %w", name, err)
	}
	if len(errs) == 0 {
		if l.noAnnotations {
			rgs = withoutAnnotations(rgs)
		}
		l.parsed[name] = rgs
	}
	return rgs, errs
}

// engines are the process's PromQL engines, by the evaluation interval (their only option
// that is not a constant): an engine is safe for concurrent queries over any storage, and
// making one (its metrics' summaries) was a tenth of New's time.
var engines sync.Map

func engineFor(interval time.Duration) *promql.Engine {
	if ng, ok := engines.Load(interval); ok {
		return ng.(*promql.Engine)
	}
	ng, _ := engines.LoadOrStore(interval, promql.NewEngine(promql.EngineOpts{
		MaxSamples:               50000000,
		Timeout:                  2 * time.Minute,
		LookbackDelta:            5 * time.Minute,
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		NoStepSubqueryIntervalFn: func(int64) int64 { return interval.Milliseconds() },
	}))
	return ng.(*promql.Engine)
}

// parsed keeps the rule files and expressions this process parsed, by content: a process
// that runs many scenarios with the same rules (make test, a program using pkg/simulate)
// parses them once, not at every run (parsing and validating them was as long as a short
// run). Both are only read once parsed: each run makes its own rules from them.
var parsed = &parseCache{files: map[string]*rulefmt.RuleGroups{}, exprs: map[string]*textExpr{}, objects: map[string][]byte{}}

// maxParsed bounds each of the caches (a long-lived process fed ever-new rules).
const maxParsed = 1024

type parseCache struct {
	mu    sync.Mutex
	files map[string]*rulefmt.RuleGroups // by the file's content
	exprs map[string]*textExpr           // by the expression's text as written
	// objects are the rule groups of PrometheusRule objects (groupsOf), by the object's
	// content: decoding the object was half of New's time.
	objects map[string][]byte
}

// object returns the rule file of a PrometheusRule object's content, decoding it with
// decode the first time.
func (c *parseCache) object(data []byte, decode func() ([]byte, error)) ([]byte, error) {
	return cached(c, c.objects, string(data), decode)
}

// cached returns m's value for key, made by mk the first time (a failure is not kept).
func cached[T any](c *parseCache, m map[string]T, key string, mk func() (T, error)) (T, error) {
	c.mu.Lock()
	v, ok := m[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := mk()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if len(m) >= maxParsed {
		clear(m)
	}
	m[key] = v
	c.mu.Unlock()
	return v, nil
}

func (c *parseCache) ruleFile(data []byte) (*rulefmt.RuleGroups, []error) {
	c.mu.Lock()
	rgs, ok := c.files[string(data)]
	c.mu.Unlock()
	if ok {
		return rgs, nil
	}
	rgs, errs := rulefmt.Parse(data)
	if len(errs) == 0 {
		c.mu.Lock()
		if len(c.files) >= maxParsed {
			clear(c.files)
		}
		c.files[string(data)] = rgs
		c.mu.Unlock()
	}
	return rgs, errs
}

func (c *parseCache) expr(query string) (*textExpr, error) {
	return cached(c, c.exprs, query, func() (*textExpr, error) {
		expr, err := parser.ParseExpr(query)
		if err != nil {
			return nil, err
		}
		return &textExpr{Expr: expr, text: expr.String()}, nil
	})
}

// Parse parses a rule's expression. The rules package writes the expression out as text at
// every evaluation of the rule, three times (the query it asks, the query's origin, the
// alerts it sends), which was a fifth of an evaluated run's time: the text is kept.
func (loader) Parse(query string) (parser.Expr, error) {
	e, err := parsed.expr(query)
	if err != nil {
		return nil, err
	}
	return e, nil // not a nil *textExpr in a non-nil interface
}

// textExpr is a parsed expression that keeps its text. The engine never sees it (the rules
// ask their queries as text); what walks a rule's expression unwraps it (exprOf).
type textExpr struct {
	parser.Expr
	text string
}

func (e *textExpr) String() string { return e.text }

// exprOf is a rule's expression as the parser returned it.
func exprOf(r rules.Rule) parser.Expr {
	if t, ok := r.Query().(*textExpr); ok {
		return t.Expr
	}
	return r.Query()
}

// noDependencies is the rules' RuleDependencyController: what it finds only serves the
// concurrent evaluation of a group's rules, which is off, and it walks expressions that are
// textExpr.
type noDependencies struct{}

func (noDependencies) AnalyseRules([]rules.Rule) {}

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
	if !bytes.Contains(f.Data, []byte("PrometheusRule")) {
		return f.Data, nil // no object's kind: decoding the file to learn that costs as much as parsing its rules
	}
	return parsed.object(f.Data, func() ([]byte, error) { return objectGroups(f) })
}

// objectGroups decodes groupsOf's file.
func objectGroups(f File) ([]byte, error) {
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
