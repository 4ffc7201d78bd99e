package promrules

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
)

// A run's rules are evaluated after its series are stored, so a group's instants can be
// evaluated together: each rule's expression once over all of them, as a range query
// (Prometheus computes a range query as the instant queries at its steps, and its API and
// promtool rely on that), and the rules package's own Group.Eval at each instant then reads
// its step. The rules package still does everything a rule does at an evaluation (for,
// keep_firing_for, label templates, ALERTS, recorded series, staleness markers); only the
// query it asks is answered from the range, and annotations are expanded when a transition
// shows them (annotations.go). Parsing each query and selecting its series at every
// instant was most of an evaluated run's time.
//
// That is exact when no rule reads what its own group, or a group evaluated after it,
// writes at the same instant: the groups are put in that order (producers first), and an
// evaluator whose rules cannot be (a group reading its own records, a cycle, a template
// that queries, an @ modifier or a negative offset, which read outside the instant) keeps
// evaluating one instant at a time.

// batch answers the queries of one group's rules over several of its instants.
type batch struct {
	step  time.Duration
	steps map[string]*rangeResult // by the query's text
	// returned is, by the query's text, what query last returned from this batch.
	returned map[string]promql.Vector
}

// rangeResult is one expression evaluated at every step from start.
type rangeResult struct {
	start time.Time
	steps []promql.Vector // by step; nil when the range query failed
}

// batchKey is the context key of the batch a group's evaluation reads from.
type batchKey struct{}

// query is the rules' QueryFunc: a step of the batch the group is evaluated in, or an
// instant query.
func (e *Evaluator) query(ctx context.Context, qs string, t time.Time) (promql.Vector, error) {
	b, _ := ctx.Value(batchKey{}).(*batch)
	if b == nil {
		return e.instant(ctx, qs, t)
	}
	var v promql.Vector
	var err error
	if r := b.steps[qs]; r != nil && r.steps != nil {
		if off := t.Sub(r.start); off >= 0 && off%b.step == 0 && int(off/b.step) < len(r.steps) {
			// The rule rewrites the samples' labels in place: give it its own copy.
			v = append(promql.Vector{}, r.steps[off/b.step]...)
		}
	}
	if v == nil {
		if v, err = e.instant(ctx, qs, t); err != nil {
			return nil, err
		}
	}
	b.returned[qs] = v
	return v, nil
}

// instant is rules.EngineQueryFunc: one instant query.
func (e *Evaluator) instant(ctx context.Context, qs string, t time.Time) (promql.Vector, error) {
	q, err := e.engine.NewInstantQuery(ctx, e.db, nil, qs, t)
	if err != nil {
		return nil, err
	}
	res := q.Exec(ctx)
	defer q.Close()
	if res.Err != nil {
		return nil, res.Err
	}
	switch v := res.Value.(type) {
	case promql.Vector:
		return v, nil
	case promql.Scalar:
		return promql.Vector{promql.Sample{T: v.T, F: v.V, Metric: labels.Labels{}}}, nil
	}
	return nil, errors.New("rule result is not a vector or scalar")
}

// rangeQuery evaluates qs at every step from start to end. When it fails (an error at any
// one step fails it all), the steps are asked one at a time, and each gets its own error.
func (e *Evaluator) rangeQuery(ctx context.Context, qs string, start, end time.Time, step time.Duration) *rangeResult {
	out := &rangeResult{start: start}
	q, err := e.engine.NewRangeQuery(ctx, e.db, nil, qs, start, end, step)
	if err != nil {
		return out
	}
	defer q.Close()
	res := q.Exec(ctx)
	m, ok := res.Value.(promql.Matrix)
	if res.Err != nil || !ok {
		return out
	}
	n := int(end.Sub(start)/step) + 1
	out.steps = make([]promql.Vector, n)
	from := start.UnixMilli()
	for _, s := range m {
		if len(s.Histograms) > 0 {
			// Native histograms are not scraped here; were one to appear, this conversion
			// (floats only) would lose it: its rule asks instant queries instead.
			out.steps = nil
			return out
		}
		for _, p := range s.Floats {
			k := int((p.T - from) / step.Milliseconds())
			out.steps[k] = append(out.steps[k], promql.Sample{T: p.T, F: p.F, Metric: s.Metric})
		}
	}
	return out
}

// evalBatched evaluates every group at each of its instants before limit, a group at a time
// (see batch), and returns what EvalBefore returns, in the same order: by instant, then
// by group. Groups that do not read each other's series are evaluated at once, when the
// series they write cannot make that show (plan.parallel).
func (e *Evaluator) evalBatched(ctx context.Context, limit time.Time) ([]Transition, []RuleError) {
	found := make([][]evaluated, len(e.groups))
	if !e.parallel {
		for i, g := range e.groups {
			found[i] = e.evalGroup(ctx, g, limit)
		}
	} else {
		done := make([]chan struct{}, len(e.groups))
		for i := range done {
			done[i] = make(chan struct{})
		}
		var wg sync.WaitGroup
		for i, g := range e.groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(done[i])
				for _, p := range g.after {
					<-done[p]
				}
				found[i] = e.evalGroup(ctx, g, limit)
			}()
		}
		wg.Wait()
	}
	var all []evaluated
	for _, f := range found {
		all = append(all, f...)
	}
	// Taken in the groups' order, so a stable sort by instant is the order of evalEach's.
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	var trans []Transition
	var errs []RuleError
	for _, f := range all {
		trans = append(trans, f.trans...)
		errs = append(errs, f.errs...)
	}
	return trans, errs
}

// evaluated is what a group's evaluation at an instant found.
type evaluated struct {
	at    time.Time
	trans []Transition
	errs  []RuleError
}

// evalGroup evaluates a group at each of its instants before limit, its rules' queries
// answered from one range query each.
//
// An instant at which every rule's query is empty, no alert of the group is active, no
// rule failed at its last evaluation and no recorded series needs a staleness marker is
// not evaluated: Group.Eval would change nothing there that anything reads (no alert, no
// sample, no error), and it was most of a run's rule evaluation (most alerts are
// inactive most of the time). The range queries prove the emptiness; a group whose range
// query failed is evaluated at every instant.
func (e *Evaluator) evalGroup(ctx context.Context, g *schedGroup, limit time.Time) []evaluated {
	if !g.next.Before(limit) {
		return nil
	}
	last := g.next
	for t := g.next; t.Before(limit); t = t.Add(g.g.Interval()) {
		last = t
	}
	b := &batch{step: g.g.Interval(), steps: map[string]*rangeResult{}, returned: map[string]promql.Vector{}}
	queries := make([]*rangeResult, len(g.g.Rules()))
	for i, r := range g.g.Rules() {
		qs := r.Query().String()
		if b.steps[qs] == nil {
			b.steps[qs] = e.rangeQuery(ctx, qs, g.next.Add(-g.g.QueryOffset()), last.Add(-g.g.QueryOffset()), b.step)
		}
		queries[i] = b.steps[qs]
	}
	ctx = context.WithValue(ctx, batchKey{}, b)
	var out []evaluated
	for k := 0; g.next.Before(limit); k, g.next = k+1, g.next.Add(g.g.Interval()) {
		if g.idle(queries, k) {
			continue
		}
		g.g.Eval(ctx, g.next)
		for i, r := range g.g.Rules() {
			if _, ok := r.(*rules.RecordingRule); ok {
				g.recorded[i] = queries[i].steps == nil || len(queries[i].steps[k]) > 0
			}
		}
		out = append(out, evaluated{g.next, g.transitions(ctx, g.next, b), g.ruleErrors(g.next)})
	}
	return out
}

// idle says whether evaluating the group at step k of its queries would change nothing (see
// evalGroup).
func (g *schedGroup) idle(queries []*rangeResult, k int) bool {
	for i, r := range g.g.Rules() {
		q := queries[i]
		if q.steps == nil || k >= len(q.steps) || len(q.steps[k]) > 0 || r.LastError() != nil || g.recorded[i] {
			return false
		}
		if ar, ok := r.(*rules.AlertingRule); ok && len(ar.ActiveAlerts()) > 0 {
			return false
		}
	}
	return true
}

// ruleIO is what a rule reads and writes, by metric name.
type ruleIO struct {
	group  int
	reads  [][]*labels.Matcher // a selector's __name__ matchers (none: any name)
	writes []string
	// unbatchable: the rule reads outside its instant (@, a negative offset) or queries
	// from a template.
	unbatchable bool
}

func (io ruleIO) mayRead(name string) bool { return mayRead(io.reads, name) }

// mayRead says whether one of the selectors (their __name__ matchers) may select a series of
// this name.
func mayRead(selectors [][]*labels.Matcher, name string) bool {
	for _, ms := range selectors {
		match := true
		for _, m := range ms {
			match = match && m.Matches(name)
		}
		if match {
			return true
		}
	}
	return false
}

// plan is how the groups are evaluated: in order (indexes into the groups as the files
// give them), each after the groups whose series it reads (after).
type plan struct {
	order []int
	after []map[int]bool
	// batchable: no rule reads what its own group writes at the same instant (nor a cycle
	// of groups, nor an instant other than its own): a group at a time gives the same
	// results (see batch).
	batchable bool
	// parallel: groups that do not read each other's series may be evaluated at once: no
	// name a rule may read is written by two groups (whose series would be created in
	// either order).
	parallel bool
	// reads are the __name__ matchers of every selector of the rules; nil when a selector
	// has none (it may read any series).
	reads [][]*labels.Matcher
}

// evalOrder orders the groups (given in file order) so that a group whose rules write
// series another group's rules read comes before it, and otherwise keeps the file order.
// Prometheus runs its groups concurrently, so no order between groups is Prometheus';
// producers first is the order within a group, and makes a group read what the others
// wrote at the same instant.
func evalOrder(groups []*rules.Group) plan {
	var ios []ruleIO
	for gi, g := range groups {
		for _, r := range g.Rules() {
			ios = append(ios, inspectRule(gi, r))
		}
	}
	p := plan{after: make([]map[int]bool, len(groups)), batchable: true, parallel: true}
	anyName := false
	for _, io := range ios {
		for _, ms := range io.reads {
			anyName = anyName || len(ms) == 0
			p.reads = append(p.reads, ms)
		}
	}
	if anyName {
		p.reads = nil
	}
	for i := range p.after {
		p.after[i] = map[int]bool{}
	}
	writers := map[string]map[int]bool{} // the groups writing a name some rule may read
	for _, reader := range ios {
		p.batchable = p.batchable && !reader.unbatchable
		for _, writer := range ios {
			for _, name := range writer.writes {
				if !reader.mayRead(name) {
					continue
				}
				if writers[name] == nil {
					writers[name] = map[int]bool{}
				}
				writers[name][writer.group] = true
				if writer.group == reader.group {
					p.batchable = false // its own records at the same instant: one at a time
				} else {
					p.after[reader.group][writer.group] = true
				}
			}
		}
	}
	for _, gs := range writers {
		p.parallel = p.parallel && len(gs) < 2
	}
	// Kahn's algorithm, taking the first group in file order whose producers are placed.
	placed := make([]bool, len(groups))
	for len(p.order) < len(groups) {
		next := -1
		for i := range groups {
			if placed[i] {
				continue
			}
			ready := true
			for w := range p.after[i] {
				ready = ready && placed[w]
			}
			if ready {
				next = i
				break
			}
		}
		if next < 0 {
			// A cycle: no order puts producers first; keep the files' and go one instant at
			// a time.
			p.order = p.order[:0]
			for i := range groups {
				p.order = append(p.order, i)
			}
			p.batchable = false
			return p
		}
		placed[next] = true
		p.order = append(p.order, next)
	}
	return p
}

// inspectRule returns what a rule reads and writes.
func inspectRule(group int, r rules.Rule) ruleIO {
	io := ruleIO{group: group}
	switch r := r.(type) {
	case *rules.RecordingRule:
		io.writes = []string{r.Name()}
	case *rules.AlertingRule:
		io.writes = []string{"ALERTS", "ALERTS_FOR_STATE"}
		for _, ls := range []labels.Labels{r.Labels(), r.Annotations()} {
			ls.Range(func(l labels.Label) {
				io.unbatchable = io.unbatchable || strings.Contains(l.Value, "query")
			})
		}
	}
	parser.Inspect(exprOf(r), func(n parser.Node, _ []parser.Node) error {
		var vs *parser.VectorSelector
		switch n := n.(type) {
		case *parser.VectorSelector:
			vs = n
		case *parser.SubqueryExpr:
			io.unbatchable = io.unbatchable || n.Timestamp != nil || n.StartOrEnd != 0 || n.OriginalOffset < 0
		}
		if vs == nil {
			return nil
		}
		io.unbatchable = io.unbatchable || vs.Timestamp != nil || vs.StartOrEnd != 0 || vs.OriginalOffset < 0
		var ms []*labels.Matcher
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName {
				ms = append(ms, m)
			}
		}
		io.reads = append(io.reads, ms)
		return nil
	})
	return io
}
