package features

import (
	"fmt"
	"sort"
	"testing"

	upstream "k8s.io/component-base/featuregate"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/release"
)

// TestEveryReleaseMatchesComponentBase loads the kubelet's whole table into our gate and
// into component-base's (v0.37), emulates each release a node can be, and compares what
// each release makes of every gate: whether it exists, its stage, default and lock, its
// value, and the error (or none) of setting it to either value.
func TestEveryReleaseMatchesComponentBase(t *testing.T) {
	theirSpecs := map[upstream.Feature]upstream.VersionedSpecs{}
	for name, specs := range VersionedSpecs() {
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
			theirSpecs[upstream.Feature(name)] = append(theirSpecs[upstream.Feature(name)], spec)
		}
	}
	names := make([]string, 0, len(theirSpecs))
	for name := range theirSpecs {
		names = append(names, string(name))
	}
	sort.Strings(names)
	describe := func(spec any, ok, enabled bool) string {
		return fmt.Sprintf("%+v exists=%t enabled=%t", spec, ok, enabled)
	}
	compared := 0
	for _, r := range release.All() {
		ours := NewFeatureGate()
		theirs := upstream.NewVersionedFeatureGate(release.Newest().Version())
		if err := theirs.AddVersioned(theirSpecs); err != nil {
			t.Fatal(err)
		}
		if oErr, tErr := ours.SetEmulationVersion(r.Version()), theirs.SetEmulationVersion(r.Version()); fmt.Sprint(oErr) != fmt.Sprint(tErr) {
			t.Fatalf("%s: SetEmulationVersion: ours %v, component-base %v", r, oErr, tErr)
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
		t.Fatalf("compared %d settings; the kubelet's table has fewer than 200 gates?", compared)
	}
}
