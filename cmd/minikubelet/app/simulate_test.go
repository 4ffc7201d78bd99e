package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSimulateExitCodes(t *testing.T) {
	passing := writeFile(t, `name: pass
duration: 20s
manifests:
  web.yaml: |
    apiVersion: v1
    kind: Pod
    metadata: {name: web}
    spec: {containers: [{name: c, image: nginx}]}
steps:
- at: 10s
  expect:
    pod: {name: web-node, phase: Running}
`)
	failing := writeFile(t, `name: fail
duration: 20s
steps:
- at: 10s
  expect:
    pod: {name: web-node, phase: Running}
`)
	invalid := writeFile(t, "name: bad\nduration: 20s\nsteps:\n- at: 10s\n  shutdwon: true\n")
	badArgs := writeFile(t, "name: bad\nduration: 20s\nargs: [\"--relist-period=soon\"]\n")
	metricsOut := filepath.Join(t.TempDir(), "out.om")
	alwaysRules := writeFile(t, "groups:\n- name: g\n  rules:\n  - alert: Always\n    expr: vector(1)\n")
	badRules := writeFile(t, "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: rate(x[5m]\n")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{"all passed", []string{"simulate", "-f", passing}, 0, []string{"PASS step 0 at T+00:00:10.000: pod web-node phase=Running", "1 passed, 0 failed"}, ""},
		{"json", []string{"simulate", "-f", passing, "-o", "json"}, 0, []string{`"passed": 1`, `"line": "PASS step 0`}, ""},
		{"a failure", []string{"simulate", "-f", failing}, 1, []string{"FAIL step 0", "0 passed, 1 failed"}, "1 of 1 expectations failed"},
		{"invalid file", []string{"simulate", "-f", invalid}, 2, nil, `step 0: unknown key "shutdwon"`},
		{"invalid args", []string{"simulate", "-f", badArgs}, 2, nil, "relist-period"},
		{"missing file", []string{"simulate", "-f", invalid + ".nope"}, 2, nil, "read scenario"},
		{"no -f", []string{"simulate"}, 2, nil, "flag -f/--file is required"},
		{"bad -o", []string{"simulate", "-f", passing, "-o", "yaml"}, 2, nil, `flag -o/--output: "yaml"`},
		{"metrics out", []string{"simulate", "-f", passing, "--metrics-out", metricsOut, "--scrape-interval", "5s", "--start", "2026-01-01T00:00:00Z"}, 0, []string{"1 passed, 0 failed"}, ""},
		{"scrape interval too short", []string{"simulate", "-f", passing, "--metrics-out", metricsOut, "--scrape-interval", "10ms"}, 2, nil, "flag --scrape-interval: 10ms is below the 1s minimum"},
		{"scrape interval alone", []string{"simulate", "-f", passing, "--scrape-interval", "5s"}, 2, nil, "flag --scrape-interval needs --metrics-out or --rules"},
		{"rules", []string{"simulate", "-f", passing, "--rules", alwaysRules}, 0, []string{"T+00:00:00.000 alert Always firing {}", "1 passed, 0 failed"}, ""},
		{"rule file Prometheus refuses", []string{"simulate", "-f", passing, "--rules", badRules}, 2, nil, `flag --rules: rule file ` + badRules + `: 5:11: group "g", rule 1, "A": could not parse expression`},
		{"missing rule file", []string{"simulate", "-f", passing, "--rules", badRules + ".nope"}, 2, nil, "flag --rules: stat"},
		{"empty rule directory", []string{"simulate", "-f", passing, "--rules", t.TempDir()}, 2, nil, "has no .yaml or .yml file"},
		{"bad evaluation interval", []string{"simulate", "-f", passing, "--evaluation-interval", "0s"}, 2, nil, "flag --evaluation-interval: 0s must be positive"},
		{"promtool test and start", []string{"simulate", "-f", passing, "--emit-promtool-test", metricsOut + ".test.yaml", "--start", "2026-01-01T00:00:00Z"}, 2, nil, "flags --start, --emit-promtool-test"},
		{"bad start", []string{"simulate", "-f", passing, "--start", "yesterday"}, 2, nil, `flag --start: "yesterday" is not an RFC 3339 time`},
		{"start at the epoch", []string{"simulate", "-f", passing, "--start", "1970-01-01T00:00:00Z"}, 2, nil, "flag --start: 1970-01-01T00:00:00Z is before 1970-01-02"},
		{"metrics out in a missing directory", []string{"simulate", "-f", passing, "--metrics-out", metricsOut + ".d/x.om"}, 2, nil, "flag --metrics-out: open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, out, _, _ := testCommand(t, tt.args...)
			err := cmd.Execute()
			code := 0
			if err != nil {
				code = 1
				var exit *ExitError
				if errors.As(err, &exit) {
					code = exit.Code
				}
			}
			if code != tt.wantCode {
				t.Fatalf("exit code %d (err %v), want %d; output:\n%s", code, err, tt.wantCode, out)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v does not contain %q", err, tt.wantErr)
			}
		})
	}
}

// TestSimulateMetricsOutFile: --metrics-out writes OpenMetrics for promtool, sampled every
// --scrape-interval from --start.
func TestSimulateMetricsOutFile(t *testing.T) {
	scenario := writeFile(t, "name: idle\nduration: 20s\n")
	out := filepath.Join(t.TempDir(), "idle.om")
	cmd, _, _, _ := testCommand(t, "simulate", "-f", scenario, "--metrics-out", out, "--scrape-interval", "10s", "--start", "2026-01-01T00:00:00Z")
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	// 2026-01-01T00:00:00Z is 1767225600: samples at +0s, +10s and +20s.
	for _, want := range []string{
		"# TYPE up gauge\n",
		`up{instance="127.0.0.1:10255",job="kubelet",metrics_path="/metrics"} 1.0 1.7672256e+09` + "\n",
		`up{instance="127.0.0.1:10255",job="kubelet",metrics_path="/metrics"} 1.0 1.76722561e+09` + "\n",
		`up{instance="127.0.0.1:10255",job="kubelet",metrics_path="/metrics"} 1.0 1.76722562e+09` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q", out, want)
		}
	}
	if !strings.HasSuffix(text, "# EOF\n") {
		t.Errorf("%s does not end with # EOF", out)
	}
}

// TestSimulateEmitsPromtoolTest: --emit-promtool-test writes the test file and, beside it,
// the shipped rules it names (evaluated because the scenario expects an alert), and the
// timeline shows the alert.
func TestSimulateEmitsPromtoolTest(t *testing.T) {
	sc := writeFile(t, `name: restarts
duration: 2m
manifests:
  crash.yaml: |
    apiVersion: v1
    kind: Pod
    metadata: {name: crash, annotations: {minikubelet.io/behavior.main: "runFor=2s,exitCode=1"}}
    spec: {containers: [{name: main, image: busybox, command: [sleep, infinity]}]}
steps:
- at: 0s
  within: 2m
  expect:
    alert: {name: KubeletContainerRestarting, state: firing}
`)
	out := filepath.Join(t.TempDir(), "restarts.test.yaml")
	cmd, stdout, _, _ := testCommand(t, "simulate", "-f", sc, "--emit-promtool-test", out)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("simulate: %v\n%s", err, stdout)
	}
	if !strings.Contains(stdout.String(), "alert KubeletContainerRestarting firing") || !strings.Contains(stdout.String(), "1 passed, 0 failed") {
		t.Errorf("timeline lacks the firing alert or the expectation:\n%s", stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rule_files:\n- restarts.test.rules/kubernetes-mixin-apps.rules.yaml\n- restarts.test.rules/kubernetes-mixin-kubelet.rules.yaml\n- restarts.test.rules/minikubelet.rules.yaml",
		"alertname: KubeletContainerRestarting", "input_series:", "series: up{instance=\"127.0.0.1:10255\", job=\"kubelet\", metrics_path=\"/metrics\"}"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("test file lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), "restarts.test.rules", "minikubelet.rules.yaml")); err != nil {
		t.Errorf("the shipped rules are not beside the test file: %v", err)
	}
}

// TestSimulatePromtoolTestOfAPrometheusRule: promtool reads plain rule files only, so a
// PrometheusRule object given to --rules is named in the test by its groups, written beside it.
func TestSimulatePromtoolTestOfAPrometheusRule(t *testing.T) {
	rules := writeFile(t, `apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: always}
spec:
  groups:
  - name: g
    rules:
    - alert: Always
      expr: vector(1)
`)
	sc := writeFile(t, "name: x\nduration: 30s\n")
	out := filepath.Join(t.TempDir(), "x.test.yaml")
	cmd, stdout, _, _ := testCommand(t, "simulate", "-f", sc, "--rules", rules, "--emit-promtool-test", out)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("simulate: %v\n%s", err, stdout)
	}
	test, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	copyName := "x.test.rules/" + filepath.Base(rules)
	if !strings.Contains(string(test), "rule_files:\n- "+copyName+"\n") {
		t.Errorf("rule_files does not name the groups' copy %s:\n%s", copyName, test)
	}
	groups, err := os.ReadFile(filepath.Join(filepath.Dir(out), copyName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(groups), "groups:") || strings.Contains(string(groups), "PrometheusRule") {
		t.Errorf("the copy is not a plain rule file:\n%s", groups)
	}
}
