package monitoring

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/promrules"
	"github.com/minikubelet/minikubelet/pkg/simulate"
)

// simulateMetrics runs a shipped scenario with --metrics-out and returns the OpenMetrics text.
func simulateMetrics(t *testing.T, scenario string, start time.Time) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "configs", "scenarios", scenario+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := simulate.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	opts := simulate.Options{Dir: t.TempDir(), Start: start, Metrics: &simulate.MetricsOptions{Out: &out}}
	if sc.ExpectsAlerts() {
		opts.Rules = &simulate.RulesOptions{Files: shippedRules(t)} // as `minikubelet simulate` does
	}
	res, err := simulate.Run(context.Background(), sc, opts)
	if err != nil {
		t.Fatalf("simulate %s: %v", scenario, err)
	}
	if !res.OK() {
		t.Fatalf("simulate %s: %d expectations failed", scenario, res.Failed)
	}
	return out.String()
}

// shippedRules are configs/prometheus/rules/*.yaml.
func shippedRules(*testing.T) []promrules.File { return simtest.ShippedRules() }

var (
	exposedOnce sync.Once
	exposed     map[string]bool
)

// exposedNames are the sample names the daemon exposes on /metrics, /metrics/cadvisor,
// /metrics/probes and /metrics/state (histograms as their _bucket, _sum and _count), plus
// Prometheus' own `up`: everything that the shipped scenarios with probes, a crash loop, a
// PLEG hang and CPU throttling produce.
func exposedNames(t *testing.T) map[string]bool {
	t.Helper()
	exposedOnce.Do(func() {
		exposed = map[string]bool{}
		for _, sc := range []string{"probes", "crashloop-backoff", "pleg-relist-hang", "cpu-throttling"} {
			for _, line := range strings.Split(simulateMetrics(t, sc, time.Time{}), "\n") {
				if line == "" || line[0] == '#' {
					continue
				}
				if i := strings.IndexAny(line, "{ "); i > 0 {
					exposed[line[:i]] = true
				}
			}
		}
	})
	if len(exposed) == 0 {
		t.Fatal("no exposed metric names")
	}
	return exposed
}
