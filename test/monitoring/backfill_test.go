package monitoring

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/pkg/simulate"
)

// backfillStart is T+0 of the backfilled incident: one day after the Unix epoch, because
// promtool's unit tests evaluate from time 0 (so time() there is seconds since the epoch, as
// the timestamps pleg_last_seen_seconds holds) and the runtime reads a 0 timestamp as unset.
var backfillStart = time.Unix(86400, 0).UTC()

// omSeries groups an OpenMetrics text's samples by series: name{labels} -> value per sample
// index (the scrape instants, interval apart from start).
func omSeries(t *testing.T, om string, start time.Time, interval time.Duration) (map[string]map[int]string, int) {
	t.Helper()
	out := map[string]map[int]string{}
	last := 0
	for i, line := range strings.Split(om, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		vp := strings.LastIndexByte(line[:sp], ' ')
		if sp < 0 || vp < 0 {
			t.Fatalf("line %d: %q is not `series value timestamp`", i+1, line)
		}
		ts, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		at := time.UnixMilli(int64(ts * 1000))
		idx := int(at.Sub(start) / interval)
		if at.Sub(start)%interval != 0 || idx < 0 {
			t.Fatalf("line %d: timestamp %v is not a scrape instant", i+1, at)
		}
		series := line[:vp]
		if out[series] == nil {
			out[series] = map[int]string{}
		}
		out[series][idx] = line[vp+1 : sp]
		last = max(last, idx)
	}
	return out, last
}

// alertAt is an expectation of the backfill test: at a virtual time, an alert is firing or
// not (pending counts as not firing).
type alertAt struct {
	at     time.Duration
	alert  string
	firing bool
	why    string
}

// TestBackfilledIncidentFiresShippedAlerts replays configs/scenarios/pleg-relist-hang.yaml
// with --metrics-out, backfills the series with promtool (as docs/monitoring.md tells users
// to), then evaluates both shipped rule files, unchanged, over the very same series with
// `promtool test rules`: the shipped alerts fire at the virtual times the scenario's timeline
// implies and the kubernetes-mixin's KubeletPlegDurationHigh never does.
func TestBackfilledIncidentFiresShippedAlerts(t *testing.T) {
	promtool := tool(t, "promtool")
	om := simulateMetrics(t, "pleg-relist-hang", backfillStart)
	dir := t.TempDir()
	omFile := filepath.Join(dir, "hang.om")
	if err := os.WriteFile(omFile, []byte(om), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, time.Minute, dir, promtool, "tsdb", "create-blocks-from", "openmetrics", omFile, filepath.Join(dir, "data")); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}

	// The scenario: ListPodSandbox hangs at T+2m (the last relist to succeed started at 2m);
	// the node turns NotReady at 5m10s (3m threshold, 10s status period); faults cleared at
	// 14m, Ready again at 14m10s. Rules are evaluated every 15s, on 15s scrapes.
	m := time.Minute
	s := time.Second
	expect := []alertAt{
		{2*m + 45*s, "KubeletPLEGRelistStalled", false, "age 45s > 30s: pending for 30s first"},
		{3*m + 15*s, "KubeletPLEGRelistStalled", true, "pending since 2m45s"},
		{5 * m, "KubeletPLEGNotHealthy", false, "age exactly 3m is not beyond the threshold"},
		{5*m + 15*s, "KubeletPLEGNotHealthy", true, "age 3m15s, as the kubelet's own check at 3m"},
		{6 * m, "KubeletNodeNotReady", false, "NotReady seen at 5m15s, pending for 1m"},
		{6*m + 15*s, "KubeletNodeNotReady", true, "pending since 5m15s"},
		{13 * m, "KubeletPLEGRelistStalled", true, "still hung"},
		{13 * m, "KubeNodeNotReady", false, "the mixin waits 15m"},
		{13 * m, "KubeletPlegDurationHigh", false, "kubernetes/kubernetes#87108: a hung relist observes nothing"},
		{13 * m, "KubeletPLEGRelistDurationHigh", false, "nor does ours: duration alerts cannot see a hang"},
		{14*m + 15*s, "KubeletPLEGRelistStalled", false, "the relist completed at 14m"},
		{14*m + 15*s, "KubeletPLEGNotHealthy", false, "resolved"},
		{14*m + 15*s, "KubeletNodeNotReady", false, "Ready again at 14m10s"},
	}
	series, last := omSeries(t, om, backfillStart, simulate.DefaultScrapeInterval)
	lead := int(backfillStart.Sub(time.Unix(0, 0)) / simulate.DefaultScrapeInterval)
	names := make([]string, 0, len(series))
	for n := range series {
		names = append(names, n)
	}
	sort.Strings(names)
	type inputSeries struct {
		Series string `json:"series"`
		Values string `json:"values"`
	}
	type exprTest struct {
		Expr       string `json:"expr"`
		EvalTime   string `json:"eval_time"`
		ExpSamples []any  `json:"exp_samples"`
	}
	var inputs []inputSeries
	for _, n := range names {
		vals := []string{fmt.Sprintf("_x%d", lead)}
		for i := 0; i <= last; i++ {
			v, ok := series[n][i]
			if !ok {
				v = "_"
			}
			vals = append(vals, v)
		}
		inputs = append(inputs, inputSeries{Series: n, Values: strings.Join(vals, " ")})
	}
	var tests []exprTest
	for _, e := range expect {
		tt := exprTest{
			Expr:       fmt.Sprintf(`count by (alertname) (ALERTS{alertname=%q, alertstate="firing"})`, e.alert),
			EvalTime:   (backfillStart.Sub(time.Unix(0, 0)) + e.at).String(),
			ExpSamples: []any{},
		}
		if e.firing {
			tt.ExpSamples = []any{map[string]any{"labels": fmt.Sprintf(`{alertname=%q}`, e.alert), "value": 1}}
		}
		tests = append(tests, tt)
	}
	// Over the whole incident neither duration alert fires. They only go pending after the
	// hang is over, when the one relist that lasted 12 minutes is observed and, for a while,
	// is more than 1% of the few relists in the 5m window.
	for _, a := range []string{"KubeletPlegDurationHigh", "KubeletPLEGRelistDurationHigh"} {
		tests = append(tests, exprTest{
			Expr:       fmt.Sprintf(`max_over_time(ALERTS{alertname=%q, alertstate="firing"}[20m])`, a),
			EvalTime:   (backfillStart.Sub(time.Unix(0, 0)) + 20*m).String(),
			ExpSamples: []any{},
		})
	}
	abs := func(name string) string {
		p, err := filepath.Abs(filepath.Join(promDir, "rules", name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	unit := map[string]any{
		"rule_files":          []string{abs("minikubelet.rules.yaml"), abs("kubernetes-mixin-kubelet.rules.yaml")},
		"evaluation_interval": "15s",
		"tests": []any{map[string]any{
			"interval":         "15s",
			"input_series":     inputs,
			"promql_expr_test": tests,
		}},
	}
	data, err := yaml.Marshal(unit)
	if err != nil {
		t.Fatal(err)
	}
	testFile := filepath.Join(dir, "incident.test.yaml")
	if err := os.WriteFile(testFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, 5*time.Minute, dir, promtool, "test", "rules", testFile)
	if err != nil {
		var why strings.Builder
		for _, e := range expect {
			fmt.Fprintf(&why, "  T+%v %s firing=%v: %s\n", e.at, e.alert, e.firing, e.why)
		}
		t.Fatalf("promtool test rules on the backfilled incident: %v\n%s\nexpected:\n%s", err, out, why.String())
	}
}
