package featuregate

import (
	"testing"

	upstream "k8s.io/component-base/featuregate"
)

// fuzzSpecs covers every stage, both defaults and both kinds of lock.
var fuzzSpecs = map[Feature]FeatureSpec{
	"AlphaOff":  {Default: false, PreRelease: Alpha},
	"AlphaOn":   {Default: true, PreRelease: Alpha},
	"BetaOff":   {Default: false, PreRelease: Beta},
	"BetaOn":    {Default: true, PreRelease: Beta},
	"Stable":    {Default: true, PreRelease: GA},
	"Old":       {Default: false, PreRelease: Deprecated},
	"LockedOn":  {Default: true, PreRelease: GA, LockToDefault: true},
	"LockedOff": {Default: false, PreRelease: Alpha, LockToDefault: true},
}

// FuzzSet applies two Set calls to our gate and to component-base's and requires the same
// errors, klog output, String() and Enabled() for every known gate after each.
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
	} {
		f.Add(seed[0], seed[1])
	}
	h := newHarness(captureKlog(f))
	f.Fuzz(func(t *testing.T, first, second string) {
		p := &pair{ours: NewFeatureGate(), theirs: upstream.NewFeatureGate()}
		if err := h.compareAdd(p, fuzzSpecs); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{first, second} {
			if err := h.compareSet(p, s); err != nil {
				t.Fatal(err)
			}
			if err := h.checkState(p, []string{first, second, "Nope"}); err != nil {
				t.Fatalf("after Set(%q): %v", s, err)
			}
		}
	})
}
