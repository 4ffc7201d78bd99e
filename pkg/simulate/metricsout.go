package simulate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/minikubelet/minikubelet/pkg/config"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/promrules"
)

// DefaultScrapeInterval is how often --metrics-out samples the series: Prometheus' default
// scrape interval.
const DefaultScrapeInterval = 15 * time.Second

// MinScrapeInterval bounds the sampling rate (and so the file's size).
const MinScrapeInterval = time.Second

// MetricsOptions ask Run to sample every metric series each virtual scrape interval and
// write them as OpenMetrics with timestamps (for `promtool tsdb create-blocks-from
// openmetrics`).
type MetricsOptions struct {
	Out      io.Writer
	Interval time.Duration // DefaultScrapeInterval when 0
}

// target is one scrape target of the shipped configs/prometheus/prometheus.yml: the labels a
// live Prometheus gives the series of one endpoint of the daemon.
type target struct {
	labels  []*dto.LabelPair // sorted by name
	regs    func() []*metrics.Registry
	plabels labels.Labels // the same, for the rules' storage
}

// recorder accumulates the samples, grouped per family and per series as OpenMetrics asks
// (a family's lines together, a series' samples together and in time order); it writes them
// at the end.
//
// It is also the scrape loop of the rules evaluated in the run (--rules): each scrape is
// appended to their storage, and the rules are evaluated at their instants.
type recorder struct {
	interval time.Duration
	next     time.Time // the next scrape instant
	targets  []target
	families map[string]*familySamples // nil unless the OpenMetrics file is written
	buf      bytes.Buffer

	rules *promrules.Evaluator // nil unless rules are evaluated
	// onRules receives what an evaluation found: the alerts' transitions and the rules
	// whose evaluation failed, and where their timeline lines go (at that line; -1: after
	// the last).
	// It returns how many lines it put there.
	onRules func(trans []promrules.Transition, errs []promrules.RuleError, line int) int
	// lines is how many timeline lines there are now.
	lines func() int
	// deferred are the evaluations asked for and not yet made, when the evaluator makes
	// many instants at once better than one at a time (promrules.Evaluator.Batched).
	deferred []evalMark
	// subsets are the registries' collectors the rules read (when no OpenMetrics file wants
	// every family), by registry, as of a registration generation.
	subsets map[*metrics.Registry]subset
	// bg stores the scrapes and makes the deferred evaluations while the run goes on (see
	// evaluator), when the rules are evaluated in batches and no OpenMetrics file is written.
	bg *evaluator
}

// close stops the evaluator, if one runs: before the rules' storage is closed.
func (r *recorder) close() {
	if r != nil && r.bg != nil {
		r.bg.stop()
		r.bg = nil
	}
}

type subset struct {
	gen uint64
	reg *metrics.Subset
}

// evalMark is an evaluation deferred: the instants before limit, whose lines go where the
// timeline stood when it was asked for (where they would have gone at once).
type evalMark struct {
	limit time.Time
	line  int
}

type familySamples struct {
	header string                   // the # HELP / # TYPE lines
	series map[string]*bytes.Buffer // by label signature
}

// newRecorder samples the simulation's targets every interval (DefaultScrapeInterval when
// 0); writeOM keeps the samples for the OpenMetrics file.
func newRecorder(s *simulation, interval time.Duration, writeOM bool) (*recorder, error) {
	if interval == 0 {
		interval = DefaultScrapeInterval
	}
	if interval < MinScrapeInterval {
		return nil, &InvalidError{Err: fmt.Errorf("flag --scrape-interval: %v is below the %v minimum", interval, MinScrapeInterval)}
	}
	kc := s.cfg.Kubelet
	port := kc.ReadOnlyPort
	if port == 0 {
		port = config.DefaultReadOnlyPort
	}
	instance := net.JoinHostPort(kc.Address, strconv.Itoa(int(port)))
	pair := func(kv ...string) []*dto.LabelPair {
		var out []*dto.LabelPair
		for i := 0; i < len(kv); i += 2 {
			out = append(out, &dto.LabelPair{Name: &kv[i], Value: &kv[i+1]})
		}
		return out
	}
	r := &recorder{interval: interval, next: s.epoch}
	if writeOM {
		r.families = map[string]*familySamples{}
	}
	r.targets = []target{{
		labels: pair("instance", instance, "job", "kubelet", "metrics_path", "/metrics"),
		regs:   func() []*metrics.Registry { return []*metrics.Registry{s.kReg, s.rtReg} },
	}, {
		labels: pair("instance", instance, "job", "kubelet", "metrics_path", "/metrics/cadvisor"),
		regs:   func() []*metrics.Registry { return []*metrics.Registry{s.k.CadvisorRegistry()} },
	}, {
		labels: pair("instance", instance, "job", "kubelet", "metrics_path", "/metrics/probes"),
		regs:   func() []*metrics.Registry { return []*metrics.Registry{s.k.ProbeRegistry()} },
	}}
	if s.k.StateRegistry() != nil {
		r.targets = append(r.targets, target{
			labels: pair("instance", instance, "job", "kube-state-metrics"),
			regs:   func() []*metrics.Registry { return []*metrics.Registry{s.k.StateRegistry()} },
		})
	}
	for i := range r.targets {
		b := labels.NewBuilder(labels.EmptyLabels())
		for _, l := range r.targets[i].labels {
			b.Set(l.GetName(), l.GetValue())
		}
		r.targets[i].plabels = b.Labels()
	}
	return r, nil
}

// scrape samples, with the state as it is now, every scrape instant in [now, limit): nothing
// changes the state before limit, so one gather serves them all. A stopped kubelet is a
// target that is down: only `up` 0.
func (r *recorder) scrape(now, limit time.Time, running bool) error {
	var at []time.Time
	for r.next.Before(limit) {
		if !r.next.Before(now) {
			at = append(at, r.next)
		}
		r.next = r.next.Add(r.interval)
	}
	if len(at) == 0 {
		return nil
	}
	upType := dto.MetricType_GAUGE
	upName, upHelp := "up", "Whether the target was scraped (1) or not (0), as Prometheus records it."
	for _, t := range r.targets {
		up := 0.0
		var mfs []*dto.MetricFamily
		if running {
			// A target whose gather fails is down for that scrape, as for Prometheus.
			if got, err := r.gatherer(t).Gather(); err == nil {
				mfs, up = got, 1
			}
		}
		mfs = append(mfs, &dto.MetricFamily{Name: &upName, Help: &upHelp, Type: &upType,
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: &up}}}})
		if r.bg != nil {
			r.bg.push(work{target: t.plabels, at: at, mfs: mfs})
		} else if r.rules != nil {
			if err := store(r.rules, work{target: t.plabels, at: at, mfs: mfs}); err != nil {
				return err
			}
		}
		if r.families == nil {
			continue
		}
		for _, mf := range mfs {
			for _, m := range mf.Metric {
				m.Label = mergeLabels(m.Label, t.labels)
				for _, ts := range at {
					if err := r.add(mf, m, ts); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// gatherer gathers a target: every family when the OpenMetrics file is written, else the
// collectors of the families the rules can read.
func (r *recorder) gatherer(t target) prometheus.Gatherer {
	if r.families != nil || r.rules == nil {
		var gs prometheus.Gatherers
		for _, reg := range t.regs() {
			gs = append(gs, reg)
		}
		return gs
	}
	var gs metrics.Subsets
	for _, reg := range t.regs() {
		sub, ok := r.subsets[reg]
		if gen := reg.Generation(); !ok || sub.gen != gen {
			sub = subset{gen: gen, reg: reg.Subset(r.readsFamily)}
			if r.subsets == nil {
				r.subsets = map[*metrics.Registry]subset{}
			}
			r.subsets[reg] = sub
		}
		gs = append(gs, sub.reg)
	}
	return gs
}

// readsFamily says whether a rule may read a series of the family (histograms and
// summaries are stored as _bucket, _sum and _count too).
func (r *recorder) readsFamily(name string) bool {
	for _, n := range []string{name, name + "_bucket", name + "_sum", name + "_count"} {
		if r.rules.Selects(n) {
			return true
		}
	}
	return false
}

// evaluate runs the rules at their instants before limit: every scrape before limit is in
// their storage, and the state does not change before it.
func (r *recorder) evaluate(ctx context.Context, limit time.Time) {
	if r.rules == nil {
		return
	}
	if r.rules.Batched() {
		r.deferred = append(r.deferred, evalMark{limit: limit, line: r.lines()})
		if r.bg != nil {
			r.bg.push(work{limit: limit})
		}
		return
	}
	trans, errs := r.rules.EvalBefore(ctx, limit)
	if len(trans) > 0 || len(errs) > 0 {
		r.onRules(trans, errs, -1)
	}
}

// flush makes the deferred evaluations, all at once, and puts what each found where it
// would have gone had it been made when asked for: the output is the same either way.
func (r *recorder) flush(ctx context.Context) error {
	if r.rules == nil || len(r.deferred) == 0 {
		return nil
	}
	limit := r.deferred[0].limit
	for _, m := range r.deferred {
		if m.limit.After(limit) {
			limit = m.limit
		}
	}
	var trans []promrules.Transition
	var errs []promrules.RuleError
	if r.bg != nil {
		var err error
		trans, errs, err = r.bg.finish(ctx, limit)
		r.bg = nil
		if err != nil {
			return err
		}
	} else {
		trans, errs = r.rules.EvalBefore(ctx, limit)
	}
	inserted := 0
	for _, m := range r.deferred {
		n, k := 0, 0
		for n < len(trans) && trans[n].At.Before(m.limit) {
			n++
		}
		for k < len(errs) && errs[k].At.Before(m.limit) {
			k++
		}
		if n > 0 || k > 0 {
			inserted += r.onRules(trans[:n], errs[:k], m.line+inserted)
		}
		trans, errs = trans[n:], errs[k:]
	}
	r.deferred = nil
	return nil
}

// add encodes one series' sample at ts.
func (r *recorder) add(mf *dto.MetricFamily, m *dto.Metric, ts time.Time) error {
	ms := ts.UnixMilli()
	m.TimestampMs = &ms
	r.buf.Reset()
	one := &dto.MetricFamily{Name: mf.Name, Help: mf.Help, Type: mf.Type, Metric: []*dto.Metric{m}}
	if _, err := expfmt.MetricFamilyToOpenMetrics(&r.buf, one); err != nil {
		return fmt.Errorf("encode %s: %w", mf.GetName(), err)
	}
	out := r.buf.String()
	// The encoder writes the family's header then the series' lines.
	header, lines := out, ""
	if i := strings.Index(out, "\n"+mf.GetName()); i >= 0 {
		header, lines = out[:i+1], out[i+1:]
	} else {
		return errors.New("encode " + mf.GetName() + ": no sample line")
	}
	// `up` is written once per target; its header is the same for all.
	f := r.families[mf.GetName()]
	if f == nil {
		f = &familySamples{header: header, series: map[string]*bytes.Buffer{}}
		r.families[mf.GetName()] = f
	}
	key := labelKey(m.Label)
	b := f.series[key]
	if b == nil {
		b = &bytes.Buffer{}
		f.series[key] = b
	}
	b.WriteString(lines)
	return nil
}

// write writes the families in name order, each series' samples together, then # EOF.
func (r *recorder) write(w io.Writer) error {
	for _, n := range sortedKeys(r.families) {
		f := r.families[n]
		if _, err := io.WriteString(w, f.header); err != nil {
			return err
		}
		for _, k := range sortedKeys(f.series) {
			if _, err := f.series[k].WriteTo(w); err != nil {
				return err
			}
		}
	}
	_, err := io.WriteString(w, "# EOF\n")
	return err
}

// mergeLabels adds the target's labels to a series' (the target's win, as Prometheus does
// without honor_labels, which would rename the series' own to exported_*; the daemon's
// series never carry job, instance or metrics_path).
func mergeLabels(own, target []*dto.LabelPair) []*dto.LabelPair {
	out := make([]*dto.LabelPair, 0, len(own)+len(target))
	out = append(out, target...)
	for _, l := range own {
		clash := false
		for _, t := range target {
			clash = clash || t.GetName() == l.GetName()
		}
		if !clash {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

func labelKey(ls []*dto.LabelPair) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.GetName())
		b.WriteByte(0)
		b.WriteString(l.GetValue())
		b.WriteByte(0)
	}
	return b.String()
}
