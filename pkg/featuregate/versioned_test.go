package featuregate

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	upstream "k8s.io/component-base/featuregate"
	baseversion "k8s.io/component-base/version"
)

func TestDefaultKubeBinaryVersion(t *testing.T) {
	if DefaultKubeBinaryVersion != baseversion.DefaultKubeBinaryVersion {
		t.Errorf("DefaultKubeBinaryVersion = %s, component-base's is %s", DefaultKubeBinaryVersion, baseversion.DefaultKubeBinaryVersion)
	}
	if got := NewFeatureGate().EmulationVersion().String(); got != DefaultKubeBinaryVersion {
		t.Errorf("NewFeatureGate emulates %s, want %s", got, DefaultKubeBinaryVersion)
	}
	if got := NewFeatureGate().MinCompatibilityVersion().String(); got != "1.36" {
		t.Errorf("NewFeatureGate's minimum compatibility version %s, want 1.36", got)
	}
}

// versionedGate has a gate of each kind of life, as the kubelet's table has them.
func versionedGate(t *testing.T) *featureGate {
	t.Helper()
	f := NewFeatureGate()
	err := f.AddVersioned(map[Feature]VersionedSpecs{
		// Alpha 1.32, beta on 1.34, GA locked 1.36.
		"Graduated": {
			{Version: minor(32), PreRelease: Alpha},
			{Version: minor(34), Default: true, PreRelease: Beta},
			{Version: minor(36), Default: true, PreRelease: GA, LockToDefault: true},
		},
		// Introduced after the releases emulated below.
		"Future": {{Version: minor(38), PreRelease: Alpha}},
		"Alpha":  {{Version: minor(30), PreRelease: Alpha}},
		// On by default only once every peer is 1.37.
		"Compat": {
			{Version: minor(37), PreRelease: Beta},
			{Version: minor(37), Default: true, PreRelease: Beta, MinCompatibilityVersion: minor(37)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestEmulationVersion(t *testing.T) {
	tests := []struct {
		emulate, minCompat int // minors; minCompat 0: emulate-1
		set                map[string]bool
		wantErr            string
		want               map[Feature]bool
		wantKnown          []string // besides AllAlpha/AllBeta
	}{
		{
			emulate: 37,
			want:    map[Feature]bool{"Graduated": true, "Future": false, "Alpha": false, "Compat": false},
			wantKnown: []string{"Alpha=true|false (ALPHA - default=false)",
				"Compat=true|false (BETA - default=false), or Compat=true|false (BETA - default=true) if --min-compatibility-version>=1.37"},
		},
		{emulate: 37, minCompat: 37, want: map[Feature]bool{"Compat": true},
			wantKnown: []string{"Alpha=true|false (ALPHA - default=false)", "Compat=true|false (BETA - default=true)"}},
		{emulate: 33, want: map[Feature]bool{"Graduated": false, "Compat": false},
			wantKnown: []string{"Alpha=true|false (ALPHA - default=false)", "Graduated=true|false (ALPHA - default=false)"}},
		{emulate: 35, set: map[string]bool{"Graduated": false}, want: map[Feature]bool{"Graduated": false}},
		{emulate: 37, set: map[string]bool{"Graduated": false}, wantErr: "cannot set feature gate Graduated to false, feature is locked to true"},
		{emulate: 37, set: map[string]bool{"Future": true},
			wantErr: "cannot set feature gate Future to true, feature is PreAlpha at emulated version 1.37, min compatibility version 1.36"},
		{emulate: 38, set: map[string]bool{"Future": true}, want: map[Feature]bool{"Future": true}},
		// AllAlpha covers the gates alpha at the emulated version only.
		{emulate: 33, set: map[string]bool{"AllAlpha": true}, want: map[Feature]bool{"Graduated": true, "Alpha": true, "Future": false}},
		{emulate: 35, set: map[string]bool{"AllAlpha": true, "AllBeta": false}, want: map[Feature]bool{"Graduated": false, "Alpha": true}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("1.%d/%d %v", tt.emulate, tt.minCompat, tt.set), func(t *testing.T) {
			f := versionedGate(t)
			mc := minor(tt.emulate - 1)
			if tt.minCompat != 0 {
				mc = minor(tt.minCompat)
			}
			if err := f.SetEmulationVersionAndMinCompatibilityVersion(minor(tt.emulate), mc); err != nil {
				t.Fatal(err)
			}
			if err := f.SetFromMap(tt.set); errText(err) != errText(errorOrNil(tt.wantErr)) {
				t.Fatalf("SetFromMap(%v) = %v, want %q", tt.set, err, tt.wantErr)
			}
			for name, want := range tt.want {
				if got := f.Enabled(name); got != want {
					t.Errorf("Enabled(%s) = %v, want %v", name, got, want)
				}
			}
			if tt.wantKnown != nil {
				want := append([]string{"AllAlpha=true|false (ALPHA - default=false)", "AllBeta=true|false (BETA - default=false)"}, tt.wantKnown...)
				if got := f.KnownFeatures(); !reflect.DeepEqual(got, want) {
					t.Errorf("KnownFeatures() =\n %q\nwant\n %q", got, want)
				}
			}
			if _, ok := f.GetAll()["Future"]; ok != (tt.emulate >= 38) {
				t.Errorf("GetAll() lists Future: %v at %d", ok, tt.emulate)
			}
		})
	}
}

type stringError string

func (e stringError) Error() string { return string(e) }

func errorOrNil(s string) error {
	if s == "" {
		return nil
	}
	return stringError(s)
}

// TestSetEmulationVersionReappliesAndWarns: explicit values are re-applied at the new
// version, a failure changes nothing, and a changed value already asked for is logged.
func TestSetEmulationVersionReappliesAndWarns(t *testing.T) {
	log := captureKlog(t)
	f := versionedGate(t)
	if err := f.SetEmulationVersion(minor(35)); err != nil {
		t.Fatal(err)
	}
	if err := f.SetFromMap(map[string]bool{"Graduated": false}); err != nil {
		t.Fatal(err)
	}
	_ = f.Enabled("Graduated")
	_ = f.Enabled("Alpha")

	log.Reset()
	err := f.SetEmulationVersion(minor(36))
	if want := "cannot set feature gate Graduated to false, feature is locked to true"; errText(err) != want {
		t.Fatalf("SetEmulationVersion(1.36) = %v, want %q", err, want)
	}
	if got := f.EmulationVersion().String(); got != "1.35" || f.Enabled("Graduated") {
		t.Errorf("after a failed SetEmulationVersion: emulating %s, Graduated %v; want 1.35, false", got, f.Enabled("Graduated"))
	}
	wantLog := `"Set feature gate emulation" emulationVersion="1.36" minCompatibilityVersion="1.35"` + "\n" +
		`"Warning: SetEmulationVersionAndMinCompatibilityVersion will change already queried feature" featureGate="Graduated" oldValue=false newValue=true` + "\n"
	if got := log.String(); got != wantLog {
		t.Errorf("logged\n%s\nwant\n%s", got, wantLog)
	}

	if err := f.ResetFeatureValueToDefault("Graduated"); err != nil {
		t.Fatal(err)
	}
	if err := f.SetEmulationVersion(minor(36)); err != nil {
		t.Fatal(err)
	}
	if !f.Enabled("Graduated") || f.ExplicitlySet("Graduated") {
		t.Errorf("Graduated at 1.36: enabled %v, explicit %v; want true, false", f.Enabled("Graduated"), f.ExplicitlySet("Graduated"))
	}
	log.Reset()
	if err := f.SetEmulationVersion(minor(36)); err != nil || log.Len() != 0 {
		t.Errorf("setting the same version again: %v, logged %q; want nothing", err, log.String())
	}
}

// TestFailedSetIsRecorded: as in component-base, a bad value stays recorded and fails every
// later SetFromMap until it is gone (DeepCopyAndReset); ResetFeatureValueToDefault cannot
// remove it.
func TestFailedSetIsRecorded(t *testing.T) {
	f := versionedGate(t)
	if err := f.Set("Nope=true"); errText(err) != "unrecognized feature gate: Nope" {
		t.Fatalf("Set(Nope=true) = %v", err)
	}
	if err := f.Set("Alpha=true"); errText(err) != "unrecognized feature gate: Nope" {
		t.Errorf("Set(Alpha=true) after a bad name = %v, want the bad name again", err)
	}
	if err := f.ResetFeatureValueToDefault("Nope"); errText(err) != "feature:Nope was explicitly set, but not in enabled map" {
		t.Errorf("ResetFeatureValueToDefault(Nope) = %v", err)
	}
	if errs := f.Validate(); len(errs) != 1 {
		t.Errorf("Validate() = %v, want the bad name", errs)
	}
	c := f.DeepCopyAndReset()
	if err := c.Set("Alpha=true"); err != nil || !c.Enabled("Alpha") {
		t.Errorf("on a DeepCopyAndReset: Set(Alpha=true) = %v, enabled %v", err, c.Enabled("Alpha"))
	}
	if !c.EmulationVersion().EqualTo(f.EmulationVersion()) {
		t.Errorf("DeepCopyAndReset emulates %s, want %s", c.EmulationVersion(), f.EmulationVersion())
	}
}

func TestAddVersionedErrors(t *testing.T) {
	tests := []struct {
		name  string
		specs VersionedSpecs
		want  string
	}{
		{"no version", VersionedSpecs{{PreRelease: Alpha}}, `feature "X" did not provide a version`},
		{"patch version", VersionedSpecs{{Version: version.MustParse("1.30.1"), PreRelease: Alpha}}, `feature "X" specified patch version: 1.30.1`},
		{"decreasing", VersionedSpecs{{Version: minor(31), PreRelease: Alpha}, {Version: minor(30), PreRelease: Beta}},
			`feature "X" lists version transitions in decreasing order (1.30 < 1.31)`},
		{"no change", VersionedSpecs{{Version: minor(30), PreRelease: Alpha}, {Version: minor(31), PreRelease: Alpha}},
			`feature "X" lists transition without stability change (1.30 -> 1.31)`},
		{"regression", VersionedSpecs{{Version: minor(30), PreRelease: Beta}, {Version: minor(31), PreRelease: Alpha}},
			`feature "X" regresses stability from more stable level to ALPHA in 1.31`},
		{"unlock", VersionedSpecs{{Version: minor(30), PreRelease: GA, LockToDefault: true}, {Version: minor(31), PreRelease: Deprecated}},
			`feature "X" must not unlock after locking to default`},
		{"deprecated first", VersionedSpecs{{Version: minor(30), PreRelease: Deprecated}},
			`feature "X" introduced as deprecated must provide a 1.0 entry indicating initial state`},
		{"compat alone", VersionedSpecs{{Version: minor(30), PreRelease: Beta, MinCompatibilityVersion: minor(30)}},
			`feature "X" specified MinCompatibilityVersion: 1.30 without a preceding entry at the same Version without MinCompatibilityVersion set`},
		{"compat too new", VersionedSpecs{{Version: minor(30), PreRelease: Beta}, {Version: minor(30), Default: true, PreRelease: Beta, MinCompatibilityVersion: minor(31)}},
			`feature "X" MinCompatibilityVersion 1.31 greater than Version 1.30`},
		{"same version other stage", VersionedSpecs{{Version: minor(30), PreRelease: Alpha}, {Version: minor(30), PreRelease: Beta, MinCompatibilityVersion: minor(30)}},
			`feature "X" lists stability changes with the same version (ALPHA -> BETA)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours := NewFeatureGate().AddVersioned(map[Feature]VersionedSpecs{"X": tt.specs})
			theirs := upstream.NewFeatureGate().AddVersioned(toUpstreamVersioned(map[Feature]VersionedSpecs{"X": tt.specs}))
			if errText(ours) != tt.want || errText(theirs) != tt.want {
				t.Errorf("AddVersioned: ours %v, upstream %v, want %q", ours, theirs, tt.want)
			}
		})
	}
}

func TestOverrideDefaultAtVersion(t *testing.T) {
	f := versionedGate(t)
	if err := f.OverrideDefaultAtVersion("Graduated", false, minor(34)); err != nil {
		t.Fatal(err)
	}
	if err := f.SetEmulationVersion(minor(35)); err != nil {
		t.Fatal(err)
	}
	if f.Enabled("Graduated") {
		t.Error("Graduated on at 1.35 after overriding its 1.34 default to false")
	}
	for _, tt := range []struct {
		name Feature
		at   int
		want string
	}{
		{"Graduated", 36, `cannot override default: feature "Graduated" default is locked to true`},
		{"Future", 37, `cannot override default: feature "Future" is not available before version 1.37`},
	} {
		if err := f.OverrideDefaultAtVersion(tt.name, true, minor(tt.at)); errText(err) != tt.want {
			t.Errorf("OverrideDefaultAtVersion(%s, %d) = %v, want %q", tt.name, tt.at, err, tt.want)
		}
	}
}

// TestDependencies runs each case against component-base too: the oracle leaves
// dependencies out, because component-base checks them in random map order.
func TestDependencies(t *testing.T) {
	specs := map[Feature]FeatureSpec{
		"AlphaOff": {PreRelease: Alpha}, "AlphaOff2": {PreRelease: Alpha},
		"BetaOn": {Default: true, PreRelease: Beta}, "BetaOff": {PreRelease: Beta},
		"Locked": {Default: true, PreRelease: GA, LockToDefault: true}, "GAOn": {Default: true, PreRelease: GA},
	}
	tests := []struct {
		name    string
		deps    map[Feature][]Feature
		set     map[string]bool
		wantAdd string
		wantSet string
	}{
		{name: "alpha on alpha", deps: map[Feature][]Feature{"AlphaOff": {"AlphaOff2"}},
			set: map[string]bool{"AlphaOff": true}, wantSet: "AlphaOff is enabled, but depends on features that are disabled: [AlphaOff2]"},
		{name: "satisfied", deps: map[Feature][]Feature{"AlphaOff": {"AlphaOff2", "BetaOn"}}, set: map[string]bool{"AlphaOff": true, "AlphaOff2": true}},
		{name: "less stable", deps: map[Feature][]Feature{"BetaOff": {"AlphaOff"}}, wantAdd: "BETA feature BetaOff cannot depend on ALPHA feature AlphaOff at version 0.0"},
		{name: "default on needs on", deps: map[Feature][]Feature{"BetaOn": {"BetaOff"}}, wantAdd: "default-enabled feature BetaOn cannot depend on default-disabled feature BetaOff at version 0.0"},
		// GA prints as an empty stage.
		{name: "GA on beta", deps: map[Feature][]Feature{"Locked": {"BetaOn"}}, wantAdd: " feature Locked cannot depend on BETA feature BetaOn at version 0.0"},
		{name: "locked needs locked", deps: map[Feature][]Feature{"Locked": {"GAOn"}}, wantAdd: "locked-to-default feature Locked cannot depend on unlocked feature GAOn at version 0.0"},
		{name: "unknown", deps: map[Feature][]Feature{"Nope": {"BetaOn"}}, wantAdd: "cannot add dependency for unknown feature Nope"},
		{name: "unknown dependency", deps: map[Feature][]Feature{"BetaOn": {"Nope"}}, wantAdd: "cannot add dependency from BetaOn to unknown feature Nope"},
		{name: "self cycle", deps: map[Feature][]Feature{"AlphaOff": {"AlphaOff"}}, wantAdd: "cycle detected with feature AlphaOff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours := NewFeatureGate()
			theirs := upstream.NewFeatureGate()
			if err := ours.Add(specs); err != nil {
				t.Fatal(err)
			}
			if err := theirs.Add(toUpstreamSpecs(specs)); err != nil {
				t.Fatal(err)
			}
			theirDeps := map[upstream.Feature][]upstream.Feature{}
			for k, v := range tt.deps {
				for _, d := range v {
					theirDeps[upstream.Feature(k)] = append(theirDeps[upstream.Feature(k)], upstream.Feature(d))
				}
			}
			o, th := errText(ours.AddDependencies(tt.deps)), errText(theirs.AddDependencies(theirDeps))
			if o != th || o != errText(errorOrNil(tt.wantAdd)) {
				t.Fatalf("AddDependencies: ours %s, upstream %s, want %q", o, th, tt.wantAdd)
			}
			if tt.wantAdd != "" {
				return
			}
			if got := ours.Dependencies(); len(got) != len(tt.deps) {
				t.Errorf("Dependencies() = %v", got)
			}
			o, th = errText(ours.SetFromMap(tt.set)), errText(theirs.SetFromMap(tt.set))
			if o != th || o != errText(errorOrNil(tt.wantSet)) {
				t.Errorf("SetFromMap: ours %s, upstream %s, want %q", o, th, tt.wantSet)
			}
			ours.Close()
			if err := ours.AddDependencies(tt.deps); err == nil || !strings.Contains(err.Error(), "after adding it to the flag set") {
				t.Errorf("AddDependencies on a closed gate = %v", err)
			}
		})
	}
}
