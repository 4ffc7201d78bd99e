package featuregate

import (
	"fmt"
	"io"
	"reflect"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
)

const (
	testAlphaGate Feature = "TestAlpha"
	testBetaGate  Feature = "TestBeta"
)

// newTestGate returns a gate with specs added, failing the test on error.
func newTestGate(t *testing.T, specs map[Feature]FeatureSpec) *featureGate {
	t.Helper()
	f := NewFeatureGate()
	if err := f.Add(specs); err != nil {
		t.Fatalf("Add: %v", err)
	}
	return f
}

func explicit(f *featureGate) map[Feature]bool { return f.state.Load().enabled }

func TestFeatureGateFlag(t *testing.T) {
	tests := []struct {
		arg string
		// want is the explicit state after parsing; absent keys must be unset.
		want    map[Feature]bool
		wantErr string
	}{
		{arg: "", want: map[Feature]bool{}},
		{arg: "fooBarBaz=true", want: map[Feature]bool{}, wantErr: "unrecognized feature gate: fooBarBaz"},
		{arg: "AllAlpha=false", want: map[Feature]bool{allAlphaGate: false, testAlphaGate: false}},
		{arg: "AllAlpha=true", want: map[Feature]bool{allAlphaGate: true, testAlphaGate: true}},
		{
			arg: "AllAlpha=banana", want: map[Feature]bool{},
			wantErr: `invalid value of AllAlpha=banana, err: strconv.ParseBool: parsing "banana": invalid syntax`,
		},
		{arg: "AllAlpha=false,TestAlpha=true", want: map[Feature]bool{allAlphaGate: false, testAlphaGate: true}},
		{arg: "TestAlpha=true,AllAlpha=false", want: map[Feature]bool{allAlphaGate: false, testAlphaGate: true}},
		{arg: "AllAlpha=true,TestAlpha=false", want: map[Feature]bool{allAlphaGate: true, testAlphaGate: false}},
		{arg: "TestAlpha=false,AllAlpha=true", want: map[Feature]bool{allAlphaGate: true, testAlphaGate: false}},
		{arg: "TestBeta=true,AllAlpha=false", want: map[Feature]bool{allAlphaGate: false, testAlphaGate: false, testBetaGate: true}},
		{arg: "AllBeta=false", want: map[Feature]bool{allBetaGate: false, testBetaGate: false}},
		{arg: "AllBeta=true", want: map[Feature]bool{allBetaGate: true, testBetaGate: true}},
		{
			arg: "AllBeta=banana", want: map[Feature]bool{},
			wantErr: `invalid value of AllBeta=banana, err: strconv.ParseBool: parsing "banana": invalid syntax`,
		},
		{arg: "AllBeta=false,TestBeta=true", want: map[Feature]bool{allBetaGate: false, testBetaGate: true}},
		{arg: "TestBeta=true,AllBeta=false", want: map[Feature]bool{allBetaGate: false, testBetaGate: true}},
		{arg: "AllBeta=true,TestBeta=false", want: map[Feature]bool{allBetaGate: true, testBetaGate: false}},
		{arg: "TestBeta=false,AllBeta=true", want: map[Feature]bool{allBetaGate: true, testBetaGate: false}},
		{arg: "TestAlpha=true,AllBeta=false", want: map[Feature]bool{allBetaGate: false, testAlphaGate: true, testBetaGate: false}},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			fs := pflag.NewFlagSet("testfeaturegateflag", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f := newTestGate(t, map[Feature]FeatureSpec{
				testAlphaGate: {Default: false, PreRelease: Alpha},
				testBetaGate:  {Default: false, PreRelease: Beta},
			})
			f.AddFlag(fs)

			err := fs.Parse([]string{fmt.Sprintf("--%s=%s", flagName, tc.arg)})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Parse: unexpected error %v", err)
			case tc.wantErr != "":
				want := fmt.Sprintf("invalid argument %q for \"--feature-gates\" flag: %s", tc.arg, tc.wantErr)
				if err == nil || err.Error() != want {
					t.Fatalf("Parse error = %v, want %s", err, want)
				}
			}
			if got := explicit(f); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("explicit gates = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFeatureGateOverride(t *testing.T) {
	f := newTestGate(t, map[Feature]FeatureSpec{
		testAlphaGate: {Default: false, PreRelease: Alpha},
		testBetaGate:  {Default: false, PreRelease: Beta},
	})
	steps := []struct {
		set  string
		want map[Feature]bool
	}{
		{set: "TestAlpha=true,TestBeta=true", want: map[Feature]bool{testAlphaGate: true, testBetaGate: true}},
		{set: "TestAlpha=false", want: map[Feature]bool{testAlphaGate: false, testBetaGate: true}},
	}
	for _, step := range steps {
		if err := f.Set(step.set); err != nil {
			t.Fatalf("Set(%q): %v", step.set, err)
		}
		for name, want := range step.want {
			if got := f.Enabled(name); got != want {
				t.Errorf("after Set(%q): Enabled(%s) = %v, want %v", step.set, name, got, want)
			}
		}
	}
}

func TestFeatureGateFlagDefaults(t *testing.T) {
	f := newTestGate(t, map[Feature]FeatureSpec{
		testAlphaGate: {Default: false, PreRelease: Alpha},
		testBetaGate:  {Default: true, PreRelease: Beta},
	})
	for name, want := range map[Feature]bool{testAlphaGate: false, testBetaGate: true, allAlphaGate: false, allBetaGate: false} {
		if got := f.Enabled(name); got != want {
			t.Errorf("Enabled(%s) = %v, want %v", name, got, want)
		}
	}
	if got := f.String(); got != "" {
		t.Errorf("String() = %q, want empty", got)
	}
}

func TestFeatureGateKnownFeatures(t *testing.T) {
	f := newTestGate(t, map[Feature]FeatureSpec{
		testAlphaGate:    {Default: false, PreRelease: Alpha},
		testBetaGate:     {Default: true, PreRelease: Beta},
		"TestGA":         {Default: true, PreRelease: GA},
		"TestDeprecated": {Default: false, PreRelease: Deprecated},
	})
	want := []string{
		"AllAlpha=true|false (ALPHA - default=false)",
		"AllBeta=true|false (BETA - default=false)",
		"TestAlpha=true|false (ALPHA - default=false)",
		"TestBeta=true|false (BETA - default=true)",
	}
	if got := f.KnownFeatures(); !reflect.DeepEqual(got, want) {
		t.Errorf("KnownFeatures() =\n%q\nwant\n%q", got, want)
	}
}

func TestFeatureGateSetFromMap(t *testing.T) {
	tests := []struct {
		name    string
		setmap  map[string]bool
		want    map[Feature]bool
		wantErr string
	}{
		{
			name:   "set TestAlpha and TestBeta true",
			setmap: map[string]bool{"TestAlpha": true, "TestBeta": true},
			want:   map[Feature]bool{testAlphaGate: true, testBetaGate: true},
		},
		{
			name:   "set TestBeta true",
			setmap: map[string]bool{"TestBeta": true},
			want:   map[Feature]bool{testAlphaGate: false, testBetaGate: true},
		},
		{
			name:   "set TestAlpha false",
			setmap: map[string]bool{"TestAlpha": false},
			want:   map[Feature]bool{testAlphaGate: false, testBetaGate: false},
		},
		{
			name:    "set unknown gate",
			setmap:  map[string]bool{"TestInvaild": true},
			want:    map[Feature]bool{testAlphaGate: false, testBetaGate: false},
			wantErr: "unrecognized feature gate: TestInvaild",
		},
		{
			name:   "set locked gates to their defaults",
			setmap: map[string]bool{"TestLockedTrue": true, "TestLockedFalse": false},
			want:   map[Feature]bool{testAlphaGate: false, testBetaGate: false, "TestLockedTrue": true, "TestLockedFalse": false},
		},
		{
			name:    "set locked true gate false",
			setmap:  map[string]bool{"TestLockedTrue": false},
			want:    map[Feature]bool{testAlphaGate: false, testBetaGate: false, "TestLockedTrue": true},
			wantErr: "cannot set feature gate TestLockedTrue to false, feature is locked to true",
		},
		{
			name:    "set locked false gate true",
			setmap:  map[string]bool{"TestLockedFalse": true},
			want:    map[Feature]bool{testAlphaGate: false, testBetaGate: false, "TestLockedFalse": false},
			wantErr: "cannot set feature gate TestLockedFalse to true, feature is locked to false",
		},
		{
			name:    "error applies nothing",
			setmap:  map[string]bool{"TestAlpha": true, "TestBeta": true, "TestLockedFalse": true},
			want:    map[Feature]bool{testAlphaGate: false, testBetaGate: false},
			wantErr: "cannot set feature gate TestLockedFalse to true, feature is locked to false",
		},
		{
			name:    "keys are not trimmed",
			setmap:  map[string]bool{" TestAlpha": true},
			want:    map[Feature]bool{testAlphaGate: false},
			wantErr: "unrecognized feature gate:  TestAlpha",
		},
	}
	captureKlog(t) // keeps the GA warnings out of the test output
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestGate(t, map[Feature]FeatureSpec{
				testAlphaGate:     {Default: false, PreRelease: Alpha},
				testBetaGate:      {Default: false, PreRelease: Beta},
				"TestLockedTrue":  {Default: true, PreRelease: GA, LockToDefault: true},
				"TestLockedFalse": {Default: false, PreRelease: GA, LockToDefault: true},
			})
			err := f.SetFromMap(tc.setmap)
			if got := errText(err); tc.wantErr != "" && got != tc.wantErr || tc.wantErr == "" && err != nil {
				t.Fatalf("SetFromMap(%v) error = %s, want %q", tc.setmap, got, tc.wantErr)
			}
			if err != nil && f.String() != "" {
				t.Errorf("failed SetFromMap left explicit gates %q", f.String())
			}
			for name, want := range tc.want {
				if got := f.Enabled(name); got != want {
					t.Errorf("Enabled(%s) = %v, want %v", name, got, want)
				}
			}
		})
	}
}

func TestFeatureGateSet(t *testing.T) {
	tests := []struct {
		name       string
		sets       []string
		wantErr    string // of the last Set
		wantString string
	}{
		{name: "empty", sets: []string{""}, wantString: ""},
		{name: "empty segments skipped", sets: []string{",,TestAlpha=true,,"}, wantString: "TestAlpha=true"},
		{name: "whitespace trimmed", sets: []string{"  TestAlpha \t=  1 , TestBeta= F"}, wantString: "TestAlpha=true,TestBeta=false"},
		{name: "last duplicate wins", sets: []string{"TestAlpha=true,TestAlpha=false"}, wantString: "TestAlpha=false"},
		{name: "missing value", sets: []string{"TestAlpha=true, TestBeta "}, wantErr: "missing bool value for TestBeta"},
		{name: "blank segment is a missing value", sets: []string{"TestAlpha=true, "}, wantErr: "missing bool value for "},
		{
			name: "value containing =", sets: []string{"TestAlpha=true=false"},
			wantErr: `invalid value of TestAlpha=true=false, err: strconv.ParseBool: parsing "true=false": invalid syntax`,
		},
		{
			name: "empty value", sets: []string{"TestAlpha="},
			wantErr: `invalid value of TestAlpha=, err: strconv.ParseBool: parsing "": invalid syntax`,
		},
		{
			name: "parse error applies nothing", sets: []string{"TestAlpha=true,TestBeta=maybe"},
			wantErr: `invalid value of TestBeta=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax`,
		},
		{
			name: "first parse error wins over unknown gate", sets: []string{"Nope=true,TestBeta"},
			wantErr: "missing bool value for TestBeta",
		},
		{name: "accumulates across calls", sets: []string{"TestAlpha=true", "TestBeta=true"}, wantString: "TestAlpha=true,TestBeta=true"},
		{name: "failed call keeps earlier values", sets: []string{"TestAlpha=true", "TestBeta=true,Nope=false"}, wantErr: "unrecognized feature gate: Nope", wantString: "TestAlpha=true"},
		{name: "several bad keys report the first in sorted order", sets: []string{"Zed=true,Abc=true"}, wantErr: "unrecognized feature gate: Abc"},
		// component-base treats gates filled in by AllAlpha as explicitly set, so turning
		// AllAlpha off again leaves them on.
		{name: "AllAlpha fills stick", sets: []string{"AllAlpha=true", "AllAlpha=false"}, wantString: "AllAlpha=false,TestAlpha=true"},
		{name: "explicit value survives AllBeta", sets: []string{"TestBeta=false", "AllBeta=true"}, wantString: "AllBeta=true,TestBeta=false"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestGate(t, map[Feature]FeatureSpec{
				testAlphaGate: {Default: false, PreRelease: Alpha},
				testBetaGate:  {Default: false, PreRelease: Beta},
			})
			var err error
			for _, s := range tc.sets {
				err = f.Set(s)
			}
			if got := errText(err); tc.wantErr != "" && got != tc.wantErr || tc.wantErr == "" && err != nil {
				t.Errorf("Set error = %s, want %q", got, tc.wantErr)
			}
			if got := f.String(); got != tc.wantString {
				t.Errorf("String() = %q, want %q", got, tc.wantString)
			}
		})
	}
}

func TestAllAlphaSpecialCases(t *testing.T) {
	f := newTestGate(t, map[Feature]FeatureSpec{
		testAlphaGate: {Default: false, PreRelease: Alpha},
		// As in component-base, AllAlpha fills in even a gate locked to false.
		"LockedAlpha": {Default: false, PreRelease: Alpha, LockToDefault: true},
	})
	if err := f.Set("AllAlpha=true"); err != nil {
		t.Fatal(err)
	}
	// Gates added later are not affected by an earlier AllAlpha.
	if err := f.Add(map[Feature]FeatureSpec{"LateAlpha": {Default: false, PreRelease: Alpha}}); err != nil {
		t.Fatal(err)
	}
	want := map[Feature]bool{testAlphaGate: true, "LockedAlpha": true, "LateAlpha": false, allBetaGate: false}
	for name, w := range want {
		if got := f.Enabled(name); got != w {
			t.Errorf("Enabled(%s) = %v, want %v", name, got, w)
		}
	}
}

func TestFeatureGateString(t *testing.T) {
	specs := map[Feature]FeatureSpec{
		"TestGA":      {Default: true, PreRelease: GA},
		testAlphaGate: {Default: false, PreRelease: Alpha},
		testBetaGate:  {Default: true, PreRelease: Beta},
	}
	tests := []struct {
		setmap map[string]bool
		want   string
	}{
		{setmap: map[string]bool{"TestAlpha": false}, want: "TestAlpha=false"},
		{setmap: map[string]bool{"TestAlpha": false, "TestBeta": true}, want: "TestAlpha=false,TestBeta=true"},
		{setmap: map[string]bool{"TestGA": true, "TestAlpha": false, "TestBeta": true}, want: "TestAlpha=false,TestBeta=true,TestGA=true"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			f := newTestGate(t, specs)
			if err := f.SetFromMap(tc.setmap); err != nil {
				t.Fatal(err)
			}
			if got := f.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFeatureGateAdd(t *testing.T) {
	tests := []struct {
		name    string
		adds    []map[Feature]FeatureSpec
		addFlag bool // before the last Add
		wantErr string
		want    map[Feature]FeatureSpec // in addition to the built-ins
	}{
		{
			name: "identical spec is a no-op",
			adds: []map[Feature]FeatureSpec{
				{"X": {Default: true, PreRelease: Beta}},
				{"X": {Default: true, PreRelease: Beta}},
			},
			want: map[Feature]FeatureSpec{"X": {Default: true, PreRelease: Beta}},
		},
		{
			name: "built-in with its own spec is a no-op",
			adds: []map[Feature]FeatureSpec{{allAlphaGate: {Default: false, PreRelease: Alpha}}},
			want: map[Feature]FeatureSpec{},
		},
		{
			name: "different spec fails and adds nothing",
			adds: []map[Feature]FeatureSpec{
				{"X": {Default: true, PreRelease: Beta}},
				{"X": {Default: false, PreRelease: Beta}, "Y": {PreRelease: Alpha}},
			},
			wantErr: `feature gate "X" with different spec already exists: [{true false BETA 0.0 <nil>}]`,
			want:    map[Feature]FeatureSpec{"X": {Default: true, PreRelease: Beta}},
		},
		{
			name:    "GA spec prints an empty stage",
			adds:    []map[Feature]FeatureSpec{{"X": {Default: true}}, {"X": {Default: true, LockToDefault: true}}},
			wantErr: `feature gate "X" with different spec already exists: [{true false  0.0 <nil>}]`,
			want:    map[Feature]FeatureSpec{"X": {Default: true}},
		},
		{
			name:    "built-in with a different spec",
			adds:    []map[Feature]FeatureSpec{{allBetaGate: {Default: true, PreRelease: Beta}}},
			wantErr: `feature gate "AllBeta" with different spec already exists: [{false false BETA 0.0 <nil>}]`,
			want:    map[Feature]FeatureSpec{},
		},
		{
			name:    "closed after AddFlag",
			adds:    []map[Feature]FeatureSpec{{"X": {PreRelease: Alpha}}},
			addFlag: true,
			wantErr: "cannot add a feature gate after adding it to the flag set",
			want:    map[Feature]FeatureSpec{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFeatureGate()
			var err error
			for i, add := range tc.adds {
				if i == len(tc.adds)-1 && tc.addFlag {
					f.AddFlag(pflag.NewFlagSet("test", pflag.ContinueOnError))
				}
				err = f.Add(add)
			}
			if got := errText(err); tc.wantErr != "" && got != tc.wantErr || tc.wantErr == "" && err != nil {
				t.Errorf("Add error = %s, want %q", got, tc.wantErr)
			}
			want := NewFeatureGate().GetAll()
			for k, v := range tc.want {
				v.Version = version.MajorMinor(0, 0) // Add's specs exist at every version
				want[k] = v
			}
			if got := f.GetAll(); !reflect.DeepEqual(got, want) {
				t.Errorf("GetAll() = %v, want %v", got, want)
			}
		})
	}
}

func TestFeatureGateOverrideDefault(t *testing.T) {
	tests := []struct {
		name    string
		specs   map[Feature]FeatureSpec
		addFlag bool
		feature Feature
		value   bool
		set     map[string]bool // applied after the override
		wantErr string
		// wantEnabled is checked when the override succeeded.
		wantEnabled bool
		wantKnown   []string
		wantLog     string
	}{
		{
			name: "override to false", specs: map[Feature]FeatureSpec{"F": {Default: true, PreRelease: Beta}},
			feature: "F", value: false, wantEnabled: false,
			wantKnown: []string{"AllAlpha=true|false (ALPHA - default=false)", "AllBeta=true|false (BETA - default=false)", "F=true|false (BETA - default=false)"},
		},
		{
			name: "override to true", specs: map[Feature]FeatureSpec{"F": {Default: false, PreRelease: Alpha}},
			feature: "F", value: true, wantEnabled: true,
			wantKnown: []string{"AllAlpha=true|false (ALPHA - default=false)", "AllBeta=true|false (BETA - default=false)", "F=true|false (ALPHA - default=true)"},
		},
		{
			name: "explicit value wins", specs: map[Feature]FeatureSpec{"F": {Default: true, PreRelease: Beta}},
			feature: "F", value: false, set: map[string]bool{"F": true}, wantEnabled: true,
		},
		{
			name: "GA warns", specs: map[Feature]FeatureSpec{"F": {Default: true}},
			feature: "F", value: false, wantEnabled: false,
			wantLog: "\"Warning: overriding default of GA feature gate. It will be removed in a future release.\" featureGate=\"F\" value=false\n",
		},
		{
			name: "deprecated warns", specs: map[Feature]FeatureSpec{"F": {Default: false, PreRelease: Deprecated}},
			feature: "F", value: true, wantEnabled: true,
			wantLog: "\"Warning: overriding default of deprecated feature gate. It will be removed in a future release.\" featureGate=\"F\" value=true\n",
		},
		{
			name: "locked", specs: map[Feature]FeatureSpec{"F": {Default: true, LockToDefault: true}},
			feature: "F", value: true, wantErr: `cannot override default: feature "F" default is locked to true`,
		},
		{
			name: "unknown", feature: "F", value: true, wantErr: `cannot override default: feature "F" is not registered`,
		},
		{
			name: "after AddFlag", specs: map[Feature]FeatureSpec{"F": {Default: true}}, addFlag: true,
			feature: "F", value: false, wantErr: `cannot override default for feature "F": gates already added to a flag set`,
		},
	}
	log := captureKlog(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestGate(t, tc.specs)
			if tc.addFlag {
				f.AddFlag(pflag.NewFlagSet("test", pflag.ContinueOnError))
			}
			log.Reset()
			err := f.OverrideDefault(tc.feature, tc.value)
			if got := log.String(); got != tc.wantLog {
				t.Errorf("logged %q, want %q", got, tc.wantLog)
			}
			if got := errText(err); tc.wantErr != "" && got != tc.wantErr || tc.wantErr == "" && err != nil {
				t.Fatalf("OverrideDefault error = %s, want %q", got, tc.wantErr)
			}
			if err != nil {
				return
			}
			if tc.set != nil {
				if err := f.SetFromMap(tc.set); err != nil {
					t.Fatal(err)
				}
			}
			if got := f.Enabled(tc.feature); got != tc.wantEnabled {
				t.Errorf("Enabled = %v, want %v", got, tc.wantEnabled)
			}
			if got := f.DeepCopy().Enabled(tc.feature); got != tc.wantEnabled {
				t.Errorf("DeepCopy().Enabled = %v, want %v", got, tc.wantEnabled)
			}
			if tc.wantKnown != nil && !reflect.DeepEqual(f.KnownFeatures(), tc.wantKnown) {
				t.Errorf("KnownFeatures() = %q, want %q", f.KnownFeatures(), tc.wantKnown)
			}
			// Re-adding the originally registered spec now conflicts.
			if err := f.Add(map[Feature]FeatureSpec{tc.feature: tc.specs[tc.feature]}); err == nil {
				t.Error("re-adding the original spec after an override succeeded, want an error")
			}
		})
	}
}

func TestSetWarnings(t *testing.T) {
	tests := []struct {
		name    string
		set     string
		wantLog string
	}{
		{name: "alpha is silent", set: "TestAlpha=true", wantLog: "\"Updated\" featureGates={\"TestAlpha\":true}\n"},
		{
			name: "GA",
			set:  "TestGA=false",
			wantLog: "\"Warning: setting GA feature gate. It will be removed in a future release.\" featureGate=\"TestGA\" value=false\n" +
				"\"Updated\" featureGates={\"TestGA\":false}\n",
		},
		{
			name: "deprecated",
			set:  "TestDeprecated=true",
			wantLog: "\"Warning: setting deprecated feature gate. It will be removed in a future release.\" featureGate=\"TestDeprecated\" value=true\n" +
				"\"Updated\" featureGates={\"TestDeprecated\":true}\n",
		},
		{name: "parse error logs nothing", set: "TestGA=x", wantLog: ""},
		{name: "unknown gate logs nothing", set: "Nope=true", wantLog: ""},
	}
	log := captureKlog(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestGate(t, map[Feature]FeatureSpec{
				testAlphaGate:    {PreRelease: Alpha},
				"TestGA":         {Default: true, PreRelease: GA},
				"TestDeprecated": {PreRelease: Deprecated},
			})
			log.Reset()
			_ = f.Set(tc.set)
			if got := log.String(); got != tc.wantLog {
				t.Errorf("logged %q, want %q", got, tc.wantLog)
			}
		})
	}
}

func TestEnabledPanicsOnUnknown(t *testing.T) {
	f := NewFeatureGate()
	// Since v0.31 component-base no longer names the gate in the message.
	const want = `feature "Nope" is not registered in FeatureGate`
	for name, gate := range map[string]FeatureGate{"gate": f, "deep copy": f.DeepCopy(), "reset copy": f.DeepCopyAndReset()} {
		t.Run(name, func(t *testing.T) {
			if got := catchPanic(func() { gate.Enabled("Nope") }); got != "panic(error): "+want {
				t.Errorf("panic = %q, want an error %q", got, want)
			}
		})
	}
}

func TestAddFlag(t *testing.T) {
	f := newTestGate(t, map[Feature]FeatureSpec{
		testAlphaGate: {PreRelease: Alpha},
		"TestGA":      {Default: true, PreRelease: GA},
	})
	if err := f.Set("TestAlpha=true"); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f.AddFlag(fs)
	fl := fs.Lookup("feature-gates")
	if fl == nil {
		t.Fatal("flag feature-gates not registered")
	}
	wantUsage := "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n" +
		"AllAlpha=true|false (ALPHA - default=false)\n" +
		"AllBeta=true|false (BETA - default=false)\n" +
		"TestAlpha=true|false (ALPHA - default=false)"
	got := []string{fl.Usage, fl.DefValue, fl.Value.Type()}
	want := []string{wantUsage, "TestAlpha=true", "mapStringBool"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flag (usage, default, type) = %q, want %q", got, want)
	}
}

func TestDeepCopy(t *testing.T) {
	f := newTestGate(t, map[Feature]FeatureSpec{testAlphaGate: {PreRelease: Alpha}, testBetaGate: {PreRelease: Beta}})
	if err := f.Set("TestAlpha=true"); err != nil {
		t.Fatal(err)
	}
	c := f.DeepCopy()
	if err := c.Set("TestAlpha=false,TestBeta=true"); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(map[Feature]FeatureSpec{"OnlyInCopy": {PreRelease: Alpha}}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.String(), "TestAlpha=true"; got != want {
		t.Errorf("original String() = %q, want %q", got, want)
	}
	if _, ok := f.GetAll()["OnlyInCopy"]; ok {
		t.Error("feature added to the copy leaked into the original")
	}
	if got, want := c.(*featureGate).String(), "TestAlpha=false,TestBeta=true"; got != want {
		t.Errorf("copy String() = %q, want %q", got, want)
	}

	// The closed state is copied too.
	f.AddFlag(pflag.NewFlagSet("test", pflag.ContinueOnError))
	if err := f.DeepCopy().Add(map[Feature]FeatureSpec{"X": {}}); err == nil {
		t.Error("Add on a copy of a closed gate succeeded, want an error")
	}
}

func TestGetAllReturnsCopy(t *testing.T) {
	f := NewFeatureGate()
	all := f.GetAll()
	all["Injected"] = FeatureSpec{Default: true}
	delete(all, allAlphaGate)
	if got, want := f.GetAll(), NewFeatureGate().GetAll(); !reflect.DeepEqual(got, want) || len(got) != 2 {
		t.Errorf("GetAll() after mutating a previous result = %v, want %v", got, want)
	}
	versioned := f.GetAllVersioned()
	versioned[allAlphaGate][0].Default = true
	if f.Enabled(allAlphaGate) {
		t.Error("changing a GetAllVersioned result changed the gate")
	}
}

// TestConcurrentAccess is meant for -race: readers never lock while writers replace state.
func TestConcurrentAccess(t *testing.T) {
	f := newTestGate(t, map[Feature]FeatureSpec{testAlphaGate: {PreRelease: Alpha}, testBetaGate: {PreRelease: Beta}})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				switch w {
				case 0:
					_ = f.Set(fmt.Sprintf("TestAlpha=%t", i%2 == 0))
				case 1:
					_ = f.Add(map[Feature]FeatureSpec{Feature(fmt.Sprintf("G%d", i)): {PreRelease: Beta}})
				case 2:
					_ = f.DeepCopy().SetFromMap(map[string]bool{"AllBeta": true})
				default:
					f.Enabled(testAlphaGate)
					f.Enabled(testBetaGate)
					_ = f.KnownFeatures()
					_ = f.String()
					_ = f.GetAll()
				}
			}
		}(w)
	}
	wg.Wait()
	if got := len(f.GetAll()); got != 204 {
		t.Errorf("len(GetAll()) = %d, want 204", got)
	}
}

func TestSetIsAtomicForEnabled(t *testing.T) {
	// Enabled must see either none or all of one Set.
	f := newTestGate(t, map[Feature]FeatureSpec{"X": {PreRelease: Alpha}, "Y": {PreRelease: Alpha}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 500; i++ {
			_ = f.Set(fmt.Sprintf("X=%t,Y=%t", i%2 == 0, i%2 == 0))
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		s := f.state.Load()
		x := enabledIn("X", s.enabled, s.known, s.emulation, s.minCompat)
		y := enabledIn("Y", s.enabled, s.known, s.emulation, s.minCompat)
		if x != y {
			t.Fatalf("snapshot has X=%v Y=%v", x, y)
		}
	}
}

func TestType(t *testing.T) {
	if got := NewFeatureGate().Type(); got != "mapStringBool" {
		t.Errorf("Type() = %q", got)
	}
}
