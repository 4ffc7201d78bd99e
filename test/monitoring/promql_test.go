package monitoring

import (
	"regexp"
	"sort"
	"strings"
	"testing"
)

var (
	stringLit   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	braces      = regexp.MustCompile(`\{[^{}]*\}`)
	brackets    = regexp.MustCompile(`\[[^\[\]]*\]`)
	grafanaVar  = regexp.MustCompile(`\$\{[^}]*\}|\$\w+`)
	labelLists  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	identifier  = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	numberStart = regexp.MustCompile(`^[0-9]`)
)

// promqlWords are PromQL's keywords and aggregation operators: never metric names.
var promqlWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
}

// metricNames returns the metric names an expression selects: the identifiers left once
// strings, label matchers, ranges, grouping label lists, functions and keywords are gone.
// (A small scanner rather than Prometheus' parser, which would pull all of Prometheus in.)
func metricNames(expr string) []string {
	e := stringLit.ReplaceAllString(expr, `""`)
	e = grafanaVar.ReplaceAllString(e, "1m")
	for {
		next := braces.ReplaceAllString(e, " ")
		next = brackets.ReplaceAllString(next, " ")
		if next == e {
			break
		}
		e = next
	}
	e = labelLists.ReplaceAllString(e, " ")
	seen := map[string]bool{}
	for _, loc := range identifier.FindAllStringIndex(e, -1) {
		word := e[loc[0]:loc[1]]
		// A number like 1e3 or a duration like 5m is not a name.
		if loc[0] > 0 && (numberStart.MatchString(e[loc[0]-1:loc[0]]) || e[loc[0]-1] == '.') {
			continue
		}
		if promqlWords[strings.ToLower(word)] {
			continue
		}
		if rest := strings.TrimLeft(e[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function call
		}
		seen[word] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`rate(kubelet_pleg_relist_duration_seconds_count{job="kubelet", instance="$instance"}[$__rate_interval])`,
			[]string{"kubelet_pleg_relist_duration_seconds_count"}},
		{`histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="y"}[5m])))`, []string{"a_bucket"}},
		{`(time() - kubelet_pleg_last_seen_seconds{job="kubelet"}) * on(cluster, instance) group_left(node) kubelet_node_name > 30`,
			[]string{"kubelet_node_name", "kubelet_pleg_last_seen_seconds"}},
		{`sum by (reason) (w{r="a b"}) > 1e3 and x offset 5m`, []string{"w", "x"}},
		{`count by(cluster, node) (kube_pod_info{job="kube-state-metrics"}) / max by(cluster, node) (cap != 1)`,
			[]string{"cap", "kube_pod_info"}},
		{`absent(up{job="kubelet"} == 1)`, []string{"up"}},
	}
	for _, tt := range tests {
		got := metricNames(tt.expr)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("metricNames(%s) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}
