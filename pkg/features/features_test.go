package features

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	featuregatetesting "github.com/minikubelet/minikubelet/pkg/featuregate/testing"
	"github.com/minikubelet/minikubelet/pkg/kubeletref"
)

// TestModelledGateSpecs pins the v1.37 specs of the gates the simulator models, which
// their comments quote: a regenerated table that changes one fails here, so the comment
// and the modelled behaviour get a look.
func TestModelledGateSpecs(t *testing.T) {
	tests := []struct {
		gate featuregate.Feature
		spec featuregate.FeatureSpec // Version: the minor of the spec in force in v1.37
	}{
		{EventedPLEG, featuregate.FeatureSpec{Default: false, PreRelease: featuregate.Alpha, Version: version.MajorMinor(1, 26)}},
		{PodReadyToStartContainersCondition, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 37)}},
		{GracefulNodeShutdown, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(1, 21)}},
		{RotateKubeletServerCertificate, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(1, 12)}},
		{KubeletFineGrainedAuthz, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 36)}},
		{KubeletCrashLoopBackOffMax, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(1, 35)}},
		{ReduceDefaultCrashLoopBackOffDecay, featuregate.FeatureSpec{Default: false, PreRelease: featuregate.Alpha, Version: version.MajorMinor(1, 33)}},
		{DisableNodeKubeProxyVersion, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Deprecated, LockToDefault: true, Version: version.MajorMinor(1, 36)}},
		{ContainerRestartRules, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(1, 35)}},
		{RestartAllContainersOnContainerExits, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(1, 36)}},
		{InPlacePodVerticalScaling, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 35)}},
		{InPlacePodLevelResourcesVerticalScaling, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(1, 36)}},
		{InPlacePodVerticalScalingInitContainers, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 37)}},
		{PodObservedGenerationTracking, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 35)}},
		{NodeDeclaredFeatures, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 37)}},
		{KubeletPSI, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 36)}},
		{ImageVolume, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 36)}},
		{SupplementalGroupsPolicy, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 35)}},
		{EnvFiles, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.Beta, Version: version.MajorMinor(1, 35)}},
		{ProcMountType, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 36)}},
		{UserNamespacesSupport, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 36)}},
		{ChangeContainerStatusOnKubeletRestart, featuregate.FeatureSpec{Default: false, PreRelease: featuregate.Deprecated, Version: version.MajorMinor(1, 35)}},
		{PLEGOnDemandRelist, featuregate.FeatureSpec{Default: true, PreRelease: featuregate.GA, LockToDefault: true, Version: version.MajorMinor(1, 37)}},
	}
	all := DefaultMutableFeatureGate.GetAll()
	for _, tt := range tests {
		t.Run(string(tt.gate), func(t *testing.T) {
			got, ok := all[tt.gate]
			if !ok {
				t.Fatalf("%s is not registered in DefaultMutableFeatureGate", tt.gate)
			}
			if !reflect.DeepEqual(got, tt.spec) {
				t.Errorf("spec of %s = %+v, want %+v", tt.gate, got, tt.spec)
			}
			if !Simulated(tt.gate) {
				t.Errorf("Simulated(%s) = false", tt.gate)
			}
			if DefaultFeatureGate.Enabled(tt.gate) != tt.spec.Default {
				t.Errorf("DefaultFeatureGate.Enabled(%s) = %t, want the default %t", tt.gate, !tt.spec.Default, tt.spec.Default)
			}
			// A locked gate accepts its default and rejects the other value with the
			// upstream message; an unlocked one accepts both.
			fresh := NewFeatureGate()
			err := fresh.SetFromMap(map[string]bool{string(tt.gate): !tt.spec.Default})
			if tt.spec.LockToDefault {
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

// TestGatesMatchKubernetes: every kubelet v1.37 gate is registered with exactly the specs
// by version the kubelet registers (pkg/kubeletref; `make kubelet-table` regenerates it),
// every gate the simulator models or plans to is one of them, and at each release the
// next issue's --emulated-version accepts (1.34-1.37) the gate answers with the table's
// spec of that release.
func TestGatesMatchKubernetes(t *testing.T) {
	table := map[string]kubeletref.Gate{}
	for _, g := range kubeletref.Gates() {
		table[g.Name] = g
	}
	for _, name := range append(append([]featuregate.Feature(nil), modelled...), planned...) {
		if _, ok := table[string(name)]; !ok {
			t.Errorf("%s is not a gate of %s", name, kubeletref.Source())
		}
	}

	gate := NewFeatureGate()
	registered := gate.GetAllVersioned()
	if got, want := len(registered), len(table)+2; got != want { // + AllAlpha, AllBeta
		t.Errorf("%d gates registered, want the table's %d and AllAlpha, AllBeta", got, want)
	}
	for name, g := range table {
		specs, ok := registered[featuregate.Feature(name)]
		if !ok {
			t.Errorf("the v1.37 gate %s is not registered", name)
			continue
		}
		// Registered specs are completed, as the table's are: compare them whole.
		if got := tableVersions(specs); !reflect.DeepEqual(got, g.Versions) {
			t.Errorf("%s: registered versions\n %+v\nthe table's\n %+v", name, got, g.Versions)
		}
	}

	for minor := uint(34); minor <= 37; minor++ {
		emu := version.MajorMinor(1, minor)
		t.Run(emu.String(), func(t *testing.T) {
			gate := NewFeatureGate()
			if err := gate.SetEmulationVersion(emu); err != nil {
				t.Fatalf("SetEmulationVersion(%s): %v", emu, err)
			}
			all := gate.GetAll()
			for name, g := range table {
				want, exists, err := g.At(emu.String(), "")
				if err != nil {
					t.Fatalf("%s.At(%s): %v", name, emu, err)
				}
				spec, registered := all[featuregate.Feature(name)]
				if registered != exists {
					t.Errorf("%s at %s: known %v, the table says %v", name, emu, registered, exists)
					continue
				}
				if !exists {
					continue
				}
				if got := tableVersion(spec); got != want {
					t.Errorf("%s at %s: spec %+v, the table's %+v", name, emu, got, want)
				}
				if gate.Enabled(featuregate.Feature(name)) != want.Default {
					t.Errorf("%s at %s: Enabled = %v, want the default %v", name, emu, !want.Default, want.Default)
				}
			}
		})
	}
}

func tableVersion(s featuregate.FeatureSpec) kubeletref.GateVersion {
	v := kubeletref.GateVersion{Version: s.Version.String(), Default: s.Default, PreRelease: string(s.PreRelease), LockToDefault: s.LockToDefault}
	if s.MinCompatibilityVersion != nil {
		v.MinCompatibilityVersion = s.MinCompatibilityVersion.String()
	}
	return v
}

func tableVersions(specs featuregate.VersionedSpecs) []kubeletref.GateVersion {
	var out []kubeletref.GateVersion
	for _, s := range specs {
		out = append(out, tableVersion(s))
	}
	return out
}

func TestVersionedSpecsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		gate kubeletref.Gate
		want string // the specs, printed
	}{
		{
			name: "inherited min compatibility version is dropped",
			gate: kubeletref.Gate{Name: "X", Versions: []kubeletref.GateVersion{
				{Version: "1.35", PreRelease: "BETA"},
				{Version: "1.35", Default: true, PreRelease: "BETA", MinCompatibilityVersion: "1.35"},
				{Version: "1.37", Default: true, PreRelease: "", LockToDefault: true, MinCompatibilityVersion: "1.35"},
			}},
			want: "[{false false BETA 1.35 <nil>} {true false BETA 1.35 1.35} {true true  1.37 <nil>}]",
		},
		{
			name: "stages",
			gate: kubeletref.Gate{Name: "X", Versions: []kubeletref.GateVersion{
				{Version: "1.0", Default: true}, {Version: "1.30", PreRelease: "DEPRECATED"},
			}},
			want: "[{true false  1.0 <nil>} {false false DEPRECATED 1.30 <nil>}]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specs, err := versionedSpecs(tt.gate)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%v", specs); got != tt.want {
				t.Errorf("versionedSpecs = %s, want %s", got, tt.want)
			}
			// AddVersioned completes them back into the table's list.
			g := featuregate.NewFeatureGate()
			if err := g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{"X": specs}); err != nil {
				t.Fatal(err)
			}
			if got := tableVersions(g.GetAllVersioned()["X"]); !reflect.DeepEqual(got, tt.gate.Versions) {
				t.Errorf("registered %+v, want %+v", got, tt.gate.Versions)
			}
		})
	}
	for _, bad := range []kubeletref.Gate{
		{Name: "Stage", Versions: []kubeletref.GateVersion{{Version: "1.30", PreRelease: "GAMMA"}}},
		{Name: "Version", Versions: []kubeletref.GateVersion{{Version: "one"}}},
		{Name: "Compat", Versions: []kubeletref.GateVersion{{Version: "1.30"}, {Version: "1.30", Default: true, MinCompatibilityVersion: "x"}}},
	} {
		if _, err := versionedSpecs(bad); err == nil {
			t.Errorf("versionedSpecs(%+v) succeeded, want an error", bad)
		}
	}
}

func TestKnownFeaturesListsNonGAGates(t *testing.T) {
	known := strings.Join(DefaultFeatureGate.KnownFeatures(), "\n")
	for _, want := range []string{
		"EventedPLEG=true|false (ALPHA - default=false)",
		"GracefulNodeShutdown=true|false (BETA - default=true)",
		"RotateKubeletServerCertificate=true|false (BETA - default=true)",
		// On by default only once every peer is v1.37.
		"DRAFractionalCapacityRange=true|false (BETA - default=false), or DRAFractionalCapacityRange=true|false (BETA - default=true) if --min-compatibility-version>=1.37",
	} {
		if !strings.Contains(known, want) {
			t.Errorf("KnownFeatures() lacks %q:\n%s", want, known)
		}
	}
	// GA gates are hidden, as upstream.
	if strings.Contains(known, string(PodReadyToStartContainersCondition)) {
		t.Errorf("KnownFeatures() lists the GA gate %s:\n%s", PodReadyToStartContainersCondition, known)
	}
}

func TestNewFeatureGateIsIndependent(t *testing.T) {
	a, b := NewFeatureGate(), NewFeatureGate()
	if err := a.SetFromMap(map[string]bool{string(EventedPLEG): true}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetEmulationVersion(version.MajorMinor(1, 34)); err != nil {
		t.Fatal(err)
	}
	if !a.Enabled(EventedPLEG) || b.Enabled(EventedPLEG) || DefaultFeatureGate.Enabled(EventedPLEG) {
		t.Errorf("setting one gate leaked: a=%t b=%t default=%t", a.Enabled(EventedPLEG), b.Enabled(EventedPLEG), DefaultFeatureGate.Enabled(EventedPLEG))
	}
	if got := b.EmulationVersion().String(); got != "1.37" {
		t.Errorf("b emulates %s after a moved to 1.34, want 1.37", got)
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
	if err := AddTo(NewFeatureGate()); err != nil {
		t.Errorf("AddTo over the same specs: %v, want a no-op", err)
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

// TestUnsimulatedGates: a v1.37 gate the simulator does not model is accepted with the
// kubelet's spec, a locked one refused with its message, a name v1.37 does not have is
// refused as the kubelet refuses it, and an emulated release knows its own gates only.
func TestUnsimulatedGates(t *testing.T) {
	tests := []struct {
		emulate string // "" for 1.37
		gates   map[string]bool
		wantErr string
		wantOn  featuregate.Feature
	}{
		{gates: map[string]bool{"EnvFiles": false, "InPlacePodVerticalScaling": true}},
		{gates: map[string]bool{"ContextualLogging": false, "WatchListClient": true}},
		{gates: map[string]bool{"AllAlpha": true}, wantOn: EventedPLEG},
		{gates: map[string]bool{"InPlacePodVerticalScaling": false}, wantErr: "cannot set feature gate InPlacePodVerticalScaling to false, feature is locked to true"},
		{gates: map[string]bool{"NoSuchGate": true}, wantErr: "unrecognized feature gate: NoSuchGate"},
		{gates: map[string]bool{"PodHostIPs": true}, wantErr: "unrecognized feature gate: PodHostIPs"},
		// Beta, not yet locked, in v1.34.
		{emulate: "1.34", gates: map[string]bool{"InPlacePodVerticalScaling": false, "PodReadyToStartContainersCondition": false}},
		{emulate: "1.34", gates: map[string]bool{"AllAlpha": true}, wantOn: KubeletCrashLoopBackOffMax}, // alpha in v1.34
		{emulate: "1.34", gates: map[string]bool{"InPlacePodLevelResourcesVerticalScaling": true},
			wantErr: "cannot set feature gate InPlacePodLevelResourcesVerticalScaling to true, feature is PreAlpha at emulated version 1.34, min compatibility version 1.33"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.emulate, tt.gates), func(t *testing.T) {
			g := NewFeatureGate()
			if tt.emulate != "" {
				if err := g.SetEmulationVersion(version.MustParse(tt.emulate)); err != nil {
					t.Fatal(err)
				}
			}
			err := g.SetFromMap(tt.gates)
			if tt.wantErr == "" && err != nil {
				t.Errorf("SetFromMap(%v): %v", tt.gates, err)
			}
			if tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Errorf("SetFromMap(%v) = %v, want %q", tt.gates, err, tt.wantErr)
			}
			if tt.wantOn != "" && !g.Enabled(tt.wantOn) {
				t.Errorf("%s is off, want on", tt.wantOn)
			}
		})
	}
	if Simulated(PodLevelResources) || !Simulated(EventedPLEG) {
		t.Error("Simulated: want EventedPLEG modelled and PodLevelResources not")
	}
}

// TestChangeContainerStatusOnKubeletRestartByRelease: the gate is on (GA since v1.0) up to
// v1.34, so an emulated v1.34 node flaps readiness on a kubelet restart as v1.30 did, and
// deprecated and off from v1.35; never locked, so either value can be set.
func TestChangeContainerStatusOnKubeletRestartByRelease(t *testing.T) {
	tests := []struct {
		emulate string
		want    bool
		stage   string // the spec's PreRelease: "" is GA
	}{
		{"1.34", true, ""},
		{"1.35", false, "DEPRECATED"},
		{"1.37", false, "DEPRECATED"},
	}
	for _, tt := range tests {
		t.Run(tt.emulate, func(t *testing.T) {
			g := NewFeatureGate()
			if err := g.SetEmulationVersion(version.MustParse(tt.emulate)); err != nil {
				t.Fatal(err)
			}
			if got := g.Enabled(ChangeContainerStatusOnKubeletRestart); got != tt.want {
				t.Errorf("Enabled = %t, want %t", got, tt.want)
			}
			if got := string(g.GetAll()[ChangeContainerStatusOnKubeletRestart].PreRelease); got != tt.stage {
				t.Errorf("stage %q, want %q", got, tt.stage)
			}
			if err := g.SetFromMap(map[string]bool{string(ChangeContainerStatusOnKubeletRestart): !tt.want}); err != nil {
				t.Errorf("setting it to %t: %v", !tt.want, err)
			}
			if got := g.Enabled(ChangeContainerStatusOnKubeletRestart); got != !tt.want {
				t.Errorf("Enabled = %t after setting %t", got, !tt.want)
			}
		})
	}
}
