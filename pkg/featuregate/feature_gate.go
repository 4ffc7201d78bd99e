package featuregate

import (
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/naming"
	"k8s.io/klog/v2"
)

// Feature is the name of a feature gate.
type Feature string

const (
	// flagName is the command-line flag registered by AddFlag.
	flagName = "feature-gates"

	// allAlphaGate toggles every Alpha gate that has no explicit value.
	// Explicit per-gate values always win: "AllAlpha=true,X=false" leaves X off.
	allAlphaGate Feature = "AllAlpha"
	// allBetaGate toggles every Beta gate that has no explicit value.
	allBetaGate Feature = "AllBeta"
)

// builtinFeatures are registered in every gate returned by NewFeatureGate.
var builtinFeatures = map[Feature]FeatureSpec{
	allAlphaGate: {Default: false, PreRelease: Alpha},
	allBetaGate:  {Default: false, PreRelease: Beta},
}

// FeatureSpec describes a registered feature.
type FeatureSpec struct {
	// Default is the enablement state used when the gate has not been set explicitly.
	Default bool
	// LockToDefault forbids setting the gate to any value other than Default.
	LockToDefault bool
	// PreRelease is the maturity level of the feature.
	PreRelease prerelease
}

type prerelease string

// Maturity levels for FeatureSpec.PreRelease.
const (
	Alpha = prerelease("ALPHA")
	Beta  = prerelease("BETA")
	GA    = prerelease("")

	// Deprecated marks a feature that is going away.
	Deprecated = prerelease("DEPRECATED")
)

// FeatureGate is the read-only view consumers use to ask whether a feature is on.
// All methods are safe for concurrent use and never block on writers.
type FeatureGate interface {
	// Enabled reports whether key is enabled. It panics if key was never registered.
	Enabled(key Feature) bool
	// KnownFeatures describes the registered non-GA, non-deprecated features, sorted.
	KnownFeatures() []string
	// DeepCopy returns an independent mutable copy, so that a candidate configuration can be
	// validated without touching the original.
	DeepCopy() MutableFeatureGate
}

// MutableFeatureGate registers features and parses their settings. It is meant for cmd/
// wiring and tests; everything else should depend on FeatureGate.
type MutableFeatureGate interface {
	FeatureGate

	// AddFlag registers the --feature-gates flag on fs. After it, Add and OverrideDefault fail.
	AddFlag(fs *pflag.FlagSet)
	// Set parses "key1=bool1,key2=bool2,..." and applies it with SetFromMap.
	// On any error nothing is applied.
	Set(value string) error
	// SetFromMap sets known features explicitly. On any error nothing is applied.
	SetFromMap(m map[string]bool) error
	// Add registers features. Re-adding an identical spec is a no-op; on any error nothing
	// is registered.
	Add(features map[Feature]FeatureSpec) error
	// GetAll returns a copy of the registered features and their specs.
	GetAll() map[Feature]FeatureSpec
	// AddMetrics records kubernetes_feature_enabled{name,stage} for every registered feature
	// into reg. Unlike component-base, which records into its global legacy registry, the
	// registry is supplied by the caller. Calling it again with the same reg refreshes the values.
	AddMetrics(reg prometheus.Registerer) error
	// OverrideDefault changes the default of a registered, unlocked feature. It fails once the
	// gate has been added to a flag set. Explicitly set values still take precedence.
	OverrideDefault(name Feature, override bool) error
}

// gateState is an immutable snapshot of a gate. Writers build a new snapshot under
// featureGate.mu and publish it atomically; readers load it without locking.
type gateState struct {
	// known maps every registered feature to its spec.
	known map[Feature]FeatureSpec
	// enabled holds the explicitly set values (including those filled in by AllAlpha/AllBeta).
	enabled map[Feature]bool
}

// featureGate implements MutableFeatureGate and pflag.Value.
type featureGate struct {
	// featureGateName identifies the gate in panics: the file:line that called NewFeatureGate.
	featureGateName string

	// state is the current snapshot; never nil.
	state atomic.Pointer[gateState]

	// mu serialises writers and guards closed.
	mu sync.Mutex
	// closed is set by AddFlag and makes Add and OverrideDefault fail.
	closed bool
}

var (
	_ MutableFeatureGate = (*featureGate)(nil)
	_ pflag.Value        = (*featureGate)(nil)
)

// thisFile is skipped when naming a gate after the code that created it.
var thisFile = func() string {
	_, file, _, _ := runtime.Caller(0)
	return file
}()

// NewFeatureGate returns a gate that knows only AllAlpha and AllBeta.
func NewFeatureGate() *featureGate {
	known := make(map[Feature]FeatureSpec, len(builtinFeatures))
	for name, spec := range builtinFeatures {
		known[name] = spec
	}
	f := &featureGate{featureGateName: naming.GetNameFromCallsite(thisFile)}
	f.state.Store(&gateState{known: known, enabled: map[Feature]bool{}})
	return f
}

// Set parses a string of the form "key1=value1,key2=value2,..." and applies it with
// SetFromMap. Empty segments are skipped, keys and values are trimmed, and a repeated key
// takes its last value. A parse error applies nothing.
func (f *featureGate) Set(value string) error {
	m := make(map[string]bool)
	for _, segment := range strings.Split(value, ",") {
		if segment == "" {
			continue
		}
		key, raw, found := strings.Cut(segment, "=")
		key = strings.TrimSpace(key)
		if !found {
			return fmt.Errorf("missing bool value for %s", key)
		}
		raw = strings.TrimSpace(raw)
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("invalid value of %s=%s, err: %v", key, raw, err)
		}
		m[key] = b
	}
	return f.SetFromMap(m)
}

// SetFromMap sets known features explicitly. Setting AllAlpha (AllBeta) also sets every
// Alpha (Beta) gate that has no explicit value yet. On error nothing is applied.
//
// Keys are processed in sorted order, so when several keys are invalid the error names the
// first of them; component-base walks the map in Go's random order instead.
func (f *featureGate) SetFromMap(m map[string]bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()

	cur := f.state.Load()
	enabled := copyEnabled(cur.enabled)

	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	for _, k := range keys {
		name, val := Feature(k), m[k]
		spec, ok := cur.known[name]
		if !ok {
			return fmt.Errorf("unrecognized feature gate: %s", name)
		}
		if spec.LockToDefault && spec.Default != val {
			return fmt.Errorf("cannot set feature gate %v to %v, feature is locked to %v", name, val, spec.Default)
		}
		enabled[name] = val

		switch name {
		case allAlphaGate:
			fillUnset(cur.known, enabled, Alpha, val)
		case allBetaGate:
			fillUnset(cur.known, enabled, Beta, val)
		}

		switch spec.PreRelease {
		case Deprecated:
			klog.Warningf("Setting deprecated feature gate %s=%t. It will be removed in a future release.", name, val)
		case GA:
			klog.Warningf("Setting GA feature gate %s=%t. It will be removed in a future release.", name, val)
		}
	}

	f.state.Store(&gateState{known: cur.known, enabled: enabled})

	// component-base formats its atomic.Value holder here, which prints as "{map[...]}";
	// keep the same text.
	klog.V(1).Infof("feature gates: {%v}", enabled)
	return nil
}

// fillUnset gives every feature of the given stage that has no entry in enabled the value val.
func fillUnset(known map[Feature]FeatureSpec, enabled map[Feature]bool, stage prerelease, val bool) {
	for name, spec := range known {
		if spec.PreRelease != stage {
			continue
		}
		if _, set := enabled[name]; !set {
			enabled[name] = val
		}
	}
}

// String returns the explicitly set gates as sorted "key=value" pairs joined by ",".
func (f *featureGate) String() string {
	enabled := f.state.Load().enabled
	pairs := make([]string, 0, len(enabled))
	for name, val := range enabled {
		pairs = append(pairs, fmt.Sprintf("%s=%t", name, val))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// Type implements pflag.Value.
func (f *featureGate) Type() string {
	return "mapStringBool"
}

// Add registers features. A name that is already registered with an identical spec is
// skipped; with a different spec the whole call fails and nothing is registered.
// Add fails once the gate has been added to a flag set.
func (f *featureGate) Add(features map[Feature]FeatureSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()

	if f.closed {
		return fmt.Errorf("cannot add a feature gate after adding it to the flag set")
	}

	cur := f.state.Load()
	known := copyKnown(cur.known)

	names := make([]Feature, 0, len(features))
	for name := range features {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })

	for _, name := range names {
		spec := features[name]
		if existing, found := known[name]; found {
			if existing == spec {
				continue
			}
			return fmt.Errorf("feature gate %q with different spec already exists: %v", name, existing)
		}
		known[name] = spec
	}

	f.state.Store(&gateState{known: known, enabled: cur.enabled})
	return nil
}

// OverrideDefault changes the registered default of name. It fails if name is not
// registered, its default is locked, or the gate has been added to a flag set.
func (f *featureGate) OverrideDefault(name Feature, override bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()

	if f.closed {
		return fmt.Errorf("cannot override default for feature %q: gates already added to a flag set", name)
	}

	cur := f.state.Load()
	spec, ok := cur.known[name]
	switch {
	case !ok:
		return fmt.Errorf("cannot override default: feature %q is not registered", name)
	case spec.LockToDefault:
		return fmt.Errorf("cannot override default: feature %q default is locked to %t", name, spec.Default)
	case spec.PreRelease == Deprecated:
		klog.Warningf("Overriding default of deprecated feature gate %s=%t. It will be removed in a future release.", name, override)
	case spec.PreRelease == GA:
		klog.Warningf("Overriding default of GA feature gate %s=%t. It will be removed in a future release.", name, override)
	}

	known := copyKnown(cur.known)
	spec.Default = override
	known[name] = spec
	f.state.Store(&gateState{known: known, enabled: cur.enabled})
	return nil
}

// GetAll returns a copy of the registered features and their specs.
func (f *featureGate) GetAll() map[Feature]FeatureSpec {
	return copyKnown(f.state.Load().known)
}

// Enabled reports whether key is enabled: its explicit value if set, else its default.
// It panics if key is not registered.
func (f *featureGate) Enabled(key Feature) bool {
	return f.state.Load().enabledOrPanic(key, f.featureGateName)
}

func (s *gateState) enabledOrPanic(key Feature, gateName string) bool {
	if val, ok := s.enabled[key]; ok {
		return val
	}
	if spec, ok := s.known[key]; ok {
		return spec.Default
	}
	panic(fmt.Errorf("feature %q is not registered in FeatureGate %q", key, gateName))
}

// AddFlag registers the --feature-gates flag on fs and closes the gate to further Add and
// OverrideDefault calls. The usage text lists KnownFeatures as of this call.
func (f *featureGate) AddFlag(fs *pflag.FlagSet) {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()

	usage := "A set of key=value pairs that describe feature gates for alpha/experimental features. " +
		"Options are:\n" + strings.Join(f.KnownFeatures(), "\n")
	fs.Var(f, flagName, usage)
}

// KnownFeatures returns "Name=true|false (STAGE - default=bool)" for every registered
// feature except GA and deprecated ones, sorted.
func (f *featureGate) KnownFeatures() []string {
	var known []string
	for name, spec := range f.state.Load().known {
		if spec.PreRelease == GA || spec.PreRelease == Deprecated {
			continue
		}
		known = append(known, fmt.Sprintf("%s=true|false (%s - default=%t)", name, spec.PreRelease, spec.Default))
	}
	sort.Strings(known)
	return known
}

// DeepCopy returns an independent gate with the same features, explicit values and closed
// state. As in component-base, the copy has an empty name, which shows in Enabled's panic.
func (f *featureGate) DeepCopy() MutableFeatureGate {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()

	// Snapshots are never modified after they are published, so the copy may share this
	// one; any write to either gate publishes a fresh snapshot.
	c := &featureGate{closed: closed}
	c.state.Store(f.state.Load())
	return c
}

func copyKnown(in map[Feature]FeatureSpec) map[Feature]FeatureSpec {
	out := make(map[Feature]FeatureSpec, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func copyEnabled(in map[Feature]bool) map[Feature]bool {
	out := make(map[Feature]bool, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
