package features

import (
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	featuregatetesting "github.com/minikubelet/minikubelet/pkg/featuregate/testing"
	"github.com/minikubelet/minikubelet/pkg/kubeletref"
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
		{RotateKubeletServerCertificate, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta}, false},
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
	if len(SimulatedSpecs()) != len(tests) {
		t.Errorf("SimulatedSpecs() has %d gates, the test knows %d: add the new gate here", len(SimulatedSpecs()), len(tests))
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

// TestGatesMatchKubernetes: every gate the simulator models has the spec kubelet v1.30
// gives it, and every v1.30 gate is registered, so --feature-gates takes what the kubelet
// takes (pkg/kubeletref; `make kubelet-table` regenerates it).
func TestGatesMatchKubernetes(t *testing.T) {
	upstream := map[string]kubeletref.Gate{}
	for _, g := range kubeletref.Gates() {
		upstream[g.Name] = g
	}
	for name, spec := range SimulatedSpecs() {
		want, ok := upstream[string(name)]
		if !ok {
			t.Errorf("%s is not a gate of %s", name, kubeletref.Source())
			continue
		}
		got := kubeletref.Gate{Name: string(name), Default: spec.Default, PreRelease: string(spec.PreRelease), LockToDefault: spec.LockToDefault}
		if got != want {
			t.Errorf("%s: spec %+v, upstream %+v", name, got, want)
		}
	}
	all := NewFeatureGate().GetAll()
	for name := range upstream {
		if _, ok := all[featuregate.Feature(name)]; !ok {
			t.Errorf("the v1.30 gate %s is not registered", name)
		}
	}
}

// TestUnsimulatedGates: a v1.30 gate the simulator does not model is accepted with the
// kubelet's spec, a locked one refused with its message, and a name v1.30 does not have is
// refused as the kubelet refuses it.
func TestUnsimulatedGates(t *testing.T) {
	tests := []struct {
		gates   map[string]bool
		wantErr string
	}{
		{map[string]bool{"InPlacePodVerticalScaling": true}, ""},
		{map[string]bool{"ContextualLogging": false, "WatchListClient": true}, ""},
		{map[string]bool{"AllAlpha": true}, ""},
		{map[string]bool{"APIListChunking": false}, "cannot set feature gate APIListChunking to false, feature is locked to true"},
		{map[string]bool{"NoSuchGate": true}, "unrecognized feature gate: NoSuchGate"},
	}
	for _, tt := range tests {
		g := NewFeatureGate()
		err := g.SetFromMap(tt.gates)
		if tt.wantErr == "" && err != nil {
			t.Errorf("SetFromMap(%v): %v", tt.gates, err)
		}
		if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("SetFromMap(%v) = %v, want %q", tt.gates, err, tt.wantErr)
		}
		if err == nil && tt.gates["InPlacePodVerticalScaling"] && !g.Enabled("InPlacePodVerticalScaling") {
			t.Error("InPlacePodVerticalScaling=true is not in effect")
		}
	}
	if Simulated("InPlacePodVerticalScaling") || !Simulated(EventedPLEG) {
		t.Error("Simulated: want EventedPLEG modelled and InPlacePodVerticalScaling not")
	}
}
