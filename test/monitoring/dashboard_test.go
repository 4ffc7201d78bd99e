package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

type panel struct {
	ID          int               `json:"id"`
	Type        string            `json:"type"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Datasource  map[string]string `json:"datasource"`
	Targets     []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type dashboard struct {
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) (dashboard, []panel) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "configs", "grafana", "minikubelet.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("configs/grafana/minikubelet.json: %v", err)
	}
	var flat []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			flat = append(flat, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return d, flat
}

var labelValues = regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`)

// variableQueries returns the query of every query variable (label_values' selector).
func variableQueries(t *testing.T, d dashboard) map[string]string {
	out := map[string]string{}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var obj struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Fatalf("variable %s: query: %v", v.Name, err)
			}
			q = obj.Query
		}
		if m := labelValues.FindStringSubmatch(q); m != nil {
			q = m[1]
		}
		out[v.Name] = q
	}
	return out
}

// TestDashboardQueriesUseExposedMetrics: every query of the dashboard (panels and variables)
// selects only metrics the daemon exposes, so no panel is empty because of a wrong name.
func TestDashboardQueriesUseExposedMetrics(t *testing.T) {
	names := exposedNames(t)
	d, panels := loadDashboard(t)
	n := 0
	for _, p := range panels {
		for _, tg := range p.Targets {
			n++
			for _, m := range metricNames(tg.Expr) {
				if !names[m] {
					t.Errorf("panel %q: %s is not a metric the daemon exposes (query %s)", p.Title, m, tg.Expr)
				}
			}
		}
	}
	for name, q := range variableQueries(t, d) {
		for _, m := range metricNames(q) {
			if !names[m] {
				t.Errorf("variable %s: %s is not a metric the daemon exposes (query %s)", name, m, q)
			}
		}
	}
	if n < 16 {
		t.Errorf("the dashboard has %d queries, want at least 16", n)
	}
}

// TestDashboardPanels: the panels the monitoring guide describes are there, each says what
// it shows, and every query goes through the dashboard's datasource variable.
func TestDashboardPanels(t *testing.T) {
	d, panels := loadDashboard(t)
	if d.UID != "minikubelet" {
		t.Errorf("uid = %q, want minikubelet (docs/monitoring.md links to it)", d.UID)
	}
	want := map[string]string{ // panel title -> a metric its queries must use
		"Relist rate":                  "kubelet_pleg_relist_duration_seconds_count",
		"Relist duration p50 / p99":    "kubelet_pleg_relist_duration_seconds_bucket",
		"Relist interval p50 / p99":    "kubelet_pleg_relist_interval_seconds_bucket",
		"Discarded PLEG events":        "kubelet_pleg_discard_events",
		"Last relist age":              "kubelet_pleg_last_seen_seconds",
		"Running pods":                 "kubelet_running_pods",
		"Containers by state":          "kubelet_running_containers",
		"Node conditions":              "kube_node_status_condition",
		"Container restarts":           "kube_pod_container_status_restarts_total",
		"Probe failures":               "prober_probe_total",
		"PLEG in charge":               "kubelet_pleg_active",
		"Pod start duration p50 / p99": "kubelet_pod_start_duration_seconds_bucket",
		"Container CPU":                "container_cpu_usage_seconds_total",
		"CPU throttling":               "container_cpu_cfs_throttled_periods_total",
		"Runtime operations":           "kubelet_runtime_operations_total",
	}
	ids := map[int]bool{}
	for _, p := range panels {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if strings.TrimSpace(p.Description) == "" {
			t.Errorf("panel %q has no description", p.Title)
		}
		if p.Datasource["uid"] != "${datasource}" {
			t.Errorf("panel %q: datasource %v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if metric, ok := want[p.Title]; ok {
			var all []string
			for _, tg := range p.Targets {
				all = append(all, metricNames(tg.Expr)...)
			}
			if !strings.Contains(strings.Join(all, " "), metric) {
				t.Errorf("panel %q queries %v, want %s", p.Title, all, metric)
			}
			delete(want, p.Title)
		}
	}
	for title := range want {
		t.Errorf("no panel %q", title)
	}
}
