package monitoring

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

var promDir = filepath.Join(repo, "configs", "prometheus")

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func loadRules(t *testing.T, name string) []rule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(promDir, "rules", name))
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// TestPromtool: the scrape config and both rule files pass promtool's checks, and every
// rule's unit tests (configs/prometheus/tests) pass.
func TestPromtool(t *testing.T) {
	promtool := tool(t, "promtool")
	tests, err := filepath.Glob(filepath.Join(promDir, "tests", "*.test.yaml"))
	if err != nil || len(tests) < 2 {
		t.Fatalf("want the rule tests in configs/prometheus/tests, found %v (%v)", tests, err)
	}
	for _, args := range [][]string{
		{"check", "config", "prometheus.yml"},
		{"check", "rules", "rules/minikubelet.rules.yaml", "rules/kubernetes-mixin-kubelet.rules.yaml", "rules/kubernetes-mixin-apps.rules.yaml"},
		append([]string{"test", "rules"}, relative(t, tests)...),
	} {
		out, err := run(t, 2*time.Minute, promDir, promtool, args...)
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func relative(t *testing.T, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		r, err := filepath.Rel(promDir, p)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = r
	}
	return out
}

// TestRulesUseExposedMetrics: the shipped alerts select only series the daemon exposes, and
// each has the annotations a runbook needs.
func TestRulesUseExposedMetrics(t *testing.T) {
	names := exposedNames(t)
	rules := loadRules(t, "minikubelet.rules.yaml")
	want := map[string]bool{"KubeletPLEGRelistStalled": true, "KubeletPLEGNotHealthy": true, "KubeletPLEGRelistDurationHigh": true,
		"KubeletPLEGDiscardingEvents": true, "KubeletNodeNotReady": true, "KubeletNodePressure": true,
		"KubeletContainerRestarting": true, "KubeletProbeFailing": true}
	for _, r := range rules {
		delete(want, r.Alert)
		for _, m := range metricNames(r.Expr) {
			if !names[m] {
				t.Errorf("%s: %s is not a metric the daemon exposes", r.Alert, m)
			}
		}
		for _, a := range []string{"summary", "description", "runbook"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s has no %s annotation", r.Alert, a)
			}
		}
		if r.Labels["severity"] == "" {
			t.Errorf("%s has no severity", r.Alert)
		}
	}
	for a := range want {
		t.Errorf("minikubelet.rules.yaml has no alert %s", a)
	}
	// The mixin's rules that can work on a standalone node find every series they need.
	mixin := map[string]bool{"KubeNodeNotReady": true, "KubeNodeReadinessFlapping": true, "KubeletPlegDurationHigh": true,
		"KubeletPodStartUpLatencyHigh": true, "KubeletDown": true, "node_quantile:kubelet_pleg_relist_duration_seconds:histogram_quantile": true}
	recorded := map[string]bool{}
	for _, r := range loadRules(t, "kubernetes-mixin-kubelet.rules.yaml") {
		if r.Record != "" {
			recorded[r.Record] = true
		}
	}
	for _, r := range loadRules(t, "kubernetes-mixin-kubelet.rules.yaml") {
		name := r.Alert + r.Record
		if !mixin[name] {
			continue
		}
		delete(mixin, name)
		for _, m := range metricNames(r.Expr) {
			if !names[m] && !recorded[m] {
				t.Errorf("mixin %s: %s is not a metric the daemon exposes", name, m)
			}
		}
	}
	for n := range mixin {
		t.Errorf("kubernetes-mixin-kubelet.rules.yaml has no rule %s", n)
	}
	// The mixin's pod alerts read /metrics/state and /metrics/cadvisor.
	apps := map[string]bool{"KubePodCrashLooping": true, "KubeContainerWaiting": true, "CPUThrottlingHigh": true}
	for _, r := range loadRules(t, "kubernetes-mixin-apps.rules.yaml") {
		delete(apps, r.Alert)
		for _, m := range metricNames(r.Expr) {
			if !names[m] {
				t.Errorf("mixin %s: %s is not a metric the daemon exposes", r.Alert, m)
			}
		}
	}
	for n := range apps {
		t.Errorf("kubernetes-mixin-apps.rules.yaml has no alert %s", n)
	}
}
