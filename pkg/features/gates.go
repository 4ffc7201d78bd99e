package features

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/kubeletref"
)

var (
	// DefaultMutableFeatureGate is the process-wide gate with every kubelet gate registered,
	// emulating v1.37. Only cmd/ (which applies --feature-gates, the config file's
	// featureGates and the emulated version) and tests (through
	// featuregate/testing.SetFeatureGateDuringTest) may change it.
	DefaultMutableFeatureGate featuregate.MutableVersionedFeatureGate = featuregate.NewFeatureGate()

	// DefaultFeatureGate is the read-only view of DefaultMutableFeatureGate for the wiring
	// code that turns gates into component Config fields.
	DefaultFeatureGate featuregate.FeatureGate = DefaultMutableFeatureGate
)

func init() {
	if err := AddTo(DefaultMutableFeatureGate); err != nil {
		// Only a programming error (a conflicting spec) gets here.
		panic(err)
	}
}

// kubeletGates is the kubelet's whole v1.37 table with each gate's specs by version: a
// command line or config file from a real node names such gates, and the kubelet takes
// them, locked ones refused with its message; SetEmulationVersion selects an older
// release's specs.
var kubeletGates = func() map[featuregate.Feature]featuregate.VersionedSpecs {
	out := map[featuregate.Feature]featuregate.VersionedSpecs{}
	for _, g := range kubeletref.Gates() {
		specs, err := versionedSpecs(g)
		if err != nil {
			panic(fmt.Sprintf("features: the kubelet table: %v", err)) // a build with a broken table
		}
		out[featuregate.Feature(g.Name)] = specs
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

// VersionedSpecs returns every gate of kubelet v1.37, those the simulator models and the
// others (accepted as the kubelet accepts them, and changing nothing here), with its
// specs by version.
func VersionedSpecs() map[featuregate.Feature]featuregate.VersionedSpecs {
	out := make(map[featuregate.Feature]featuregate.VersionedSpecs, len(kubeletGates))
	for name, specs := range kubeletGates {
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

// NewFeatureGate returns a fresh gate emulating v1.37 with every kubelet gate registered
// and nothing set. Use it where one process holds several independent configurations
// (tests, simulations of several nodes) instead of sharing DefaultMutableFeatureGate.
func NewFeatureGate() featuregate.MutableVersionedFeatureGate {
	gate := featuregate.NewFeatureGate()
	if err := AddTo(gate); err != nil {
		panic(err) // a fresh gate cannot conflict
	}
	return gate
}
