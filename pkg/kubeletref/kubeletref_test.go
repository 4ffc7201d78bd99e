package kubeletref

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/minikubelet/minikubelet/pkg/release"
)

// TestTable: the table is the v1.37 kubelet's, whole: the flags kubeadm and kind pass, the
// gates of every component the kubelet registers (its own, client-go's, logging's).
func TestTable(t *testing.T) {
	if !strings.Contains(Source(), "k8s.io/kubernetes@v1.37.") {
		t.Fatalf("source %q, want a v1.37 release", Source())
	}
	flags := map[string]Flag{}
	for _, f := range Flags() {
		flags[f.Name] = f
	}
	for _, tt := range []struct{ name, typ, field string }{
		{"bootstrap-kubeconfig", "string", ""},
		{"container-runtime-endpoint", "string", "containerRuntimeEndpoint"},
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
		{Name: "EventedPLEG", Default: false, PreRelease: "ALPHA", Versions: []GateVersion{
			{Version: "1.26", PreRelease: "ALPHA"},
		}},
		{Name: "InPlacePodVerticalScaling", Default: true, PreRelease: "", LockToDefault: true, Versions: []GateVersion{
			{Version: "1.27", PreRelease: "ALPHA"},
			{Version: "1.33", Default: true, PreRelease: "BETA"},
			{Version: "1.35", Default: true, PreRelease: "", LockToDefault: true},
		}},
		{Name: "ContextualLogging", Default: true, PreRelease: "BETA", Versions: []GateVersion{
			{Version: "1.24", PreRelease: "ALPHA"},
			{Version: "1.30", Default: true, PreRelease: "BETA"},
		}},
		{Name: "DRAFractionalCapacityRange", Default: false, PreRelease: "BETA", Versions: []GateVersion{
			{Version: "1.37", PreRelease: "BETA"},
			{Version: "1.37", Default: true, PreRelease: "BETA", MinCompatibilityVersion: "1.37"},
		}},
	} {
		if got := gates[tt.Name]; !reflect.DeepEqual(got, tt) {
			t.Errorf("gate %s:\n got  %+v\n want %+v", tt.Name, got, tt)
		}
	}
	// Gone by v1.37: GA since v1.30 and v1.33, then removed.
	for _, name := range []string{"PodHostIPs", "SidecarContainers"} {
		if _, ok := gates[name]; ok {
			t.Errorf("gate %s is in the table, v1.37 removed it", name)
		}
	}
	if len(flags) != 129 || len(gates) != 252 {
		t.Errorf("%d flags and %d gates: the v1.37 kubelet has 129 and 252", len(flags), len(gates))
	}
}

// TestGateVersions: in each release's table, every gate's life is well formed and its
// top-level spec is its spec at that release, which At finds.
func TestGateVersions(t *testing.T) {
	for _, r := range release.All() {
		for _, g := range For(r).Gates() {
			if len(g.Versions) == 0 {
				t.Errorf("%s: gate %s has no versions", r, g.Name)
				continue
			}
			for i := 1; i < len(g.Versions); i++ {
				prev, cur := g.Versions[i-1], g.Versions[i]
				if lessMinor(t, cur.Version, prev.Version) {
					t.Errorf("%s: gate %s: version %s after %s", r, g.Name, cur.Version, prev.Version)
				}
			}
			at, ok, err := g.At(r.String(), "")
			if err != nil || !ok {
				t.Errorf("%s: gate %s: At(%s) = %+v, %v, %v", r, g.Name, r, at, ok, err)
				continue
			}
			if top := (GateVersion{Default: g.Default, PreRelease: g.PreRelease, LockToDefault: g.LockToDefault}); at.Default != top.Default || at.PreRelease != top.PreRelease || at.LockToDefault != top.LockToDefault {
				t.Errorf("%s: gate %s: spec at %s %+v, top level %+v", r, g.Name, r, at, top)
			}
		}
	}
}

// TestEachReleasesTable: each release's table is taken from that release's kubelet, and
// differs from the newest's where the releases did.
func TestEachReleasesTable(t *testing.T) {
	tests := []struct {
		release      string
		flags, gates int
		has, lacks   []string // flags
		gate, noGate string
	}{
		{release: "1.34", flags: 148, gates: 206, has: []string{"pod-infra-container-image", "containerd"},
			gate: "SidecarContainers", noGate: "PLEGOnDemandRelist"},
		{release: "1.35", flags: 147, gates: 216, has: []string{"containerd"}, lacks: []string{"pod-infra-container-image"},
			gate: "ChangeContainerStatusOnKubeletRestart", noGate: "PLEGOnDemandRelist"},
		{release: "1.36", flags: 147, gates: 240, has: []string{"containerd"}, lacks: []string{"pod-infra-container-image"},
			gate: "PLEGOnDemandRelist", noGate: "DefaultPodSysctls"},
		{release: "1.37", flags: 129, gates: 252, lacks: []string{"pod-infra-container-image", "containerd"},
			gate: "DefaultPodSysctls", noGate: "SidecarContainers"},
	}
	if len(tests) != len(release.All()) {
		t.Fatalf("%d releases tested, %d supported", len(tests), len(release.All()))
	}
	for _, tt := range tests {
		t.Run(tt.release, func(t *testing.T) {
			r, err := release.Parse(tt.release)
			if err != nil {
				t.Fatal(err)
			}
			table := For(r)
			if want := "k8s.io/kubernetes@" + r.KubeletVersion() + " cmd/kubelet"; table.Source() != want {
				t.Errorf("source %q, want %q", table.Source(), want)
			}
			if len(table.Flags()) != tt.flags || len(table.Gates()) != tt.gates {
				t.Errorf("%d flags, %d gates; want %d, %d", len(table.Flags()), len(table.Gates()), tt.flags, tt.gates)
			}
			for _, f := range tt.has {
				if _, ok := table.LookupFlag(f); !ok {
					t.Errorf("no --%s", f)
				}
			}
			for _, f := range tt.lacks {
				if _, ok := table.LookupFlag(f); ok {
					t.Errorf("--%s, which kubelet %s does not have", f, r)
				}
			}
			if _, ok := table.LookupGate(tt.gate); !ok {
				t.Errorf("no gate %s", tt.gate)
			}
			if _, ok := table.LookupGate(tt.noGate); ok {
				t.Errorf("gate %s, which kubelet %s does not have", tt.noGate, r)
			}
		})
	}
}

func lessMinor(t *testing.T, a, b string) bool {
	t.Helper()
	va, errA := version.ParseMajorMinor(a)
	vb, errB := version.ParseMajorMinor(b)
	if errA != nil || errB != nil {
		t.Fatalf("versions %q, %q: %v, %v", a, b, errA, errB)
	}
	return va.LessThan(vb)
}

func TestAt(t *testing.T) {
	g, ok := LookupGate("DRAFractionalCapacityRange")
	if !ok {
		t.Fatal("LookupGate(DRAFractionalCapacityRange): not found")
	}
	ipvs, _ := LookupGate("InPlacePodVerticalScaling")
	tests := []struct {
		name                 string
		gate                 Gate
		emulation, minCompat string
		want                 GateVersion
		wantOK               bool
		wantErr              bool
	}{
		{name: "before the first version", gate: ipvs, emulation: "1.26"},
		{name: "first version", gate: ipvs, emulation: "1.27", want: GateVersion{Version: "1.27", PreRelease: "ALPHA"}, wantOK: true},
		{name: "between versions", gate: ipvs, emulation: "1.34", want: GateVersion{Version: "1.33", Default: true, PreRelease: "BETA"}, wantOK: true},
		{name: "GA and locked", gate: ipvs, emulation: "1.37", want: GateVersion{Version: "1.35", Default: true, LockToDefault: true}, wantOK: true},
		{name: "min compat too low", gate: g, emulation: "1.37", want: GateVersion{Version: "1.37", PreRelease: "BETA"}, wantOK: true},
		{name: "min compat reached", gate: g, emulation: "1.37", minCompat: "1.37",
			want: GateVersion{Version: "1.37", Default: true, PreRelease: "BETA", MinCompatibilityVersion: "1.37"}, wantOK: true},
		{name: "bad emulation version", gate: g, emulation: "v1.x", wantErr: true},
		{name: "bad min compat", gate: g, emulation: "1.37", minCompat: "x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := tt.gate.At(tt.emulation, tt.minCompat)
			if (err != nil) != tt.wantErr || ok != tt.wantOK || got != tt.want {
				t.Errorf("At(%q, %q) = %+v, %v, %v; want %+v, %v, error %v", tt.emulation, tt.minCompat, got, ok, err, tt.want, tt.wantOK, tt.wantErr)
			}
		})
	}
	if _, ok := LookupGate("PodHostIPs"); ok {
		t.Error("LookupGate(PodHostIPs) found a gate v1.37 removed")
	}
}

func TestGatesReturnsCopies(t *testing.T) {
	Gates()[0].Versions[0].Default = !Gates()[0].Versions[0].Default
	g, _ := LookupGate(Gates()[0].Name)
	g.Versions[0].Version = "9.9"
	if a, b := Gates()[0], Gates()[0]; !reflect.DeepEqual(a, b) || a.Versions[0].Version == "9.9" {
		t.Error("changing a returned gate changed the table")
	}
}
