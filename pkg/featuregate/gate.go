package featuregate

import (
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
)

// gateState is an immutable snapshot of a gate. Writers build a new snapshot under
// featureGate.mu and publish it atomically; readers load it once, without locking, so that
// one Enabled call never mixes two configurations.
type gateState struct {
	// known maps every registered feature to its specs, completed by AddVersioned.
	known map[Feature]VersionedSpecs
	// enabled holds the resolved explicit values (including those AllAlpha/AllBeta filled in).
	enabled map[Feature]bool
	// raw holds what SetFromMap was given, unknown names too: it is re-applied whenever
	// the emulation version changes, and a bad entry keeps failing every later SetFromMap,
	// as in component-base.
	raw map[string]bool
	// deps maps a feature to the features it needs enabled, each list sorted.
	deps map[Feature][]Feature

	emulation *version.Version
	minCompat *version.Version
}

// with returns a shallow copy of s to change before publishing it.
func (s *gateState) with(change func(*gateState)) *gateState {
	n := *s
	change(&n)
	return &n
}

// featureGate implements MutableVersionedFeatureGate and pflag.Value.
type featureGate struct {
	// state is the current snapshot; never nil.
	state atomic.Pointer[gateState]
	// queried holds the features Enabled has answered since the last emulation change, so
	// that SetEmulationVersion can warn when it changes one of them. Copy on write.
	queried atomic.Pointer[map[Feature]struct{}]

	// mu serialises writers and guards closed.
	mu sync.Mutex
	// closed is set by Close and AddFlag and makes registration and OverrideDefault fail.
	closed bool

	// enabledGauge is the kubernetes_feature_enabled gauge AddMetrics built for the snapshot
	// enabledGaugeState, shared by every registry given while that snapshot stands: one gate
	// serves every node of a process, and a gauge per registry cost each node ~100 KiB (a
	// series per known feature). A new snapshot gets a new gauge, so a registry never sees
	// series of features a later snapshot no longer knows. Guarded by enabledGaugeMu.
	enabledGaugeMu    sync.Mutex
	enabledGaugeState *gateState
	enabledGauge      *prometheus.GaugeVec
}

var (
	_ MutableVersionedFeatureGate           = (*featureGate)(nil)
	_ MutableFeatureGateWithLogger          = (*featureGate)(nil)
	_ MutableVersionedFeatureGateWithLogger = (*featureGate)(nil)
	_ pflag.Value                           = (*featureGate)(nil)
)

// NewFeatureGate returns a gate that emulates DefaultKubeBinaryVersion and knows only
// AllAlpha and AllBeta.
func NewFeatureGate() *featureGate {
	return NewVersionedFeatureGate(version.MustParse(DefaultKubeBinaryVersion))
}

// NewVersionedFeatureGate returns a gate that emulates emulationVersion, with the minimum
// compatibility version one minor below it.
func NewVersionedFeatureGate(emulationVersion *version.Version) *featureGate {
	return NewVersionedFeatureGateWithMinCompatibility(emulationVersion, emulationVersion.SubtractMinor(1))
}

// NewVersionedFeatureGateWithMinCompatibility returns a gate with both versions given.
func NewVersionedFeatureGateWithMinCompatibility(emulationVersion, minCompatibilityVersion *version.Version) *featureGate {
	return newGate(&gateState{
		known:     builtinFeatures(),
		enabled:   map[Feature]bool{},
		raw:       map[string]bool{},
		deps:      map[Feature][]Feature{},
		emulation: emulationVersion,
		minCompat: minCompatibilityVersion,
	}, false)
}

func newGate(s *gateState, closed bool) *featureGate {
	f := &featureGate{closed: closed}
	f.state.Store(s)
	f.queried.Store(&map[Feature]struct{}{})
	return f
}

// specAt returns the spec of specs in force at emulation and minCompat (emulation minus one
// minor if nil): the last one not newer than emulation whose MinCompatibilityVersion, if
// any, minCompat reaches. It points into specs, so callers may change it in place. With no
// such spec the feature does not exist yet: a fresh PreAlpha spec, off.
func specAt(specs VersionedSpecs, emulation, minCompat *version.Version) *FeatureSpec {
	if minCompat == nil {
		minCompat = emulation.SubtractMinor(1)
	}
	for i := len(specs) - 1; i >= 0; i-- {
		s := &specs[i]
		if s.Version.GreaterThan(emulation) {
			continue
		}
		if s.MinCompatibilityVersion != nil && !minCompat.AtLeast(s.MinCompatibilityVersion) {
			continue
		}
		return s
	}
	return &FeatureSpec{Default: false, PreRelease: PreAlpha, Version: version.MajorMinor(0, 0)}
}

// enabledIn resolves key against an enabled map and the specs at the given versions. It
// panics if key is not registered.
func enabledIn(key Feature, enabled map[Feature]bool, known map[Feature]VersionedSpecs, emulation, minCompat *version.Version) bool {
	if v, ok := enabled[key]; ok {
		return v
	}
	if specs, ok := known[key]; ok {
		return specAt(specs, emulation, minCompat).Default
	}
	panic(fmt.Errorf("feature %q is not registered in FeatureGate", key))
}

// Enabled reports whether key is enabled: its explicit value if set, else the default of
// its spec at the emulation version. It panics if key is not registered.
func (f *featureGate) Enabled(key Feature) bool {
	s := f.state.Load()
	v := enabledIn(key, s.enabled, s.known, s.emulation, s.minCompat)
	f.recordQueried(key)
	return v
}

func (f *featureGate) recordQueried(key Feature) {
	for {
		cur := f.queried.Load()
		if _, ok := (*cur)[key]; ok {
			return
		}
		next := maps.Clone(*cur)
		next[key] = struct{}{}
		if f.queried.CompareAndSwap(cur, &next) {
			return
		}
	}
}

// EmulationVersion returns the version whose specs are in force.
func (f *featureGate) EmulationVersion() *version.Version { return f.state.Load().emulation }

// MinCompatibilityVersion returns the minimum compatibility version.
func (f *featureGate) MinCompatibilityVersion() *version.Version { return f.state.Load().minCompat }

// String returns the resolved explicit values as sorted "key=value" pairs joined by ",".
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
func (f *featureGate) Type() string { return "mapStringBool" }

// GetAll returns the features known at the emulation version with the spec in force there.
func (f *featureGate) GetAll() map[Feature]FeatureSpec {
	s := f.state.Load()
	out := make(map[Feature]FeatureSpec, len(s.known))
	for name, specs := range s.known {
		if spec := specAt(specs, s.emulation, s.minCompat); spec.PreRelease != PreAlpha {
			out[name] = *spec
		}
	}
	return out
}

// GetAllVersioned returns a copy of every registered feature's specs.
func (f *featureGate) GetAllVersioned() map[Feature]VersionedSpecs {
	return copyKnown(f.state.Load().known)
}

// Dependencies returns a copy of the registered dependencies.
func (f *featureGate) Dependencies() map[Feature][]Feature {
	return maps.Clone(f.state.Load().deps)
}

// ExplicitlySet reports whether name was given to SetFromMap (and not reset since).
func (f *featureGate) ExplicitlySet(name Feature) bool {
	_, ok := f.state.Load().raw[string(name)]
	return ok
}

// KnownFeatures returns "Name=true|false (STAGE - default=bool)" for every feature settable
// at the emulation version except GA and deprecated ones, sorted. A feature whose spec
// would differ were the minimum compatibility version raised to the emulation version
// lists both, joined by ", or ".
func (f *featureGate) KnownFeatures() []string {
	s := f.state.Load()
	var known []string
	for name, specs := range s.known {
		if name == allAlphaGate || name == allBetaGate {
			known = append(known, fmt.Sprintf("%s=true|false (%s - default=%t)", name, specs[0].PreRelease, specs[0].Default))
			continue
		}
		now := specAt(specs, s.emulation, s.minCompat)
		ifCompat := specAt(specs, s.emulation, s.emulation)
		if reflect.DeepEqual(now, ifCompat) {
			if h := now.HelpString(name, false); h != "" {
				known = append(known, h)
			}
			continue
		}
		var parts []string
		for _, h := range []string{now.HelpString(name, false), ifCompat.HelpString(name, true)} {
			if h != "" {
				parts = append(parts, h)
			}
		}
		if len(parts) > 0 {
			known = append(known, strings.Join(parts, ", or "))
		}
	}
	sort.Strings(known)
	return known
}

// DeepCopy returns an independent gate with the same features, values, versions,
// dependencies and closed state. Nothing counts as queried in the copy.
func (f *featureGate) DeepCopy() MutableVersionedFeatureGate {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Snapshots are never modified after they are published, so the copy may share this
	// one; any write to either gate publishes a fresh snapshot.
	return newGate(f.state.Load(), f.closed)
}

// DeepCopyAndReset returns an open gate with the same features, specs and versions, and
// nothing set, no dependencies, nothing queried.
func (f *featureGate) DeepCopyAndReset() MutableVersionedFeatureGate {
	s := f.state.Load()
	g := NewVersionedFeatureGateWithMinCompatibility(s.emulation, s.minCompat)
	g.state.Store(g.state.Load().with(func(n *gateState) { n.known = s.known }))
	return g
}

// AddFlag registers the --feature-gates flag on fs and closes the gate. The usage text
// lists KnownFeatures as of this call.
func (f *featureGate) AddFlag(fs *pflag.FlagSet) {
	f.Close()
	usage := "A set of key=value pairs that describe feature gates for alpha/experimental features. " +
		"Options are:\n" + strings.Join(f.KnownFeatures(), "\n")
	fs.Var(f, flagName, usage)
}

// Close makes later Add, AddVersioned, AddDependencies and OverrideDefault calls fail.
func (f *featureGate) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

// copyKnown copies the map and each spec slice (the versions they point to are never
// changed). An empty list copies as empty, not nil, which AddVersioned's equality check
// tells apart, as component-base's does.
func copyKnown(in map[Feature]VersionedSpecs) map[Feature]VersionedSpecs {
	out := make(map[Feature]VersionedSpecs, len(in))
	for k, v := range in {
		c := make(VersionedSpecs, len(v))
		copy(c, v)
		out[k] = c
	}
	return out
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
