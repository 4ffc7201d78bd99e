package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/childproc"
)

// promDir holds the shipped Prometheus configuration.
var promDir = filepath.Join("..", "..", "configs", "prometheus")

// prometheus is a real Prometheus process on loopback.
type prometheus struct {
	t      *testing.T
	url    string
	mu     sync.Mutex
	output bytes.Buffer
}

// shortFor makes every rule's `for:` 1s, so that the test sees an alert fire as soon as its
// expression holds (the thresholds in the expressions stay as shipped).
var forRE = regexp.MustCompile(`(?m)^(\s+for:\s*)\S+\s*$`)

// startPrometheus runs Prometheus with the shipped scrape config pointed at target, scraping
// and evaluating every second, with the shipped rule files (for: shortened).
func startPrometheus(t *testing.T, target string) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("MINIKUBELET_REQUIRE_TOOLS") != "" {
			t.Fatal("prometheus not found and MINIKUBELET_REQUIRE_TOOLS is set: install Debian's prometheus package")
		}
		t.Skip("prometheus not installed (Debian package prometheus); .ci/run installs it")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"minikubelet.rules.yaml", "kubernetes-mixin-kubelet.rules.yaml"} {
		data, err := os.ReadFile(filepath.Join(promDir, "rules", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "rules", f), forRE.ReplaceAll(data, []byte("${1}1s")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(promDir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	shipped := string(cfg)
	for _, s := range []string{"scrape_interval: 15s", "evaluation_interval: 15s", "'127.0.0.1:10255'"} {
		if !strings.Contains(shipped, s) {
			t.Fatalf("configs/prometheus/prometheus.yml no longer says %s; update this test", s)
		}
	}
	shipped = strings.ReplaceAll(shipped, "'127.0.0.1:10255'", "'"+target+"'")
	shipped = strings.ReplaceAll(shipped, "_interval: 15s", "_interval: 1s")
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(shipped), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	p := &prometheus{t: t, url: "http://" + addr}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--storage.tsdb.retention.time=1h", "--log.level=warn")
	childproc.DieWithParent(cmd)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.output.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			p.mu.Lock()
			t.Logf("prometheus output:\n%s", p.output.String())
			p.mu.Unlock()
		}
	})
	return p
}

// freeLoopbackAddr returns a loopback address with a port free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// apiGet calls Prometheus' HTTP API and decodes its data.
func (p *prometheus) apiGet(path string, params url.Values, data any) error {
	resp, err := client.Get(p.url + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var out struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("%s: %d %s", path, resp.StatusCode, body)
	}
	if out.Status != "success" {
		return fmt.Errorf("%s: %s", path, out.Error)
	}
	return json.Unmarshal(out.Data, data)
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (p *prometheus) query(q string) ([]promSample, error) {
	var data struct {
		Result []promSample `json:"result"`
	}
	err := p.apiGet("/api/v1/query", url.Values{"query": {q}}, &data)
	return data.Result, err
}

// alertStates returns the state of every active alert by name (firing wins over pending).
func (p *prometheus) alertStates() (map[string]string, error) {
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := p.apiGet("/api/v1/alerts", nil, &data); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, a := range data.Alerts {
		if name := a.Labels["alertname"]; out[name] != "firing" {
			out[name] = a.State
		}
	}
	return out, nil
}

func describe(states map[string]string) string {
	var parts []string
	for n, s := range states {
		parts = append(parts, n+"="+s)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

// dashboardQueries are the Grafana dashboard's panel queries with its variables filled in.
func dashboardQueries(t *testing.T, node, instance string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "configs", "grafana", "minikubelet.json"))
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer("$__rate_interval", "1m", "$instance", instance, "${instance}", instance, "$node", node, "${node}", node)
	out := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("%s #%d", p.Title, i)] = r.Replace(tg.Expr)
		}
	}
	return out
}

// TestLivePrometheus is the monitoring end-to-end check (make e2e): the daemon with fault
// injection on a free loopback port, a real Prometheus scraping it every second with the
// shipped config and rules; every dashboard query answers; a hung ListPodSandbox makes
// KubeletPLEGRelistStalled fire, and clearing it resolves the alert.
func TestLivePrometheus(t *testing.T) {
	if os.Getenv("MINIKUBELET_E2E") == "" {
		t.Skip("a minute with a real Prometheus: run it with `make e2e` (MINIKUBELET_E2E=1)")
	}
	d := startDaemon(t, "--enable-debugging-handlers", "--hostname-override=e2e")
	target := strings.TrimPrefix(d.url, "http://")
	p := startPrometheus(t, target)

	// All four targets up, and the node's series there.
	d.eventually(60*time.Second, "every target up in Prometheus", func() (bool, string) {
		res, err := p.query(`sum(up{instance="` + target + `"})`)
		if err != nil || len(res) != 1 {
			return false, fmt.Sprint(res, err)
		}
		return res[0].Value[1] == "4", fmt.Sprint(res[0].Value[1], " of 4 targets up")
	})
	d.eventually(30*time.Second, "kube_node_status_condition Ready true", func() (bool, string) {
		res, err := p.query(`kube_node_status_condition{job="kube-state-metrics",node="e2e",condition="Ready",status="true"} == 1`)
		return err == nil && len(res) == 1, fmt.Sprint(res, err)
	})

	// A healthy node: a few evaluations and no PLEG or node alert.
	d.eventually(30*time.Second, "a relist rate over a few scrapes", func() (bool, string) {
		res, err := p.query(`rate(kubelet_pleg_relist_duration_seconds_count{job="kubelet"}[5s]) > 0`)
		return err == nil && len(res) == 1, fmt.Sprint(res, err)
	})
	// The first node status may be NotReady ("PLEG is not healthy: pleg has yet to be
	// successful", as upstream), which with for: 1s fires briefly: wait for the evaluation
	// that sees the node Ready, then expect quiet.
	healthy := []string{"KubeletPLEGRelistStalled", "KubeletPLEGNotHealthy", "KubeletNodeNotReady", "KubeletPlegDurationHigh", "KubeletDown"}
	d.eventually(15*time.Second, "no alert on the healthy node", func() (bool, string) {
		s, err := p.alertStates()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range healthy {
			if s[a] != "" {
				return false, describe(s)
			}
		}
		return true, ""
	})

	// Every dashboard query is valid PromQL on live data; those that always have a series
	// return one.
	// The node runs no pod: no container series; the runtime's errors need an error.
	mayBeEmpty := regexp.MustCompile(`^(Probe failures|Containers waiting|Injected runtime faults|Discarded PLEG events|Container restarts|Container CPU|CPU throttling) #|^Runtime operations #1$`)
	for name, q := range dashboardQueries(t, "e2e", target) {
		res, err := p.query(q)
		if err != nil {
			t.Errorf("dashboard panel %s: %v (query %s)", name, err, q)
			continue
		}
		if len(res) == 0 && !mayBeEmpty.MatchString(name) {
			t.Errorf("dashboard panel %s: no series (query %s)", name, q)
		}
	}

	// promtool check metrics on a live scrape: only upstream's own naming (counters without
	// _total, which the kubelet has too) is reported.
	if promtool, err := exec.LookPath("promtool"); err == nil {
		_, body := d.request(http.MethodGet, "/metrics", "")
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		out, _ := cmd.CombinedOutput()
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line == "" || strings.HasPrefix(line, "kubelet_evented_pleg_connection_") || strings.HasPrefix(line, "kubelet_pleg_discard_events ") {
				continue
			}
			t.Errorf("promtool check metrics: %s", line)
		}
	}

	// The hang: no relist completes, pleg_last_seen_seconds ages past 30s.
	hungAt := time.Now()
	if code, body := d.request(http.MethodPost, "/debug/faults", `{"method":"ListPodSandbox","type":"hang"}`); code != http.StatusCreated {
		t.Fatalf("POST /debug/faults = %d %s", code, body)
	}
	d.eventually(90*time.Second, "KubeletPLEGRelistStalled firing", func() (bool, string) {
		s, err := p.alertStates()
		return err == nil && s["KubeletPLEGRelistStalled"] == "firing", fmt.Sprint(describe(s), err)
	})
	t.Logf("KubeletPLEGRelistStalled fired %v after the hang (threshold 30s, for: 1s, 1s scrapes)", time.Since(hungAt).Round(time.Second))
	if states, _ := p.alertStates(); states["KubeletPlegDurationHigh"] != "" || states["KubeletNodeNotReady"] != "" {
		t.Errorf("during a 30s hang: KubeletPlegDurationHigh %q (the duration histogram should be frozen), KubeletNodeNotReady %q (3m threshold)", states["KubeletPlegDurationHigh"], states["KubeletNodeNotReady"])
	}

	// Cleared: the hung relist returns, the next one completes, the alert resolves.
	if code, body := d.request(http.MethodDelete, "/debug/faults", ""); code/100 != 2 {
		t.Fatalf("DELETE /debug/faults = %d %s", code, body)
	}
	clearedAt := time.Now()
	d.eventually(60*time.Second, "KubeletPLEGRelistStalled resolved", func() (bool, string) {
		s, err := p.alertStates()
		return err == nil && s["KubeletPLEGRelistStalled"] == "", fmt.Sprint(describe(s), err)
	})
	t.Logf("resolved %v after the fault was cleared", time.Since(clearedAt).Round(time.Second))
}
