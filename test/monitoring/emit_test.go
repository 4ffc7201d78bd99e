package monitoring

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/pkg/promrules"
	"github.com/minikubelet/minikubelet/pkg/simulate"
)

// TestEmittedPromtoolTestsPass runs every shipped scenario with the shipped rules evaluated
// in simulate and --emit-promtool-test's file written, then runs `promtool test rules` on it:
// Prometheus' own test runner, over the same series, must find the alerts simulate's timeline
// shows, at the same evaluations (promtool is the oracle for the engine simulate embeds).
// A tampered copy of one file must fail, so the check can fail.
func TestEmittedPromtoolTestsPass(t *testing.T) {
	promtool := tool(t, "promtool")
	files := shippedRules(t)
	var names []string
	for _, f := range files {
		abs, err := filepath.Abs(filepath.Join(repo, "configs", "prometheus", "rules", f.Name))
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, abs)
	}
	scenarios, err := filepath.Glob(filepath.Join(repo, "configs", "scenarios", "*.yaml"))
	if err != nil || len(scenarios) == 0 {
		t.Fatalf("no shipped scenarios: %v", err)
	}
	dir := t.TempDir()
	firing := ""
	for _, path := range scenarios {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := simulate.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			var test bytes.Buffer
			res, err := simulate.Run(context.Background(), sc, simulate.Options{Dir: t.TempDir(), Rules: &simulate.RulesOptions{
				Files: files, PromtoolTest: &test, PromtoolRuleFiles: names}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK() {
				t.Errorf("%d expectations failed", res.Failed)
			}
			out := filepath.Join(dir, name+".test.yaml")
			if err := os.WriteFile(out, test.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := run(t, 2*time.Minute, dir, promtool, "test", "rules", out); err != nil || !strings.Contains(got, "SUCCESS") {
				t.Errorf("promtool test rules %s: %v\n%s", out, err, got)
			}
			if firing == "" && strings.Contains(test.String(), "exp_labels:") {
				firing = out
			}
		})
	}
	if firing == "" {
		t.Fatal("no shipped scenario fired an alert: nothing checked the alerts")
	}
	// The negative control: the same file with one expected label changed fails.
	data, err := os.ReadFile(firing)
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(data), "severity: ", "severity: not-", 1)
	bad := filepath.Join(dir, "tampered.test.yaml")
	if err := os.WriteFile(bad, []byte(tampered), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := run(t, 2*time.Minute, dir, promtool, "test", "rules", bad); err == nil || !strings.Contains(got, "FAILED") {
		t.Errorf("promtool passed a tampered test (%s): %v\n%s", firing, err, got)
	}
}

// TestEmittedTestOfAnAbsentSeries: promtool evaluates from the Unix epoch, over the padding
// before the run, where an alert on an absent series goes pending and fires; the run that
// writes the test evaluates that hour too, so the two agree.
func TestEmittedTestOfAnAbsentSeries(t *testing.T) {
	promtool := tool(t, "promtool")
	dir := t.TempDir()
	rules := filepath.Join(dir, "absent.rules.yaml")
	if err := os.WriteFile(rules, []byte(`groups:
- name: absent
  rules:
  - alert: SchedulerDown
    expr: absent(up{job="kube-scheduler"} == 1)
    for: 15m
  - alert: NoNode
    expr: absent(kube_node_status_condition{condition="Ready"})
    for: 1m
`), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := simulate.Parse([]byte("name: absent\nduration: 2m\nsteps:\n- at: 0s\n  expect:\n    alert: {name: SchedulerDown, state: firing}\n"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	var test bytes.Buffer
	res, err := simulate.Run(context.Background(), sc, simulate.Options{Dir: t.TempDir(), Rules: &simulate.RulesOptions{
		Files: []promrules.File{{Name: "absent.rules.yaml", Data: data}}, PromtoolTest: &test, PromtoolRuleFiles: []string{"absent.rules.yaml"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Errorf("SchedulerDown is not firing at T+0 in the run that writes the test: %+v", res.Expectations)
	}
	out := filepath.Join(dir, "absent.test.yaml")
	if err := os.WriteFile(out, test.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(test.String(), "alertname: SchedulerDown") {
		t.Errorf("the test checks no SchedulerDown evaluation:\n%s", test.String())
	}
	if got, err := run(t, 2*time.Minute, dir, promtool, "test", "rules", out); err != nil || !strings.Contains(got, "SUCCESS") {
		t.Errorf("promtool test rules: %v\n%s", err, got)
	}
}
