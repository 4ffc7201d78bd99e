package simulate

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/promrules"
)

const noPodsRules = `groups:
- name: pods
  rules:
  - alert: NoPods
    expr: kubelet_running_pods == 0
    for: 30s
    labels: {severity: info}
`

const alertScenario = `
name: alerts
duration: 3m
steps:
- at: 0s
  within: 40s
  expect:
    alert: {name: NoPods, state: firing, labels: {severity: info, job: kubelet}}
- at: 0s
  expect:
    alert: {name: NoPods, state: pending}
- at: 0s
  during: 1m
  expect:
    alert: {name: NoPods, state: inactive}
- at: 1m
  write:
    web.yaml: |
      apiVersion: v1
      kind: Pod
      metadata: {name: web}
      spec: {containers: [{name: c, image: nginx}]}
- at: 1m
  expect:
    alert: {name: NoPods, state: firing, labels: {severity: page}}
- at: 1m30s
  during: 1m30s
  expect:
    alert: {name: NoPods, state: inactive}
`

// TestAlertExpectations: the rules' alerts are on the timeline at the instants Prometheus'
// engine moves them, and alert expectations are checked against those instants: within a
// window (held at the evaluation that fired it), during a span (all of it), and failing
// with what the alerts were.
func TestAlertExpectations(t *testing.T) {
	sc, err := Parse([]byte(alertScenario))
	if err != nil {
		t.Fatal(err)
	}
	run := func() string {
		res, err := Run(context.Background(), sc, Options{Dir: t.TempDir(),
			Rules: &RulesOptions{Files: []promrules.File{{Name: "pods.yaml", Data: []byte(noPodsRules)}}}})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_ = res.WriteText(&b)
		return b.String()
	}
	out := run()
	for _, want := range []string{
		`T+00:00:00.000 alert NoPods pending {instance="127.0.0.1:10255", job="kubelet", metrics_path="/metrics", severity="info"}`,
		`T+00:00:30.000 alert NoPods firing {instance="127.0.0.1:10255", job="kubelet", metrics_path="/metrics", severity="info"}`,
		`T+00:01:15.000 alert NoPods resolved`,
		"PASS step 0 at T+00:00:00.000 within 40s: alert NoPods firing {job=\"kubelet\", severity=\"info\"} (held at T+00:00:30.000)",
		"PASS step 1 at T+00:00:00.000: alert NoPods pending",
		"FAIL step 2 at T+00:00:00.000: alert NoPods inactive during 1m0s; observed: pending {",
		"FAIL step 4 at T+00:01:00.000: alert NoPods firing {severity=\"page\"}; observed: inactive",
		"PASS step 5 at T+00:01:30.000: alert NoPods inactive during 1m30s",
		"3 passed, 2 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if again := run(); again != out {
		t.Errorf("two runs differ:\n--- first\n%s\n--- second\n%s", out, again)
	}
}

// TestAlertExpectationWithoutRules fails the expectation with the reason, not the run.
func TestAlertExpectationWithoutRules(t *testing.T) {
	sc, err := Parse([]byte("name: x\nduration: 10s\nsteps:\n- at: 1s\n  expect:\n    alert: {name: A, state: firing}\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 1 || !strings.Contains(res.Expectations[0].Observed, "run with --rules") {
		t.Errorf("expectations = %+v, want one failed saying to run with --rules", res.Expectations)
	}
}

// TestBadRulesAreInvalid: a rule file Prometheus refuses stops the run before it starts,
// with Prometheus' error naming the file and the rule.
func TestBadRulesAreInvalid(t *testing.T) {
	sc, err := Parse([]byte("name: x\nduration: 10s\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), sc, Options{Dir: t.TempDir(),
		Rules: &RulesOptions{Files: []promrules.File{{Name: "r.yaml", Data: []byte("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: rate(x[5m]\n")}}}})
	var rerr *RulesError
	if err == nil || !errors.As(err, &rerr) || !strings.Contains(err.Error(), "flag --rules: rule file r.yaml") || !strings.Contains(err.Error(), `"A"`) {
		t.Errorf("Run = %v, want a RulesError naming --rules, r.yaml and rule A", err)
	}
}

// failingRule fails at every evaluation where two targets are up (a many-to-many match), so
// that the batched evaluation's range query fails and its instants are asked one at a time.
const failingRule = `groups:
- name: failing
  rules:
  - record: job:up:many
    expr: up * on(job) group_left up
  - alert: Pods
    expr: kubelet_running_pods > 0
    for: 15s
`

// TestBatchedRulesAsOneAtATime: the shipped rules evaluated a group at a time (each rule's
// expression once over many instants, as a range query), beside the run, over the families
// the rules read, give every shipped scenario the same timeline, byte for byte, as
// evaluating each instant after the other, as Prometheus does, over every family (the run
// that writes --metrics-out gathers them all); so does a rule whose evaluation fails.
func TestBatchedRulesAsOneAtATime(t *testing.T) {
	files := append(shippedRuleFiles(t), promrules.File{Name: "failing.yaml", Data: []byte(failingRule)})
	alerts, failures := 0, 0
	for _, sc := range shippedScenarios(t) {
		t.Run(sc.Name, func(t *testing.T) {
			var text [2]bytes.Buffer
			for i, one := range []bool{false, true} {
				opts := Options{Dir: t.TempDir(), Rules: &RulesOptions{Files: files, oneAtATime: one}}
				if one {
					opts.Metrics = &MetricsOptions{Out: io.Discard}
				}
				res, err := Run(context.Background(), sc, opts)
				if err != nil {
					t.Fatal(err)
				}
				if err := res.WriteText(&text[i]); err != nil {
					t.Fatal(err)
				}
			}
			if batched, one := text[0].String(), text[1].String(); batched != one {
				t.Fatalf("batched:\n%s\none at a time:\n%s", batched, one)
			}
			alerts += strings.Count(text[0].String(), " alert ")
			failures += strings.Count(text[0].String(), "evaluation failed")
		})
	}
	if alerts == 0 || failures == 0 {
		t.Fatalf("%d alert lines and %d rule failures over the scenarios: the comparison saw neither", alerts, failures)
	}
}
