package promrules

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
)

// A target's scrapes mostly repeat its series. As Prometheus' scrape loop does (its
// scrapeCache), the evaluator keeps, per target, each series it stored by the text that
// identifies it in the scrape, with its labels and its reference in the storage: a series
// seen before is appended by reference, without building its labels, sorting or hashing
// them again (that was most of storing a scrape).

// targetCache is what the evaluator remembers of a target's scrapes.
type targetCache struct {
	series map[string]*cachedSeries // by key (see Scrape)
	last   []*cachedSeries          // the last scrape's series: those missing from the next go stale
	scrape uint64                   // the number of scrapes stored
	key    []byte                   // reused to build keys
}

type cachedSeries struct {
	lset   labels.Labels
	ref    storage.SeriesRef
	scrape uint64 // the last scrape it was in
}

func (e *Evaluator) target(name string) *targetCache {
	tc := e.targets[name]
	if tc == nil {
		tc = &targetCache{series: map[string]*cachedSeries{}}
		e.targets[name] = tc
	}
	return tc
}

// get returns the cached series of this key, nil on a miss (then add it).
func (tc *targetCache) get(key []byte) *cachedSeries { return tc.series[string(key)] }

// add caches a series seen for the first time.
func (tc *targetCache) add(key []byte, lset labels.Labels) *cachedSeries {
	c := &cachedSeries{lset: lset}
	tc.series[string(key)] = c
	return c
}

// Scrape stores what a Prometheus scraping target would store at each instant of at, the
// target serving these families: FromFamilies' samples, the rules' Selects only, and a
// staleness marker at the first instant for every series of the target's last scrape that
// is gone.
func (e *Evaluator) Scrape(target labels.Labels, at []time.Time, mfs []*dto.MetricFamily) error {
	tc := e.target(target.String())
	tc.scrape++
	var cur []*cachedSeries
	var vals []float64
	b := labels.NewScratchBuilder(0)
	eachSeries(mfs, target, e.Selects, func(m *dto.Metric, metric, le, quantile string, v float64) {
		// The key is what tells the series apart in the exposition: its name, its labels
		// (empty ones included: they are dropped alike) and le or quantile.
		k := append(tc.key[:0], metric...)
		for _, l := range m.Label {
			k = append(k, 0xff)
			k = append(k, l.GetName()...)
			k = append(k, 0xfe)
			k = append(k, l.GetValue()...)
		}
		k = append(k, 0xff, 'l')
		k = append(k, le...)
		k = append(k, 0xff, 'q')
		k = append(k, quantile...)
		tc.key = k
		c := tc.get(k)
		if c == nil {
			c = tc.add(k, seriesLabels(&b, m, target, metric, le, quantile))
		}
		cur = append(cur, c)
		vals = append(vals, v)
	})
	return e.store(tc, at, cur, vals)
}

// Append stores the samples a target served at t, and a staleness marker for each series of
// its last scrape that is not among them.
func (e *Evaluator) Append(target string, t time.Time, samples []Sample) error {
	tc := e.target(target)
	tc.scrape++
	cur := make([]*cachedSeries, len(samples))
	vals := make([]float64, len(samples))
	for i, s := range samples {
		tc.key = s.Labels.Bytes(tc.key[:0])
		if cur[i] = tc.get(tc.key); cur[i] == nil {
			cur[i] = tc.add(tc.key, s.Labels)
		}
		vals[i] = s.Value
	}
	return e.store(tc, []time.Time{t}, cur, vals)
}

// store appends a scrape's series at each instant of at, and the staleness markers at the
// first.
func (e *Evaluator) store(tc *targetCache, at []time.Time, cur []*cachedSeries, vals []float64) error {
	for _, c := range cur {
		c.scrape = tc.scrape
	}
	var gone []*cachedSeries
	for _, c := range tc.last {
		if c.scrape != tc.scrape {
			gone = append(gone, c)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return labels.Compare(gone[i].lset, gone[j].lset) < 0 })
	stale := math.Float64frombits(value.StaleNaN)
	for n, t := range at {
		app := e.db.Appender(context.Background())
		ms := t.UnixMilli()
		for i, c := range cur {
			ref, err := app.Append(c.ref, c.lset, ms, vals[i])
			if err != nil {
				_ = app.Rollback()
				return fmt.Errorf("append %s at %s: %w", c.lset, t.UTC().Format(time.RFC3339), err)
			}
			c.ref = ref
			if e.log != nil {
				e.log.add(c.lset, ms, vals[i])
			}
		}
		if n == 0 {
			for _, c := range gone {
				ref, err := app.Append(c.ref, c.lset, ms, stale)
				if err != nil {
					_ = app.Rollback()
					return fmt.Errorf("append a staleness marker for %s: %w", c.lset, err)
				}
				c.ref = ref
				if e.log != nil {
					e.log.add(c.lset, ms, stale)
				}
			}
		}
		if err := app.Commit(); err != nil {
			return err
		}
	}
	tc.last = cur
	// Forget the series gone from the target, once they are as many as those it serves.
	if len(tc.series) > 2*len(cur)+64 {
		for k, c := range tc.series {
			if c.scrape != tc.scrape {
				delete(tc.series, k)
			}
		}
	}
	return nil
}
