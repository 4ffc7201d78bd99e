package featuregate

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	upstream "k8s.io/component-base/featuregate"
)

// fuzzSpecs covers every stage, both defaults, both kinds of lock, and the versioned
// cases: a gate that only exists from 1.38 (after the gate's 1.37), one GA and locked only
// from 1.36, one whose default depends on the minimum compatibility version.
var fuzzSpecs = map[Feature]VersionedSpecs{
	"AlphaOff":  {{Default: false, PreRelease: Alpha, Version: minor(30)}},
	"AlphaOn":   {{Default: true, PreRelease: Alpha, Version: minor(0)}},
	"BetaOff":   {{Default: false, PreRelease: Alpha, Version: minor(30)}, {Default: false, PreRelease: Beta, Version: minor(34)}},
	"BetaOn":    {{Default: false, PreRelease: Alpha, Version: minor(33)}, {Default: true, PreRelease: Beta, Version: minor(35)}},
	"Stable":    {{Default: true, PreRelease: Beta, Version: minor(20)}, {Default: true, PreRelease: GA, Version: minor(30)}},
	"Old":       {{Default: true, PreRelease: GA, Version: minor(0)}, {Default: false, PreRelease: Deprecated, Version: minor(35)}},
	"LockedOn":  {{Default: false, PreRelease: Beta, Version: minor(33)}, {Default: true, PreRelease: Beta, Version: minor(34)}, {Default: true, PreRelease: GA, LockToDefault: true, Version: minor(36)}},
	"LockedOff": {{Default: false, PreRelease: Alpha, LockToDefault: true, Version: minor(0)}},
	"Future":    {{Default: false, PreRelease: Alpha, Version: minor(38)}},
	"Compat":    {{Default: false, PreRelease: Beta, Version: minor(37)}, {Default: true, PreRelease: Beta, Version: minor(37), MinCompatibilityVersion: minor(37)}},
}

// FuzzSet applies two Set calls to our gate and to component-base's, then moves both to
// emulate 1.35 and back to 1.37 with a minimum compatibility version of 1.37, and
// requires the same errors, klog output, String() and Enabled() for every known gate
// after each step.
func FuzzSet(f *testing.F) {
	for _, seed := range [][2]string{
		{"", ""},
		{"AlphaOff=true", ""},
		{"fooBarBaz=true", "AlphaOn=false"},
		{"AllAlpha=true", "AllAlpha=false"},
		{"AllAlpha=banana", ""},
		{"AllAlpha=false,AlphaOff=true", "AlphaOff=false,AllAlpha=true"},
		{"AllBeta=true,BetaOn=false", "AllBeta=false"},
		{"LockedOn=false", "LockedOn=true"},
		{"LockedOff=true,Nope=true", "AllAlpha=true"},
		{"Stable=false,Old=true", "Old=false"},
		{" AlphaOff = 1 ,,BetaOff= T", "AlphaOff"},
		{"AlphaOff=true,AlphaOff=false", "=true"},
		{"a=b=c", " , "},
		{"AlphaOff=true=false", "BetaOn=0,BetaOn=1"},
		{"Future=true", "Future=false"},
		{"LockedOn=true", "Compat=true"},
		{"AllBeta=true", "BetaOn=false,Compat=false"},
	} {
		f.Add(seed[0], seed[1])
	}
	h := newHarness(captureKlog(f))
	f.Fuzz(func(t *testing.T, first, second string) {
		p := newPair(NewFeatureGate(), upstream.NewFeatureGate())
		if err := h.compareAdd(p, nil, fuzzSpecs); err != nil {
			t.Fatal(err)
		}
		extra := []string{first, second, "Nope"}
		for _, s := range []string{first, second} {
			if err := h.compareSet(p, s); err != nil {
				t.Fatal(err)
			}
			if err := h.checkState(p, extra); err != nil {
				t.Fatalf("after Set(%q): %v", s, err)
			}
		}
		for _, v := range []struct{ emu, mc *version.Version }{{minor(35), nil}, {minor(37), minor(37)}} {
			if err := h.compareSetEmulation(p, v.emu, v.mc); err != nil {
				t.Fatal(err)
			}
			if err := h.checkState(p, extra); err != nil {
				t.Fatalf("after SetEmulationVersion(%v, %v): %v", v.emu, v.mc, err)
			}
		}
	})
}
