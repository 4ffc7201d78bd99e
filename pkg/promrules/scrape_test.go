package promrules

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
)

// TestScrapeAsAppend: storing scrapes through the target's cache (references, keys) stores
// what appending FromFamilies' samples does: series appearing, going stale, coming back,
// a scrape stored at several instants, a histogram and a summary, an empty label, and
// series no rule selects left out.
func TestScrapeAsAppend(t *testing.T) {
	const rules = "groups:\n- name: g\n  rules:\n  - record: r\n    expr: up + lat_seconds_bucket + q + pods\n"
	scrapes := []string{
		"# TYPE up gauge\nup 1\n# TYPE pods gauge\npods{phase=\"Running\"} 2\npods{phase=\"Pending\"} 1\n# TYPE other gauge\nother 1\n",
		"# TYPE up gauge\nup 1\n# TYPE pods gauge\npods{phase=\"Running\"} 3\n# TYPE lat_seconds histogram\nlat_seconds_bucket{le=\"1\"} 1\nlat_seconds_bucket{le=\"+Inf\"} 2\nlat_seconds_sum 3\nlat_seconds_count 2\n",
		"# TYPE up gauge\nup 0\n# TYPE q summary\nq{quantile=\"0.5\",x=\"\"} 1\nq_sum 1\nq_count 1\n",
		"# TYPE up gauge\nup 1\n# TYPE pods gauge\npods{phase=\"Running\"} 3\npods{phase=\"Pending\"} 4\n",
	}
	target := labels.FromStrings("instance", "n", "job", "kubelet")
	var got [2]string
	for i, cached := range []bool{false, true} {
		e := evaluatorOf(t, Options{}, rules)
		at := t0
		for n, text := range scrapes {
			mfs := parseText(t, text)
			instants := []time.Time{at}
			if n == 1 {
				instants = append(instants, at.Add(15*time.Second), at.Add(30*time.Second))
			}
			if cached {
				if err := e.Scrape(target, instants, mfs); err != nil {
					t.Fatal(err)
				}
			} else {
				for _, ts := range instants {
					if err := e.Append(target.String(), ts, FromFamilies(mfs, target, e.Selects)); err != nil {
						t.Fatal(err)
					}
				}
			}
			at = instants[len(instants)-1].Add(15 * time.Second)
		}
		got[i] = dump(t, e)
	}
	if got[0] != got[1] {
		t.Fatalf("through the cache:\n%s\nappended:\n%s", got[1], got[0])
	}
	for _, want := range []string{`{__name__="pods", instance="n", job="kubelet", phase="Pending"} 1@0s stale@15s 4@1m15s`,
		`{__name__="q", instance="n", job="kubelet", quantile="0.5"} 1@1m0s stale@1m15s`, `lat_seconds_bucket`} {
		if !strings.Contains(got[1], want) {
			t.Errorf("no %s in:\n%s", want, got[1])
		}
	}
	if strings.Contains(got[1], "other") || strings.Contains(got[1], "lat_seconds_sum") {
		t.Errorf("a series no rule selects was stored:\n%s", got[1])
	}
}

// dump writes every series of the evaluator's storage with its samples (offsets from t0).
func dump(t *testing.T, e *Evaluator) string {
	t.Helper()
	q, err := e.db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var b strings.Builder
	for ss.Next() {
		s := ss.At()
		b.WriteString(s.Labels().String())
		it := s.Iterator(nil)
		for it.Next() != 0 {
			ts, v := it.At()
			at := time.UnixMilli(ts).Sub(t0)
			if value.IsStaleNaN(v) {
				fmt.Fprintf(&b, " stale@%v", at)
			} else {
				fmt.Fprintf(&b, " %v@%v", v, at)
			}
		}
		b.WriteString("\n")
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
