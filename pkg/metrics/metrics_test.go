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
