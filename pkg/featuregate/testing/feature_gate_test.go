package testing

import (
	"fmt"
	gotest "testing"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
)

func newGate(t *gotest.T, specs map[featuregate.Feature]featuregate.FeatureSpec) featuregate.MutableFeatureGate {
	t.Helper()
	gate := featuregate.NewFeatureGate()
	if err := gate.Add(specs); err != nil {
		t.Fatalf("Add: %v", err)
	}
	return gate
}

func expect(t *gotest.T, gate featuregate.FeatureGate, want map[featuregate.Feature]bool) {
	t.Helper()
	for name, val := range want {
		if got := gate.Enabled(name); got != val {
			t.Errorf("Enabled(%s) = %v, want %v", name, got, val)
		}
	}
}

func TestSpecialGates(t *gotest.T) {
	gate := newGate(t, map[featuregate.Feature]featuregate.FeatureSpec{
		"alpha_default_on":         {PreRelease: featuregate.Alpha, Default: true},
		"alpha_default_on_set_off": {PreRelease: featuregate.Alpha, Default: true},
		"alpha_default_off":        {PreRelease: featuregate.Alpha, Default: false},
		"alpha_default_off_set_on": {PreRelease: featuregate.Alpha, Default: false},

		"beta_default_on":         {PreRelease: featuregate.Beta, Default: true},
		"beta_default_on_set_off": {PreRelease: featuregate.Beta, Default: true},
		"beta_default_off":        {PreRelease: featuregate.Beta, Default: false},
		"beta_default_off_set_on": {PreRelease: featuregate.Beta, Default: false},

		"stable_default_on":         {PreRelease: featuregate.GA, Default: true},
		"stable_default_on_set_off": {PreRelease: featuregate.GA, Default: true},
		"stable_default_off":        {PreRelease: featuregate.GA, Default: false},
		"stable_default_off_set_on": {PreRelease: featuregate.GA, Default: false},
	})
	for _, s := range []string{
		"alpha_default_on_set_off=false", "beta_default_on_set_off=false", "stable_default_on_set_off=false",
		"alpha_default_off_set_on=true", "beta_default_off_set_on=true", "stable_default_off_set_on=true",
	} {
		if err := gate.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}

	before := map[featuregate.Feature]bool{
		"AllAlpha": false, "AllBeta": false,
		"alpha_default_on": true, "alpha_default_on_set_off": false, "alpha_default_off": false, "alpha_default_off_set_on": true,
		"beta_default_on": true, "beta_default_on_set_off": false, "beta_default_off": false, "beta_default_off_set_on": true,
		"stable_default_on": true, "stable_default_on_set_off": false, "stable_default_off": false, "stable_default_off_set_on": true,
	}
	expect(t, gate, before)
	t.Cleanup(func() { expect(t, gate, before) })

	SetFeatureGateDuringTest(t, gate, "AllAlpha", true)
	expect(t, gate, map[featuregate.Feature]bool{
		"AllAlpha": true, "AllBeta": false,
		"alpha_default_on": true, "alpha_default_on_set_off": true, "alpha_default_off": true, "alpha_default_off_set_on": true,
		"beta_default_on": true, "beta_default_on_set_off": false, "beta_default_off": false, "beta_default_off_set_on": true,
		"stable_default_on": true, "stable_default_on_set_off": false, "stable_default_off": false, "stable_default_off_set_on": true,
	})

	SetFeatureGateDuringTest(t, gate, "AllBeta", true)
	expect(t, gate, map[featuregate.Feature]bool{
		"AllAlpha": true, "AllBeta": true,
		"alpha_default_on": true, "alpha_default_on_set_off": true, "alpha_default_off": true, "alpha_default_off_set_on": true,
		"beta_default_on": true, "beta_default_on_set_off": true, "beta_default_off": true, "beta_default_off_set_on": true,
		"stable_default_on": true, "stable_default_on_set_off": false, "stable_default_off": false, "stable_default_off_set_on": true,
	})
}

func TestRestoredAfterSubtest(t *gotest.T) {
	gate := newGate(t, map[featuregate.Feature]featuregate.FeatureSpec{
		"a": {PreRelease: featuregate.Alpha, Default: false},
		"b": {PreRelease: featuregate.Beta, Default: true},
	})
	tests := []struct {
		name    string
		feature featuregate.Feature
		value   bool
		during  map[featuregate.Feature]bool
	}{
		{name: "alpha on", feature: "a", value: true, during: map[featuregate.Feature]bool{"a": true, "b": true}},
		{name: "beta off", feature: "b", value: false, during: map[featuregate.Feature]bool{"a": false, "b": false}},
		{name: "all alpha", feature: "AllAlpha", value: true, during: map[featuregate.Feature]bool{"a": true, "b": true}},
		{name: "all beta off", feature: "AllBeta", value: false, during: map[featuregate.Feature]bool{"a": false, "b": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *gotest.T) {
			SetFeatureGateDuringTest(t, gate, tc.feature, tc.value)
			expect(t, gate, tc.during)
		})
		expect(t, gate, map[featuregate.Feature]bool{"a": false, "b": true, "AllAlpha": false, "AllBeta": false})
	}
}

func TestSetFeatureGateInTest(t *gotest.T) {
	gate := newGate(t, map[featuregate.Feature]featuregate.FeatureSpec{
		"feature": {PreRelease: featuregate.Alpha, Default: false},
	})
	expect(t, gate, map[featuregate.Feature]bool{"feature": false})

	defer SetFeatureGateDuringTest(t, gate, "feature", true)()
	defer SetFeatureGateDuringTest(t, gate, "feature", true)()
	expect(t, gate, map[featuregate.Feature]bool{"feature": true})

	t.Run("Subtest", func(t *gotest.T) {
		expect(t, gate, map[featuregate.Feature]bool{"feature": true})
	})
	t.Run("ParallelSubtest", func(t *gotest.T) {
		expect(t, gate, map[featuregate.Feature]bool{"feature": true})
		// t.Parallel resumes the parent; the gate must still be set when this resumes.
		t.Parallel()
		expect(t, gate, map[featuregate.Feature]bool{"feature": true})
	})
	expect(t, gate, map[featuregate.Feature]bool{"feature": true})

	t.Run("OverwriteInSubtest", func(t *gotest.T) {
		SetFeatureGateDuringTest(t, gate, "feature", false)
		expect(t, gate, map[featuregate.Feature]bool{"feature": false})
	})
	expect(t, gate, map[featuregate.Feature]bool{"feature": true})
}

func TestSetLockedGateFails(t *gotest.T) {
	gate := newGate(t, map[featuregate.Feature]featuregate.FeatureSpec{
		"locked": {PreRelease: featuregate.GA, Default: true, LockToDefault: true},
	})
	rec := &recordingT{T: t}
	t.Run("sub", func(t *gotest.T) {
		rec.T = t
		SetFeatureGateDuringTest(rec, gate, "locked", false)
	})
	want := "error setting locked=false: cannot set feature gate locked to false, feature is locked to true"
	if len(rec.errors) != 1 || rec.errors[0] != want {
		t.Errorf("errors = %q, want [%q]", rec.errors, want)
	}
	expect(t, gate, map[featuregate.Feature]bool{"locked": true})
}

func TestDetectLeakToMainTest(t *gotest.T) {
	t.Cleanup(resetOverrides)
	gate := newGate(t, map[featuregate.Feature]featuregate.FeatureSpec{
		"feature": {PreRelease: featuregate.Alpha, Default: false},
	})

	// A subtest that sets the gate and then calls t.Parallel leaks it to its parent.
	t.Run("LeakingSubtest", func(t *gotest.T) {
		fakeT := &recordingT{T: t}
		SetFeatureGateDuringTest(fakeT, gate, "feature", true)
		t.Parallel()
		// The parent's later override leaks in here.
		expect(t, gate, map[featuregate.Feature]bool{"feature": false})
	})
	expect(t, gate, map[featuregate.Feature]bool{"feature": true})
	fakeT := &recordingT{T: t}
	SetFeatureGateDuringTest(fakeT, gate, "feature", false)
	if !fakeT.fatalRecorded {
		t.Error("expected the leak to be reported as fatal")
	}
}

func TestDetectLeakToOtherSubtest(t *gotest.T) {
	t.Cleanup(resetOverrides)
	gate := newGate(t, map[featuregate.Feature]featuregate.FeatureSpec{
		"feature": {PreRelease: featuregate.Alpha, Default: false},
	})

	t.Run("Subtest", func(t *gotest.T) {
		fakeT := &recordingT{T: t}
		SetFeatureGateDuringTest(fakeT, gate, "feature", true)
		t.Parallel()
	})
	// The suffix makes sure a shared name prefix is not mistaken for a subtest.
	t.Run("SubtestSuffix", func(t *gotest.T) {
		expect(t, gate, map[featuregate.Feature]bool{"feature": true})
		fakeT := &recordingT{T: t}
		SetFeatureGateDuringTest(fakeT, gate, "feature", false)
		if !fakeT.fatalRecorded {
			t.Error("expected the leak to be reported as fatal")
		}
	})
}

func TestCannotDetectLeakFromSubtest(t *gotest.T) {
	t.Cleanup(resetOverrides)
	gate := newGate(t, map[featuregate.Feature]featuregate.FeatureSpec{
		"feature": {PreRelease: featuregate.Alpha, Default: false},
	})

	SetFeatureGateDuringTest(t, gate, "feature", false)
	t.Run("Subtest", func(t *gotest.T) {
		SetFeatureGateDuringTest(t, gate, "feature", true)
		t.Parallel()
	})
	// The subtest's value leaked, undetected, because the parent owns the override.
	expect(t, gate, map[featuregate.Feature]bool{"feature": true})
}

func resetOverrides() {
	overridesMu.Lock()
	defer overridesMu.Unlock()
	overrides = map[featuregate.Feature]string{}
}

// recordingT records Errorf and Fatalf instead of failing the test.
type recordingT struct {
	*gotest.T
	errors        []string
	fatalRecorded bool
}

func (r *recordingT) Errorf(format string, args ...any) {
	r.T.Helper()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
	r.T.Logf("[IGNORED] "+format, args...)
}

func (r *recordingT) Fatal(args ...any) {
	r.T.Helper()
	r.fatalRecorded = true
	r.T.Log(append([]any{"[IGNORED]"}, args...)...)
}

func (r *recordingT) Fatalf(format string, args ...any) {
	r.T.Helper()
	r.fatalRecorded = true
	r.T.Logf("[IGNORED] "+format, args...)
}

// TestLeavesNothingExplicit: a gate that was only defaulted before the override is not left
// explicitly set after it, so a later SetEmulationVersion does not re-apply a stale value.
func TestLeavesNothingExplicit(t *gotest.T) {
	gate := newGate(t, map[featuregate.Feature]featuregate.FeatureSpec{
		"a": {PreRelease: featuregate.Alpha, Default: false},
		"b": {PreRelease: featuregate.Beta, Default: true},
	})
	if err := gate.Set("b=false"); err != nil {
		t.Fatal(err)
	}
	t.Run("override", func(t *gotest.T) {
		SetFeatureGateDuringTest(t, gate, "a", true)
		SetFeatureGateDuringTest(t, gate, "b", true)
	})
	versioned := gate.(featuregate.MutableVersionedFeatureGate)
	if versioned.ExplicitlySet("a") || !versioned.ExplicitlySet("b") {
		t.Errorf("explicitly set after the test: a=%v (want false) b=%v (want true)", versioned.ExplicitlySet("a"), versioned.ExplicitlySet("b"))
	}
	expect(t, gate, map[featuregate.Feature]bool{"a": false, "b": false})
}
