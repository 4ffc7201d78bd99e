package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRegistryPrefixesNames(t *testing.T) {
	for _, tc := range []struct {
		prefix, want string
	}{
		{"", "pleg_relist_duration_seconds"},
		{"kubelet_", "kubelet_pleg_relist_duration_seconds"},
		{"sim_", "sim_pleg_relist_duration_seconds"},
	} {
		t.Run("prefix="+tc.prefix, func(t *testing.T) {
			r := NewRegistry(tc.prefix)
			if got := r.Name(PLEGRelistDuration); got != tc.want {
				t.Errorf("Name(%s) = %q, want %q", PLEGRelistDuration, got, tc.want)
			}
			if r.Prefix() != tc.prefix {
				t.Errorf("Prefix() = %q, want %q", r.Prefix(), tc.prefix)
			}
		})
	}
}

// TestRegistriesArePrivate checks that two daemons (or tests) in one process do not share
// metrics: each registry is its own, and the global default registry is untouched.
func TestRegistriesArePrivate(t *testing.T) {
	a, b := NewRegistry("kubelet_"), NewRegistry("kubelet_")
	a.RegisterNodeName("node-a")
	b.RegisterNodeName("node-b")
	want := `
# HELP kubelet_node_name The node's name. The count is always 1.
# TYPE kubelet_node_name gauge
kubelet_node_name{node="node-a"} 1
`
	if err := testutil.GatherAndCompare(a, strings.NewReader(want), "kubelet_node_name"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(prometheus.DefaultGatherer, "kubelet_node_name"); err != nil || n != 0 {
		t.Errorf("the default registry has %d kubelet_node_name series (%v), want 0", n, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering node_name twice in one registry did not panic")
		}
	}()
	a.RegisterNodeName("again")
}

// twoFamilies is a collector writing two families, as the cAdvisor and state collectors do.
type twoFamilies struct{ a, b *prometheus.Desc }

func (c twoFamilies) Describe(ch chan<- *prometheus.Desc) { ch <- c.a; ch <- c.b }
func (c twoFamilies) Collect(ch chan<- prometheus.Metric) {
	for _, v := range []string{"z", "y", "x"} {
		ch <- prometheus.MustNewConstMetric(c.a, prometheus.GaugeValue, 1, v)
		ch <- prometheus.MustNewConstMetric(c.b, prometheus.CounterValue, 2, v)
	}
}

// TestSubsetGathersWhatIsKept: a subset gathers the families it keeps exactly as the
// registry does (sorted, same values, no HELP), the others not at all, and sees a
// collector registered after it was made only when made again (Generation changes).
func TestSubsetGathersWhatIsKept(t *testing.T) {
	r := NewRegistry("")
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lat_seconds", Help: "h", Buckets: []float64{1, 2}}, []string{"op"})
	hist.WithLabelValues("b").Observe(1.5)
	hist.WithLabelValues("a").Observe(0.5)
	skipped := prometheus.NewCounter(prometheus.CounterOpts{Name: "skipped_total", Help: "s"})
	r.MustRegister(hist, skipped, twoFamilies{
		a: prometheus.NewDesc("two_a", "a", []string{"v"}, nil),
		b: prometheus.NewDesc("two_b_total", "b", []string{"v"}, nil),
	})
	keep := func(name string) bool { return name == "lat_seconds" || name == "two_b_total" || name == "later" }
	gen := r.Generation()
	got, err := r.Subset(keep).Gather()
	if err != nil {
		t.Fatal(err)
	}
	all, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, mf := range all {
		if keep(mf.GetName()) {
			mf.Help = nil
			want = append(want, mf.String())
		}
	}
	var have []string
	for _, mf := range got {
		have = append(have, mf.String())
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") || len(want) != 2 {
		t.Fatalf("subset gathered\n%s\nwant\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
	r.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "later", Help: "l"}))
	if r.Generation() == gen {
		t.Fatal("a registration left the generation as it was")
	}
	if got, _ := r.Subset(keep).Gather(); len(got) != 3 {
		t.Fatalf("a subset made after a registration gathered %d families, want 3", len(got))
	}
}

// TestSubsetsMergeAFamily: two registries of one target writing one family gather as one
// family, its metrics in label order, as prometheus.Gatherers merges them.
func TestSubsetsMergeAFamily(t *testing.T) {
	var regs []*Registry
	var want prometheus.Gatherers
	for _, v := range []string{"b", "a"} {
		r := NewRegistry("")
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "shared", Help: "s"}, []string{"v"})
		g.WithLabelValues(v).Set(1)
		r.MustRegister(g)
		regs = append(regs, r)
		want = append(want, r)
	}
	all := func(string) bool { return true }
	got, err := Subsets{regs[0].Subset(all), regs[1].Subset(all)}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exp, err := want.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exp[0].Help = nil
	if len(got) != 1 || got[0].String() != exp[0].String() {
		t.Fatalf("gathered %v, want %v", got, exp)
	}
}

// familyWriter writes the families asked for, counting what it builds.
type familyWriter struct {
	twoFamilies
	built *int
}

func (c familyWriter) CollectFamilies(ch chan<- prometheus.Metric, keep func(*prometheus.Desc) bool) {
	for _, d := range []*prometheus.Desc{c.a, c.b} {
		if keep == nil || keep(d) {
			*c.built++
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, 1, "v")
		}
	}
}

// TestSubsetAsksAFamilyCollector: a collector that can write some of its families is asked
// for those the subset keeps, and builds no other.
func TestSubsetAsksAFamilyCollector(t *testing.T) {
	built := 0
	r := NewRegistry("")
	r.MustRegister(familyWriter{twoFamilies{a: prometheus.NewDesc("fa", "a", []string{"v"}, nil), b: prometheus.NewDesc("fb", "b", []string{"v"}, nil)}, &built})
	got, err := r.Subset(func(name string) bool { return name == "fb" }).Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].GetName() != "fb" || built != 1 {
		t.Fatalf("gathered %v, built %d metrics, want fb alone, built 1", got, built)
	}
}
