package features

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	featuregatetesting "github.com/minikubelet/minikubelet/pkg/featuregate/testing"
)

func TestGateSpecs(t *testing.T) {
	tests := []struct {
		gate       featuregate.Feature
		spec       featuregate.FeatureSpec
		wantLocked bool
	}{
		{EventedPLEG, featuregate.FeatureSpec{Default: false, PreRelease: featuregate.Alpha}, false},
		{PodReadyToStartContainersCondition, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta}, false},
		{GracefulNodeShutdown, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta}, false},
		{SidecarContainers, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta}, false},
		{PodHostIPs, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true}, true},
	}
	all := DefaultMutableFeatureGate.GetAll()
	for _, tt := range tests {
		t.Run(string(tt.gate), func(t *testing.T) {
			got, ok := all[tt.gate]
			if !ok {
				t.Fatalf("%s is not registered in DefaultMutableFeatureGate", tt.gate)
			}
			if got != tt.spec {
				t.Errorf("spec of %s = %+v, want %+v", tt.gate, got, tt.spec)
			}
			if DefaultFeatureGate.Enabled(tt.gate) != tt.spec.Default {
				t.Errorf("DefaultFeatureGate.Enabled(%s) = %t, want the default %t", tt.gate, !tt.spec.Default, tt.spec.Default)
			}
			// A locked gate accepts its default and rejects the other value with the
			// upstream message; an unlocked one accepts both.
			fresh := NewFeatureGate()
			err := fresh.SetFromMap(map[string]bool{string(tt.gate): !tt.spec.Default})
			if tt.wantLocked {
				if err == nil || !strings.Contains(err.Error(), "feature is locked to") {
					t.Errorf("setting locked %s to %t: err = %v, want a locked error", tt.gate, !tt.spec.Default, err)
				}
			} else if err != nil {
				t.Errorf("setting %s to %t: %v", tt.gate, !tt.spec.Default, err)
			}
		})
	}
	if len(Specs()) != len(tests) {
		t.Errorf("Specs() has %d gates, the test knows %d: add the new gate here", len(Specs()), len(tests))
	}
}

func TestKnownFeaturesListsNonGAGates(t *testing.T) {
	known := strings.Join(DefaultFeatureGate.KnownFeatures(), "\n")
	for _, want := range []string{
		"EventedPLEG=true|false (ALPHA - default=false)",
		"GracefulNodeShutdown=true|false (BETA - default=true)",
		"PodReadyToStartContainersCondition=true|false (BETA - default=true)",
		"SidecarContainers=true|false (BETA - default=true)",
	} {
		if !strings.Contains(known, want) {
			t.Errorf("KnownFeatures() lacks %q:\n%s", want, known)
		}
	}
	// GA gates are hidden, as upstream.
	if strings.Contains(known, string(PodHostIPs)) {
		t.Errorf("KnownFeatures() lists the GA gate %s:\n%s", PodHostIPs, known)
	}
}

func TestNewFeatureGateIsIndependent(t *testing.T) {
	a, b := NewFeatureGate(), NewFeatureGate()
	if err := a.SetFromMap(map[string]bool{string(EventedPLEG): true}); err != nil {
		t.Fatal(err)
	}
	if !a.Enabled(EventedPLEG) || b.Enabled(EventedPLEG) || DefaultFeatureGate.Enabled(EventedPLEG) {
		t.Errorf("setting one gate leaked: a=%t b=%t default=%t", a.Enabled(EventedPLEG), b.Enabled(EventedPLEG), DefaultFeatureGate.Enabled(EventedPLEG))
	}
}

func TestAddToRejectsConflictingSpec(t *testing.T) {
	g := featuregate.NewFeatureGate()
	if err := g.Add(map[featuregate.Feature]featuregate.FeatureSpec{EventedPLEG: {Default: true, PreRelease: featuregate.Beta}}); err != nil {
		t.Fatal(err)
	}
	if err := AddTo(g); err == nil {
		t.Fatal("AddTo over a conflicting EventedPLEG spec succeeded, want an error")
	}
}

func TestSetFeatureGateDuringTestOnDefaultGate(t *testing.T) {
	t.Run("set", func(t *testing.T) {
		featuregatetesting.SetFeatureGateDuringTest(t, DefaultFeatureGate, EventedPLEG, true)
		if !DefaultFeatureGate.Enabled(EventedPLEG) {
			t.Fatal("EventedPLEG is off inside the override")
		}
	})
	if DefaultFeatureGate.Enabled(EventedPLEG) {
		t.Fatal("EventedPLEG stayed on after the test that set it")
	}
}

// upstreamGate is one row of testdata/kube_features.json (hack/gengates).
type upstreamGate struct {
	Name          string `json:"name"`
	Default       bool   `json:"default"`
	PreRelease    string `json:"preRelease"`
	LockToDefault bool   `json:"lockToDefault"`
}

// TestGatesMatchKubernetes checks every gate the simulator registers against the table of
// kubelet v1.30: the same default, stage and lock. `make gates` regenerates the table from
// k8s.io/kubernetes' pkg/features/kube_features.go.
func TestGatesMatchKubernetes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "kube_features.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Source string         `json:"source"`
		Gates  []upstreamGate `json:"gates"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatalf("testdata/kube_features.json: %v", err)
	}
	if !strings.Contains(table.Source, "k8s.io/kubernetes@v1.30.") {
		t.Fatalf("the table is from %q, want a v1.30 release", table.Source)
	}
	upstream := map[string]upstreamGate{}
	for _, g := range table.Gates {
		upstream[g.Name] = g
	}
	for name, spec := range Specs() {
		t.Run(string(name), func(t *testing.T) {
			want, ok := upstream[string(name)]
			if !ok {
				t.Fatalf("%s is not a gate of %s", name, table.Source)
			}
			got := upstreamGate{Name: string(name), Default: spec.Default, PreRelease: string(spec.PreRelease), LockToDefault: spec.LockToDefault}
			if got != want {
				t.Errorf("spec = %+v, upstream %+v", got, want)
			}
		})
	}
}
