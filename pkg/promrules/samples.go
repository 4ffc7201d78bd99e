package promrules

import (
	"math"
	"sort"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
)

// Sample is one series' value at a scrape.
type Sample struct {
	Labels labels.Labels // __name__ included
	Value  float64
}

// FromFamilies is what a Prometheus scrape of the text exposition of these families stores:
// a sample per counter, gauge and untyped series; _bucket (le, +Inf included), _sum and
// _count per histogram; the quantiles, _sum and _count per summary. target's labels are
// added to every series and win over a series' own (Prometheus without honor_labels would
// rename those to exported_*; the daemon's series never carry job, instance or
// metrics_path).
//
// keep, when not nil, says which series names to store (Evaluator.Selects): a series no
// rule can select changes no result, and storing it is most of a scrape's cost.
func FromFamilies(mfs []*dto.MetricFamily, target labels.Labels, keep func(name string) bool) []Sample {
	var out []Sample
	b := labels.NewScratchBuilder(0)
	eachSeries(mfs, target, keep, func(m *dto.Metric, metric string, le, quantile string, v float64) {
		out = append(out, Sample{seriesLabels(&b, m, target, metric, le, quantile), v})
	})
	return out
}

// eachSeries calls f for every series FromFamilies stores, in its order: the dto metric it
// comes from, its name, and its le or quantile label when it has one.
func eachSeries(mfs []*dto.MetricFamily, target labels.Labels, keep func(name string) bool,
	f func(m *dto.Metric, metric, le, quantile string, v float64)) {
	for _, mf := range mfs {
		name := mf.GetName()
		if keep != nil && !keepsFamily(mf, keep) {
			continue
		}
		for _, m := range mf.Metric {
			add := func(v float64, metric, le, quantile string) {
				if keep == nil || keep(metric) {
					f(m, metric, le, quantile, v)
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add(m.GetCounter().GetValue(), name, "", "")
			case dto.MetricType_GAUGE:
				add(m.GetGauge().GetValue(), name, "", "")
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				bucket := name + "_bucket"
				inf := false
				for _, bk := range h.GetBucket() {
					ub := bk.GetUpperBound()
					inf = inf || math.IsInf(ub, +1)
					add(float64(bk.GetCumulativeCount()), bucket, formatFloat(ub), "")
				}
				if !inf {
					add(float64(h.GetSampleCount()), bucket, "+Inf", "")
				}
				add(h.GetSampleSum(), name+"_sum", "", "")
				add(float64(h.GetSampleCount()), name+"_count", "", "")
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(q.GetValue(), name, "", formatFloat(q.GetQuantile()))
				}
				add(s.GetSampleSum(), name+"_sum", "", "")
				add(float64(s.GetSampleCount()), name+"_count", "", "")
			default:
				add(m.GetUntyped().GetValue(), name, "", "")
			}
		}
	}
}

// seriesLabels are the labels of a series eachSeries found: its name, the metric's labels
// (but empty ones and the target's), the target's, and le or quantile.
func seriesLabels(b *labels.ScratchBuilder, m *dto.Metric, target labels.Labels, metric, le, quantile string) labels.Labels {
	b.Reset()
	b.Add(labels.MetricName, metric)
	for _, l := range m.Label {
		// A label with an empty value is no label: a scrape drops it.
		if l.GetValue() != "" && !target.Has(l.GetName()) {
			b.Add(l.GetName(), l.GetValue())
		}
	}
	target.Range(func(l labels.Label) { b.Add(l.Name, l.Value) })
	if le != "" {
		b.Add("le", le)
	}
	if quantile != "" {
		b.Add("quantile", quantile)
	}
	b.Sort()
	return b.Labels()
}

// keepsFamily says whether keep wants any of the series names a family is stored as.
func keepsFamily(mf *dto.MetricFamily, keep func(string) bool) bool {
	name := mf.GetName()
	switch mf.GetType() {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		return keep(name+"_bucket") || keep(name+"_sum") || keep(name+"_count")
	case dto.MetricType_SUMMARY:
		return keep(name) || keep(name+"_sum") || keep(name+"_count")
	}
	return keep(name)
}

// formatFloat writes a float as the text exposition format does (le and quantile values).
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// sampleLog keeps every sample appended, by series, for the promtool test written after
// the run.
type sampleLog struct {
	series map[uint64]*seriesSamples
}

type seriesSamples struct {
	labels labels.Labels
	ts     []int64
	vs     []float64
}

func newSampleLog() *sampleLog { return &sampleLog{series: map[uint64]*seriesSamples{}} }

func (l *sampleLog) add(lset labels.Labels, ms int64, v float64) {
	h := lset.Hash()
	s := l.series[h]
	if s == nil {
		s = &seriesSamples{labels: lset}
		l.series[h] = s
	}
	s.ts = append(s.ts, ms)
	s.vs = append(s.vs, v)
}

// sorted returns the series in label order.
func (l *sampleLog) sorted() []*seriesSamples {
	out := make([]*seriesSamples, 0, len(l.series))
	for _, s := range l.series {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return labels.Compare(out[i].labels, out[j].labels) < 0 })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
