package features

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	upstream "k8s.io/component-base/featuregate"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/release"
)

// TestEveryReleaseMatchesComponentBase loads each release's kubelet table into our gate
// and into component-base's (v0.37), emulating that release as its kubelet does, and
// compares what each makes of every gate: whether it exists, its stage, default and lock,
// its value, and the error (or none) of setting it to either value.
func TestEveryReleaseMatchesComponentBase(t *testing.T) {
	describe := func(spec any, ok, enabled bool) string {
		return fmt.Sprintf("%+v exists=%t enabled=%t", spec, ok, enabled)
	}
	compared := 0
	for _, r := range release.All() {
		theirSpecs := upstreamSpecs(t, VersionedSpecsOf(r))
		names := make([]string, 0, len(theirSpecs))
		for name := range theirSpecs {
			names = append(names, string(name))
		}
		sort.Strings(names)
		ours := NewFeatureGateFor(r)
		theirs := upstream.NewVersionedFeatureGate(r.Version())
		if err := theirs.AddVersioned(theirSpecs); err != nil {
			t.Fatal(err)
		}
		ourAll, theirAll := ours.GetAll(), theirs.GetAll()
		for _, name := range names {
			os, oOK := ourAll[featuregate.Feature(name)]
			ts, tOK := theirAll[upstream.Feature(name)]
			o := describe(fmt.Sprintf("%v/%v/%v", os.Default, os.PreRelease, os.LockToDefault), oOK, ours.Enabled(featuregate.Feature(name)))
			th := describe(fmt.Sprintf("%v/%v/%v", ts.Default, ts.PreRelease, ts.LockToDefault), tOK, theirs.Enabled(upstream.Feature(name)))
			if o != th {
				t.Errorf("%s at %s: ours %s, component-base %s", name, r, o, th)
			}
			for _, val := range []bool{true, false} {
				oc, tc := ours.DeepCopy(), theirs.DeepCopy()
				oErr, tErr := oc.SetFromMap(map[string]bool{name: val}), tc.SetFromMap(map[string]bool{name: val})
				if fmt.Sprint(oErr) != fmt.Sprint(tErr) || oc.Enabled(featuregate.Feature(name)) != tc.Enabled(upstream.Feature(name)) {
					t.Errorf("%s=%t at %s: ours %v (enabled %t), component-base %v (enabled %t)", name, val, r,
						oErr, oc.Enabled(featuregate.Feature(name)), tErr, tc.Enabled(upstream.Feature(name)))
				}
				compared++
			}
		}
	}
	if compared < 4*2*200 {
		t.Fatalf("compared %d settings; the kubelet's tables have fewer than 200 gates each?", compared)
	}
}

// upstreamSpecs converts our specs to component-base's.
func upstreamSpecs(t *testing.T, ours map[featuregate.Feature]featuregate.VersionedSpecs) map[upstream.Feature]upstream.VersionedSpecs {
	t.Helper()
	theirs := map[upstream.Feature]upstream.VersionedSpecs{}
	for name, specs := range ours {
		for _, s := range specs {
			spec := upstream.FeatureSpec{Default: s.Default, LockToDefault: s.LockToDefault,
				Version: s.Version, MinCompatibilityVersion: s.MinCompatibilityVersion}
			switch s.PreRelease {
			case featuregate.Alpha:
				spec.PreRelease = upstream.Alpha
			case featuregate.Beta:
				spec.PreRelease = upstream.Beta
			case featuregate.GA:
				spec.PreRelease = upstream.GA
			case featuregate.Deprecated:
				spec.PreRelease = upstream.Deprecated
			default:
				t.Fatalf("%s: stage %q", name, s.PreRelease)
			}
			theirs[upstream.Feature(name)] = append(theirs[upstream.Feature(name)], spec)
		}
	}
	return theirs
}

// TestGateOfEachRelease checks a kubelet gate of each release: its own table (a gate removed
// since is there, one added since is not), and what Enabled answers for a gate the simulator
// asks about that the release's table lacks.
func TestGateOfEachRelease(t *testing.T) {
	tests := []struct {
		release string
		name    featuregate.Feature
		exists  bool // in the release's table, at its stage there
		enabled bool
		set     string // the error of setting it to true; "" for none
	}{
		// Removed by 1.37 (GA and locked since 1.33): the older kubelets take it.
		{release: "1.34", name: "SidecarContainers", exists: true, enabled: true},
		{release: "1.36", name: "SidecarContainers", exists: true, enabled: true},
		{release: "1.37", name: "SidecarContainers", set: "unrecognized feature gate: SidecarContainers"},
		// Added in 1.36: unknown before, off as the code without it behaved.
		{release: "1.35", name: PLEGOnDemandRelist, set: "unrecognized feature gate: PLEGOnDemandRelist"},
		{release: "1.36", name: PLEGOnDemandRelist, exists: true, enabled: true},
		{release: "1.37", name: PLEGOnDemandRelist, exists: true, enabled: true},
		// Added in 1.35 with a history back to 1.0 (GA, on): a 1.34 kubelet did what the
		// gate on does, without the gate.
		{release: "1.34", name: ChangeContainerStatusOnKubeletRestart, enabled: true, set: "unrecognized feature gate: ChangeContainerStatusOnKubeletRestart"},
		{release: "1.35", name: ChangeContainerStatusOnKubeletRestart, exists: true},
		// Alpha in 1.35, beta (on) from 1.36; unknown to 1.34.
		{release: "1.34", name: RestartAllContainersOnContainerExits, set: "unrecognized feature gate: RestartAllContainersOnContainerExits"},
		{release: "1.35", name: RestartAllContainersOnContainerExits, exists: true},
		{release: "1.36", name: RestartAllContainersOnContainerExits, exists: true, enabled: true},
	}
	for _, tt := range tests {
		t.Run(tt.release+"/"+string(tt.name), func(t *testing.T) {
			r, err := release.Parse(tt.release)
			if err != nil {
				t.Fatal(err)
			}
			gate := NewFeatureGate()
			if err := gate.SetRelease(r); err != nil {
				t.Fatal(err)
			}
			if gate.Release() != r || gate.EmulationVersion().String() != r.Version().String() {
				t.Fatalf("gate of %s emulating %s, want %s", gate.Release(), gate.EmulationVersion(), r)
			}
			_, exists := gate.GetAll()[tt.name]
			enabled := false
			if exists || Simulated(tt.name) { // Enabled panics on a gate no table has, as upstream
				enabled = gate.Enabled(tt.name)
			}
			if exists != tt.exists || enabled != tt.enabled {
				t.Errorf("exists %t, enabled %t; want %t, %t", exists, enabled, tt.exists, tt.enabled)
			}
			// A copy answers as the gate, for the gates the release lacks too.
			for _, c := range []featuregate.MutableVersionedFeatureGate{gate.DeepCopy(), gate.DeepCopyAndReset()} {
				if exists || Simulated(tt.name) {
					if c.Enabled(tt.name) != tt.enabled {
						t.Errorf("a copy: enabled %t, want %t", c.Enabled(tt.name), tt.enabled)
					}
				}
			}
			err = gate.DeepCopy().SetFromMap(map[string]bool{string(tt.name): true})
			if fmt.Sprint(err) != fmt.Sprint(tt.set) && !(err == nil && tt.set == "") {
				t.Errorf("set to true: %v, want %q", err, tt.set)
			}
		})
	}
}

// TestSetReleaseOnlyBeforeAGateIsSet: the release decides which gates can be set, so it
// is chosen first.
func TestSetReleaseOnlyBeforeAGateIsSet(t *testing.T) {
	old, _ := release.Parse("1.35")
	gate := NewFeatureGate()
	if err := gate.SetRelease(release.Newest()); err != nil {
		t.Fatalf("the same release again: %v", err)
	}
	if err := gate.SetFromMap(map[string]bool{string(EventedPLEG): true}); err != nil {
		t.Fatal(err)
	}
	err := gate.SetRelease(old)
	if want := "cannot change the release of the feature gate from 1.37 to 1.35 after EventedPLEG was set"; fmt.Sprint(err) != want {
		t.Fatalf("SetRelease after a set: %v, want %q", err, want)
	}
	if gate.Release() != release.Newest() || !gate.Enabled(EventedPLEG) {
		t.Fatal("a refused SetRelease changed the gate")
	}
	emulating := NewFeatureGate()
	if err := emulating.SetEmulationVersion(old.Version()); err != nil {
		t.Fatal(err)
	}
	err = emulating.SetRelease(old)
	if want := "cannot change the release of the feature gate from 1.37 to 1.35: it emulates 1.35"; fmt.Sprint(err) != want {
		t.Fatalf("SetRelease after SetEmulationVersion: %v, want %q", err, want)
	}
}

// TestReleaseTablesRandomSequences runs random operation sequences on each release's own
// table in our gate and in component-base v0.37's: maps and flag strings of real gates
// (locked ones among them), AllAlpha and AllBeta, unknown names and bad values, and a change
// of emulation version; after each operation the errors and every gate's value agree.
func TestReleaseTablesRandomSequences(t *testing.T) {
	const sequences, steps = 40, 12
	rng := rand.New(rand.NewSource(1))
	ops := map[string]int{}
	for _, r := range release.All() {
		specs := VersionedSpecsOf(r)
		theirSpecs := upstreamSpecs(t, specs)
		var names []string
		for name := range specs {
			names = append(names, string(name))
		}
		sort.Strings(names)
		pick := func() string {
			switch n := rng.Intn(40); {
			case n == 0:
				return "AllAlpha"
			case n == 1:
				return "AllBeta"
			case n == 2:
				return "NoSuchGate"
			default:
				return names[rng.Intn(len(names))]
			}
		}
		for seq := 0; seq < sequences; seq++ {
			ours := NewFeatureGateFor(r)
			theirs := upstream.NewVersionedFeatureGate(r.Version())
			if err := theirs.AddVersioned(theirSpecs); err != nil {
				t.Fatal(err)
			}
			var trace []string
			for step := 0; step < steps; step++ {
				var oErr, tErr error
				switch op := rng.Intn(10); {
				case op < 5:
					m := map[string]bool{}
					for i := rng.Intn(3); i >= 0; i-- {
						m[pick()] = rng.Intn(2) == 0
					}
					trace = append(trace, fmt.Sprintf("SetFromMap(%v)", m))
					oErr, tErr = ours.SetFromMap(m), theirs.SetFromMap(m)
					ops["map"]++
				case op < 8:
					vals := []string{"true", "false", "true", "false", "maybe"}
					s := pick() + "=" + vals[rng.Intn(len(vals))]
					if rng.Intn(2) == 0 {
						s += "," + pick() + "=" + vals[rng.Intn(2)]
					}
					trace = append(trace, fmt.Sprintf("Set(%q)", s))
					oErr, tErr = ours.Set(s), theirs.Set(s)
					ops["set"]++
				default:
					v := version.MajorMinor(1, uint(r.Minor()-rng.Intn(4)))
					trace = append(trace, fmt.Sprintf("SetEmulationVersion(%s)", v))
					oErr, tErr = ours.SetEmulationVersion(v), theirs.SetEmulationVersion(v)
					ops["emulation"]++
				}
				if !sameErrors(oErr, tErr) {
					t.Fatalf("%s sequence %d: %s: ours %v, component-base %v\ntrace: %v", r, seq, trace[len(trace)-1], oErr, tErr, trace)
				}
				if oErr != nil {
					ops["error"]++
				} else {
					ops["ok"]++
				}
				ourAll, theirAll := ours.GetAll(), theirs.GetAll()
				for _, name := range names {
					_, oOK := ourAll[featuregate.Feature(name)]
					_, tOK := theirAll[upstream.Feature(name)]
					if oOK != tOK || oOK && ours.Enabled(featuregate.Feature(name)) != theirs.Enabled(upstream.Feature(name)) {
						t.Fatalf("%s sequence %d: %s after %v: ours exists %t, component-base exists %t", r, seq, name, trace, oOK, tOK)
					}
				}
			}
		}
	}
	// A run that agrees only because it never reached the paths that matter proves nothing.
	for _, what := range []string{"map", "set", "emulation", "error", "ok"} {
		if ops[what] < 50 {
			t.Errorf("only %d %s operations", ops[what], what)
		}
	}
	t.Logf("operations: %v", ops)
}

// sameErrors compares two gates' errors as component-base makes them: an aggregate's
// errors come in its map's order, so they are compared as sets; and it stops at the first
// unrecognized gate, keeping the errors of the keys it met before, so where there is one,
// that error alone must agree.
func sameErrors(ours, theirs error) bool {
	parts := func(err error) []string {
		if err == nil {
			return nil
		}
		var out []string
		if agg, ok := err.(interface{ Errors() []error }); ok {
			for _, e := range agg.Errors() {
				out = append(out, e.Error())
			}
		} else {
			out = []string{err.Error()}
		}
		sort.Strings(out)
		return out
	}
	unrecognized := func(ps []string) string {
		for _, p := range ps {
			if strings.HasPrefix(p, "unrecognized feature gate: ") {
				return p
			}
		}
		return ""
	}
	o, t := parts(ours), parts(theirs)
	if u := unrecognized(t); u != "" {
		return unrecognized(o) == u
	}
	return fmt.Sprint(o) == fmt.Sprint(t)
}
