package kubeletref

import (
	"strings"
	"testing"
)

// TestTable: the table is the v1.30 kubelet's, whole: the flags kubeadm and kind pass, the
// gates of every component the kubelet registers (its own, client-go's, logging's).
func TestTable(t *testing.T) {
	if !strings.Contains(Source(), "k8s.io/kubernetes@v1.30.") {
		t.Fatalf("source %q, want a v1.30 release", Source())
	}
	flags := map[string]Flag{}
	for _, f := range Flags() {
		flags[f.Name] = f
	}
	for _, tt := range []struct{ name, typ, field string }{
		{"bootstrap-kubeconfig", "string", ""},
		{"container-runtime-endpoint", "string", "containerRuntimeEndpoint"},
		{"pod-infra-container-image", "string", ""},
		{"fail-swap-on", "bool", "failSwapOn"},
		{"provider-id", "string", "providerID"},
		{"eviction-hard", "mapStringString", "evictionHard"},
		{"feature-gates", "mapStringBool", "featureGates"},
		{"v", "Level", ""},
	} {
		f, ok := flags[tt.name]
		if !ok || f.Type != tt.typ || f.Field != tt.field {
			t.Errorf("--%s: %+v (present %v), want type %s field %q", tt.name, f, ok, tt.typ, tt.field)
		}
	}
	gates := map[string]Gate{}
	for _, g := range Gates() {
		gates[g.Name] = g
	}
	for _, tt := range []Gate{
		{Name: "InPlacePodVerticalScaling", Default: false, PreRelease: "ALPHA"},
		{Name: "EventedPLEG", Default: false, PreRelease: "ALPHA"},
		{Name: "PodHostIPs", Default: true, PreRelease: "", LockToDefault: true},
		{Name: "ContextualLogging", Default: true, PreRelease: "BETA"},
		{Name: "WatchListClient", Default: false, PreRelease: "BETA"},
	} {
		if got := gates[tt.Name]; got != tt {
			t.Errorf("gate %s: %+v, want %+v", tt.Name, got, tt)
		}
	}
	if len(flags) < 150 || len(gates) < 160 {
		t.Errorf("%d flags and %d gates: the v1.30 kubelet has 152 and 164", len(flags), len(gates))
	}
}
