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
func FromFamilies(mfs []*dto.MetricFamily, target labels.Labels) []Sample {
	var out []Sample
	for _, mf := range mfs {
		name := mf.GetName()
		for _, m := range mf.Metric {
			b := labels.NewScratchBuilder(len(m.Label) + target.Len() + 2)
			series := func(metric string, extra ...string) labels.Labels {
				b.Reset()
				b.Add(labels.MetricName, metric)
				for _, l := range m.Label {
					// A label with an empty value is no label: a scrape drops it.
					if l.GetValue() != "" && !target.Has(l.GetName()) {
						b.Add(l.GetName(), l.GetValue())
					}
				}
				target.Range(func(l labels.Label) { b.Add(l.Name, l.Value) })
				for i := 0; i+1 < len(extra); i += 2 {
					b.Add(extra[i], extra[i+1])
				}
				b.Sort()
				return b.Labels()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, Sample{series(name), m.GetCounter().GetValue()})
			case dto.MetricType_GAUGE:
				out = append(out, Sample{series(name), m.GetGauge().GetValue()})
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				inf := false
				for _, bk := range h.GetBucket() {
					ub := bk.GetUpperBound()
					inf = inf || math.IsInf(ub, +1)
					out = append(out, Sample{series(name+"_bucket", "le", formatFloat(ub)), float64(bk.GetCumulativeCount())})
				}
				if !inf {
					out = append(out, Sample{series(name+"_bucket", "le", "+Inf"), float64(h.GetSampleCount())})
				}
				out = append(out, Sample{series(name + "_sum"), h.GetSampleSum()})
				out = append(out, Sample{series(name + "_count"), float64(h.GetSampleCount())})
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					out = append(out, Sample{series(name, "quantile", formatFloat(q.GetQuantile())), q.GetValue()})
				}
				out = append(out, Sample{series(name + "_sum"), s.GetSampleSum()})
				out = append(out, Sample{series(name + "_count"), float64(s.GetSampleCount())})
			default:
				out = append(out, Sample{series(name), m.GetUntyped().GetValue()})
			}
		}
	}
	return out
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

func sortedHashes(m map[uint64]labels.Labels) []uint64 {
	out := make([]uint64, 0, len(m))
	for h := range m {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return labels.Compare(m[out[i]], m[out[j]]) < 0 })
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
