package simulate

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sample is one line of the OpenMetrics output.
type sample struct {
	series string // name{labels}
	value  float64
	at     time.Time
}

// parseOpenMetrics splits the output into its samples and checks its framing: one header per
// family, a family's lines together, a series' samples together, and # EOF last.
func parseOpenMetrics(t *testing.T, data []byte) []sample {
	t.Helper()
	text := string(data)
	if !strings.HasSuffix(text, "\n# EOF\n") {
		t.Fatalf("output does not end with # EOF")
	}
	var out []sample
	typed := map[string]bool{}
	done := map[string]bool{} // series already finished (a later sample would interleave)
	family, last := "", ""
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n# EOF\n"), "\n") {
		if strings.HasPrefix(line, "# TYPE ") {
			family = strings.Fields(line)[2]
			if typed[family] {
				t.Fatalf("line %d: family %s has a second header", i+1, family)
			}
			typed[family] = true
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, family) {
			t.Fatalf("line %d: %q outside its family %s", i+1, line, family)
		}
		sp := strings.LastIndexByte(line, ' ')
		vp := strings.LastIndexByte(line[:sp], ' ')
		ts, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			t.Fatalf("line %d: timestamp: %v", i+1, err)
		}
		v, err := strconv.ParseFloat(line[vp+1:sp], 64)
		if err != nil {
			t.Fatalf("line %d: value: %v", i+1, err)
		}
		series := line[:vp]
		// A histogram writes its buckets, sum and count per instant; a series is finished
		// when the next labelled group starts.
		key := series
		if j := strings.Index(series, "{"); j >= 0 {
			key = family + stripLE(series[j:])
		}
		if key != last {
			if done[key] {
				t.Fatalf("line %d: series %s interleaves with another", i+1, key)
			}
			done[last] = true
			last = key
		}
		out = append(out, sample{series: series, value: v, at: time.UnixMilli(int64(ts * 1000)).UTC()})
	}
	return out
}

func stripLE(labels string) string {
	if i := strings.Index(labels, `,le="`); i >= 0 {
		j := strings.Index(labels[i+5:], `"`)
		return labels[:i] + labels[i+5+j+1:]
	}
	return labels
}

func runWithMetrics(t *testing.T, path string, opts Options) ([]byte, []byte) {
	t.Helper()
	sc := parseFile(t, path)
	var metrics bytes.Buffer
	opts.Dir = t.TempDir()
	opts.Metrics = &MetricsOptions{Out: &metrics, Interval: opts.Metrics.Interval}
	if sc.ExpectsAlerts() {
		opts.Rules = &RulesOptions{Files: shippedRuleFiles(t)} // as runFile
	}
	res, err := Run(context.Background(), sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), metrics.Bytes()
}

// TestMetricsOut: --metrics-out changes nothing in the run (same output bytes) and writes every
// series at every virtual scrape instant from T+0 to the end, with the labels the shipped
// Prometheus config gives a live daemon.
func TestMetricsOut(t *testing.T) {
	for _, tt := range []struct {
		scenario string
		interval time.Duration
	}{
		{"pleg-relist-hang", 0},                 // default 15s
		{"graceful-shutdown", 10 * time.Second}, // the kubelet stops: its targets go down
		{"crashloop-backoff", 0},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			path := filepath.Join("..", "..", "configs", "scenarios", tt.scenario+".yaml")
			_, plain := runFile(t, path)
			out, metrics := runWithMetrics(t, path, Options{Metrics: &MetricsOptions{Interval: tt.interval}})
			if !bytes.Equal(plain, out) {
				t.Fatalf("the run differs with --metrics-out:\n--- without\n%s\n--- with\n%s", plain, out)
			}
			interval := tt.interval
			if interval == 0 {
				interval = DefaultScrapeInterval
			}
			samples := parseOpenMetrics(t, metrics)
			sc := parseFile(t, path)
			want := int(sc.Duration.Duration/interval) + 1 // T+0 to the end, both included
			bySeries := map[string][]sample{}
			for _, s := range samples {
				bySeries[s.series] = append(bySeries[s.series], s)
			}
			up := `up{instance="127.0.0.1:10255",job="kubelet",metrics_path="/metrics"}`
			if n := len(bySeries[up]); n != want {
				t.Fatalf("%s has %d samples, want %d (every %v for %v)", up, n, want, interval, sc.Duration.Duration)
			}
			for i, s := range bySeries[up] {
				if at := Epoch.Add(time.Duration(i) * interval); !s.at.Equal(at) {
					t.Fatalf("sample %d of %s at %v, want %v", i, up, s.at, at)
				}
			}
			for _, name := range []string{
				`kubelet_node_name{instance="127.0.0.1:10255",job="kubelet",metrics_path="/metrics",node="node"}`,
				`kube_node_status_condition{condition="Ready",instance="127.0.0.1:10255",job="kube-state-metrics",node="node",status="true"}`,
				`up{instance="127.0.0.1:10255",job="kubelet",metrics_path="/metrics/probes"}`,
			} {
				if len(bySeries[name]) == 0 {
					t.Errorf("no samples of %s", name)
				}
			}
			if tt.scenario == "graceful-shutdown" {
				ups := bySeries[up]
				if first, final := ups[0].value, ups[len(ups)-1].value; first != 1 || final != 0 {
					t.Errorf("up went %v ... %v, want 1 ... 0 once the kubelet stopped", first, final)
				}
			}
		})
	}
}

// TestMetricsOutFollowsStart: --start moves the samples' timestamps and the timestamp-valued
// pleg_last_seen_seconds with them.
func TestMetricsOutFollowsStart(t *testing.T) {
	path := filepath.Join("..", "..", "configs", "scenarios", "pleg-relist-hang.yaml")
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	_, metrics := runWithMetrics(t, path, Options{Start: start, Metrics: &MetricsOptions{}})
	for _, s := range parseOpenMetrics(t, metrics) {
		if s.at.Before(start) {
			t.Fatalf("%s at %v, before the start %v", s.series, s.at, start)
		}
		if strings.HasPrefix(s.series, "kubelet_pleg_last_seen_seconds") && s.at.Sub(start) > time.Minute && s.at.Sub(start) < 2*time.Minute {
			if seen := time.Unix(int64(s.value), 0); seen.Before(start) || seen.After(s.at) {
				t.Errorf("pleg_last_seen_seconds at %v = %v, want a time since the start", s.at, seen)
			}
		}
	}
}

func TestMetricsOutRejectsShortInterval(t *testing.T) {
	sc, err := Parse([]byte("name: x\nduration: 10s\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	_, err = Run(context.Background(), sc, Options{Dir: t.TempDir(), Metrics: &MetricsOptions{Out: &b, Interval: 100 * time.Millisecond}})
	if err == nil || !strings.Contains(err.Error(), "--scrape-interval") {
		t.Fatalf("Run with a 100ms scrape interval = %v, want an error naming --scrape-interval", err)
	}
}
