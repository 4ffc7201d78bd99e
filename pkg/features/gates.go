package features

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/kubeletref"
	"github.com/minikubelet/minikubelet/pkg/release"
)

var (
	// DefaultMutableFeatureGate is the process-wide gate with every kubelet gate registered,
	// the newest release's until config.Load picks the emulated one. Only cmd/ (which
	// applies --feature-gates, the config file's featureGates and the emulated version) and
	// tests (through featuregate/testing.SetFeatureGateDuringTest) may change it.
	DefaultMutableFeatureGate = NewFeatureGate()

	// DefaultFeatureGate is the read-only view of DefaultMutableFeatureGate for the wiring
	// code that turns gates into component Config fields.
	DefaultFeatureGate featuregate.FeatureGate = DefaultMutableFeatureGate
)

// Gate is the feature gate of a kubelet of one release: that release's own table (a gate
// removed since exists, one added since does not), emulating that release, as the
// kubelet of that release builds it. SetRelease picks the release; a new Gate is the
// newest's.
//
// Enabled also answers for the gates the release's table does not have, which the
// simulator's code (written for the newest release) asks about: from the newest table's
// history at that release, so a gate added later is off, and a gate the newest table dates
// back further than the release had it (ChangeContainerStatusOnKubeletRestart, GA since
// v1.0 in v1.37's table, added in v1.35) answers what the release did without it.
type Gate struct {
	featuregate.MutableVersionedFeatureGate
	release release.Release
	// absent answers for the newest table's gates that r's does not have: their value in
	// the newest table at r, nothing set (empty for the newest release). Read only: every
	// gate of the release shares it (absentByRelease).
	absent map[featuregate.Feature]bool
}

// Release returns the kubelet release whose gate this is.
func (g *Gate) Release() release.Release { return g.release }

// Enabled reports whether the gate is on; see Gate for the gates the release lacks.
func (g *Gate) Enabled(name featuregate.Feature) bool {
	if v, ok := g.absent[name]; ok {
		return v
	}
	return g.MutableVersionedFeatureGate.Enabled(name)
}

// DeepCopy returns a copy of g, of the same release, that answers Enabled as g does.
func (g *Gate) DeepCopy() featuregate.MutableVersionedFeatureGate {
	return &Gate{MutableVersionedFeatureGate: g.MutableVersionedFeatureGate.DeepCopy(), release: g.release, absent: g.absent}
}

// DeepCopyAndReset returns a copy of g, of the same release, with nothing set.
func (g *Gate) DeepCopyAndReset() featuregate.MutableVersionedFeatureGate {
	return &Gate{MutableVersionedFeatureGate: g.MutableVersionedFeatureGate.DeepCopyAndReset(), release: g.release, absent: g.absent}
}

// SetRelease makes g the gate of kubelet r: r's table, emulating r, nothing set. It
// refuses once a gate has been set or the emulation version changed, as the release
// decides which gates there are. It replaces what g holds, so it is called before the
// gate is shared (config.Load calls it first thing): unlike the gate's other methods, it
// is not safe beside a reader.
func (g *Gate) SetRelease(r release.Release) error {
	if r == g.release {
		return nil
	}
	inner := g.MutableVersionedFeatureGate
	if !inner.EmulationVersion().EqualTo(g.release.Version()) {
		return fmt.Errorf("cannot change the release of the feature gate from %s to %s: it emulates %s", g.release, r, inner.EmulationVersion())
	}
	for name := range inner.GetAll() {
		if inner.ExplicitlySet(name) {
			return fmt.Errorf("cannot change the release of the feature gate from %s to %s after %s was set", g.release, r, name)
		}
	}
	*g = *newGate(r)
	return nil
}

// newGate returns the gate of kubelet r with nothing set.
func newGate(r release.Release) *Gate {
	inner := featuregate.NewVersionedFeatureGate(r.Version())
	if err := inner.AddVersioned(VersionedSpecsOf(r)); err != nil {
		panic(fmt.Sprintf("features: the kubelet %s table: %v", r, err)) // a build with a broken table
	}
	return &Gate{MutableVersionedFeatureGate: inner, release: r, absent: absentByRelease[r]()}
}

// absentByRelease holds, for each release, the newest table's gates that the release's table lacks,
// with their values in the newest table at that release, nothing set (none for the newest
// release): the same for every gate of the release, so it is worked out once.
var absentByRelease = func() map[release.Release]func() map[featuregate.Feature]bool {
	out := map[release.Release]func() map[featuregate.Feature]bool{}
	for _, r := range release.All() {
		out[r] = sync.OnceValue(func() map[featuregate.Feature]bool {
			if r == release.Newest() {
				return nil
			}
			own := featuregate.NewVersionedFeatureGate(r.Version())
			if err := own.AddVersioned(VersionedSpecsOf(r)); err != nil {
				panic(fmt.Sprintf("features: the kubelet %s table: %v", r, err)) // a build with a broken table
			}
			history := featuregate.NewFeatureGate()
			if err := history.AddVersioned(VersionedSpecs()); err != nil {
				panic(err) // a fresh gate cannot conflict
			}
			if err := history.SetEmulationVersion(r.Version()); err != nil {
				panic(fmt.Sprintf("features: the newest table at %s: %v", r, err))
			}
			known := own.GetAll()
			lacks := map[featuregate.Feature]bool{}
			for name := range history.GetAllVersioned() {
				if _, ok := known[name]; !ok {
					lacks[name] = history.Enabled(name)
				}
			}
			return lacks
		})
	}
	return out
}()

// tables holds each release's gates with their specs by version, built at first use: a
// command line or config file from a real node of that release names such gates, and the
// kubelet takes them, locked ones refused with its message.
var tables = func() map[release.Release]func() map[featuregate.Feature]featuregate.VersionedSpecs {
	out := map[release.Release]func() map[featuregate.Feature]featuregate.VersionedSpecs{}
	for _, r := range release.All() {
		out[r] = sync.OnceValue(func() map[featuregate.Feature]featuregate.VersionedSpecs {
			gates := map[featuregate.Feature]featuregate.VersionedSpecs{}
			for _, g := range kubeletref.For(r).Gates() {
				specs, err := versionedSpecs(g)
				if err != nil {
					panic(fmt.Sprintf("features: the kubelet %s table: %v", r, err)) // a build with a broken table
				}
				gates[featuregate.Feature(g.Name)] = specs
			}
			return gates
		})
	}
	return out
}()

var stages = map[string]featuregate.FeatureSpec{
	"ALPHA": {PreRelease: featuregate.Alpha}, "BETA": {PreRelease: featuregate.Beta},
	"": {PreRelease: featuregate.GA}, "DEPRECATED": {PreRelease: featuregate.Deprecated},
}

// versionedSpecs converts a table gate to the specs AddVersioned takes. The table lists
// specs as component-base completes them, each MinCompatibilityVersion inherited by the
// specs after it; those copies are dropped, because AddVersioned only accepts one at the
// version that introduces it, and adds them back itself.
func versionedSpecs(g kubeletref.Gate) (featuregate.VersionedSpecs, error) {
	var out featuregate.VersionedSpecs
	prevCompat := ""
	for _, v := range g.Versions {
		spec, ok := stages[v.PreRelease]
		if !ok {
			return nil, fmt.Errorf("gate %s has the unknown stage %q at %s", g.Name, v.PreRelease, v.Version)
		}
		spec.Default, spec.LockToDefault = v.Default, v.LockToDefault
		ver, err := version.ParseGeneric(v.Version)
		if err != nil {
			return nil, fmt.Errorf("gate %s: version %q: %w", g.Name, v.Version, err)
		}
		spec.Version = ver
		if v.MinCompatibilityVersion != "" && v.MinCompatibilityVersion != prevCompat {
			if spec.MinCompatibilityVersion, err = version.ParseGeneric(v.MinCompatibilityVersion); err != nil {
				return nil, fmt.Errorf("gate %s: min compatibility version %q: %w", g.Name, v.MinCompatibilityVersion, err)
			}
		}
		prevCompat = v.MinCompatibilityVersion
		out = append(out, spec)
	}
	return out, nil
}

// VersionedSpecs returns every gate of the newest kubelet, those the simulator models and
// the others (accepted as the kubelet accepts them, and changing nothing here), with its
// specs by version.
func VersionedSpecs() map[featuregate.Feature]featuregate.VersionedSpecs {
	return VersionedSpecsOf(release.Newest())
}

// VersionedSpecsOf returns every gate of kubelet r with its specs by version.
func VersionedSpecsOf(r release.Release) map[featuregate.Feature]featuregate.VersionedSpecs {
	table := tables[r]()
	out := make(map[featuregate.Feature]featuregate.VersionedSpecs, len(table))
	for name, specs := range table {
		out[name] = append(featuregate.VersionedSpecs(nil), specs...)
	}
	return out
}

// Specs returns every gate of kubelet v1.37 with its spec in v1.37 (see VersionedSpecs).
func Specs() map[featuregate.Feature]featuregate.FeatureSpec {
	all := NewFeatureGate().GetAll()
	delete(all, "AllAlpha")
	delete(all, "AllBeta")
	return all
}

// SimulatedSpecs returns the gates the simulator models, with their specs in v1.37.
func SimulatedSpecs() map[featuregate.Feature]featuregate.FeatureSpec {
	all := Specs()
	out := make(map[featuregate.Feature]featuregate.FeatureSpec, len(modelled))
	for _, name := range modelled {
		out[name] = all[name]
	}
	return out
}

// AddTo registers every v1.37 gate, with its specs by version, in gate. It fails if gate
// already knows one of them with different specs or is closed.
func AddTo(gate featuregate.MutableVersionedFeatureGate) error {
	if err := gate.AddVersioned(VersionedSpecs()); err != nil {
		return fmt.Errorf("register feature gates: %w", err)
	}
	return nil
}

// NewFeatureGate returns a fresh gate of the newest kubelet, every gate registered and
// nothing set. Use it where one process holds several independent configurations (tests,
// simulations of several nodes) instead of sharing DefaultMutableFeatureGate.
func NewFeatureGate() *Gate { return newGate(release.Newest()) }

// NewFeatureGateFor returns a fresh gate of kubelet r (see Gate).
func NewFeatureGateFor(r release.Release) *Gate { return newGate(r) }
