package testing

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
)

// overrides records, per feature, the name of the test that currently overrides it, so that
// an override leaking out of a parallel subtest is reported.
var (
	overridesMu sync.Mutex
	overrides   = map[featuregate.Feature]string{}
)

// SetFeatureGateDuringTest sets f to value on gate for the duration of tb and restores the
// previous value with tb.Cleanup. gate must also implement featuregate.MutableFeatureGate.
// Setting AllAlpha or AllBeta also sets, and later restores, every Alpha or Beta gate.
//
// It fails the test if it cannot set or restore the gate, and fatally if another test that
// is not an ancestor of tb holds an override of f (for example a subtest that called
// t.Parallel). The returned function does nothing; it exists so that the idiom of
// component-base v0.30 and older, "defer SetFeatureGateDuringTest(...)()", keeps compiling
// (v0.37's returns nothing).
func SetFeatureGateDuringTest(tb testing.TB, gate featuregate.FeatureGate, f featuregate.Feature, value bool) func() {
	tb.Helper()
	releaseOverride := claimOverride(tb, f)
	original := gate.Enabled(f)
	mutable := gate.(featuregate.MutableFeatureGate)

	// For AllAlpha/AllBeta set each affected gate individually: each call registers its
	// own cleanup, so every gate gets its own original value back afterwards.
	if f == "AllAlpha" || f == "AllBeta" {
		stage := featuregate.Alpha
		if f == "AllBeta" {
			stage = featuregate.Beta
		}
		for name, spec := range mutable.GetAll() {
			if name == "AllAlpha" || name == "AllBeta" || spec.PreRelease != stage {
				continue
			}
			SetFeatureGateDuringTest(tb, gate, name, value)
		}
	}

	// A gate that was not set explicitly is reset rather than set back to its value, so
	// that the test leaves no explicit value behind: the versioned gate re-applies explicit
	// values at every SetEmulationVersion, where a stale one could be locked or unknown.
	versioned, _ := gate.(featuregate.MutableVersionedFeatureGate)
	wasExplicit := versioned == nil || versioned.ExplicitlySet(f)

	if err := mutable.Set(fmt.Sprintf("%s=%v", f, value)); err != nil {
		tb.Errorf("error setting %s=%v: %v", f, value, err)
	}

	tb.Cleanup(func() {
		tb.Helper()
		releaseOverride()
		if err := mutable.Set(fmt.Sprintf("%s=%v", f, original)); err != nil {
			tb.Errorf("error restoring %s=%v: %v", f, original, err)
		}
		if !wasExplicit {
			if err := versioned.ResetFeatureValueToDefault(f); err != nil {
				tb.Errorf("error resetting %s: %v", f, err)
			}
		}
	})
	return func() {}
}

// claimOverride records tb as the overrider of f and returns the function that hands the
// override back to the previous holder.
func claimOverride(tb testing.TB, f featuregate.Feature) func() {
	tb.Helper()
	overridesMu.Lock()
	defer overridesMu.Unlock()

	previous := overrides[f]
	if previous != "" && !sameTestOrSubtest(tb, previous) {
		tb.Fatalf("Detected parallel setting of a feature gate by both %q and %q", previous, tb.Name())
	}
	overrides[f] = tb.Name()

	return func() {
		tb.Helper()
		overridesMu.Lock()
		defer overridesMu.Unlock()
		if holder := overrides[f]; holder != tb.Name() {
			tb.Fatalf("Detected parallel setting of a feature gate between both %q and %q", holder, tb.Name())
		}
		overrides[f] = previous
	}
}

// sameTestOrSubtest reports whether tb is the test named testName or one of its subtests.
func sameTestOrSubtest(tb testing.TB, testName string) bool {
	return tb.Name() == testName || strings.HasPrefix(tb.Name(), testName+"/")
}
