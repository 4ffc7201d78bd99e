package featuregate

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
)

// Add registers features that exist at every version: each spec gets Version 0.0. See
// AddVersioned.
func (f *featureGate) Add(features map[Feature]FeatureSpec) error {
	versioned := make(map[Feature]VersionedSpecs, len(features))
	for name, spec := range features {
		spec.Version = version.MajorMinor(0, 0)
		versioned[name] = VersionedSpecs{spec}
	}
	return f.AddVersioned(versioned)
}

// AddVersioned registers features with their specs by increasing version. A name already
// registered with identical (completed) specs is skipped; with different ones, or with
// malformed specs, the whole call fails and nothing is registered. It fails once the gate
// is closed.
//
// Names are checked in sorted order, so when several are bad the error names the first;
// component-base walks its map in random order.
func (f *featureGate) AddVersioned(features map[Feature]VersionedSpecs) error {
	f.mu.Lock()
	defer f.mu.Unlock()

	if f.closed {
		return fmt.Errorf("cannot add a feature gate after adding it to the flag set")
	}
	cur := f.state.Load()
	known := copyKnown(cur.known)
	for _, name := range sortedKeys(features) {
		completed, err := completeSpecs(name, features[name])
		if err != nil {
			return err
		}
		if existing, found := known[name]; found {
			if reflect.DeepEqual(existing, completed) {
				continue
			}
			return fmt.Errorf("feature gate %q with different spec already exists: %v", name, existing)
		}
		known[name] = completed
	}
	f.state.Store(cur.with(func(n *gateState) { n.known = known }))
	return nil
}

// completeSpecs checks that specs describe a possible life of a feature and returns them
// with each unset MinCompatibilityVersion inherited from the spec before, so that it never
// decreases. The checks and their order are component-base's, which decides which of
// several problems is reported.
func completeSpecs(name Feature, specs VersionedSpecs) (VersionedSpecs, error) {
	var completed VersionedSpecs
	var last FeatureSpec
	var wasBeta, wasGA, wasDeprecated, wasLocked bool
	for i, spec := range specs {
		if spec.Version == nil {
			return nil, fmt.Errorf("feature %q did not provide a version", name)
		}
		if len(spec.Version.Components()) != 2 {
			return nil, fmt.Errorf("feature %q specified patch version: %s", name, spec.Version)
		}
		if mc := spec.MinCompatibilityVersion; mc != nil {
			// It may only give a different default at a version that already has a spec.
			if i == 0 || !spec.Version.EqualTo(last.Version) {
				return nil, fmt.Errorf("feature %q specified MinCompatibilityVersion: %s without a preceding entry at the same Version without MinCompatibilityVersion set", name, mc)
			}
			if len(mc.Components()) != 2 {
				return nil, fmt.Errorf("feature %q specified patch MinCompatibilityVersion: %s", name, mc)
			}
			if mc.GreaterThan(spec.Version) {
				return nil, fmt.Errorf("feature %q MinCompatibilityVersion %s greater than Version %s", name, mc, spec.Version)
			}
		}
		// A gate that starts deprecated must say what it was before, at 1.0 (x.0).
		if i == 0 && spec.PreRelease == Deprecated && spec.Version.Minor() != 0 {
			return nil, fmt.Errorf("feature %q introduced as deprecated must provide a 1.0 entry indicating initial state", name)
		}
		if i > 0 {
			if err := checkTransition(name, last, spec, wasBeta, wasGA, wasDeprecated, wasLocked); err != nil {
				return nil, err
			}
		}
		c := spec
		if c.MinCompatibilityVersion == nil && i > 0 {
			c.MinCompatibilityVersion = last.MinCompatibilityVersion
		}
		completed = append(completed, c)
		last = c
		wasBeta = wasBeta || spec.PreRelease == Beta
		wasGA = wasGA || spec.PreRelease == GA
		wasDeprecated = wasDeprecated || spec.PreRelease == Deprecated
		wasLocked = wasLocked || spec.LockToDefault
	}
	return completed, nil
}

// checkTransition checks the step from last (completed) to spec: versions must not go
// back, a version may repeat only to change the default by MinCompatibilityVersion,
// something must change, and stability only grows (deprecated is final, locks stay).
func checkTransition(name Feature, last, spec FeatureSpec, wasBeta, wasGA, wasDeprecated, wasLocked bool) error {
	if spec.Version.LessThan(last.Version) {
		return fmt.Errorf("feature %q lists version transitions in decreasing order (%s < %s)", name, spec.Version, last.Version)
	}
	if spec.MinCompatibilityVersion != nil && last.MinCompatibilityVersion != nil && spec.MinCompatibilityVersion.LessThan(last.MinCompatibilityVersion) {
		return fmt.Errorf("feature %q lists min compatibility version transitions in decreasing order (%s < %s)", name, spec.MinCompatibilityVersion, last.MinCompatibilityVersion)
	}
	if spec.Version.EqualTo(last.Version) {
		if spec.MinCompatibilityVersion.EqualTo(last.MinCompatibilityVersion) {
			return fmt.Errorf("feature %q lists duplicate entries with the same versions (%s = %s)", name, spec.Version, last.Version)
		}
		if spec.PreRelease != last.PreRelease {
			return fmt.Errorf("feature %q lists stability changes with the same version (%s -> %s)", name, last.PreRelease, spec.PreRelease)
		}
		if spec.LockToDefault != last.LockToDefault {
			return fmt.Errorf("feature %q lists locked to default changes with the same version (%v -> %v)", name, last.LockToDefault, spec.LockToDefault)
		}
	}
	if spec.PreRelease == last.PreRelease && spec.Default == last.Default && spec.LockToDefault == last.LockToDefault {
		return fmt.Errorf("feature %q lists transition without stability change (%s -> %s)", name, last.Version, spec.Version)
	}
	if wasLocked && !spec.LockToDefault {
		return fmt.Errorf("feature %q must not unlock after locking to default", name)
	}
	switch {
	case spec.PreRelease != Deprecated && wasDeprecated:
		return fmt.Errorf("deprecated feature %q must not resurrect from its terminal state", name)
	case spec.PreRelease == Alpha && (wasBeta || wasGA), spec.PreRelease == Beta && wasGA:
		return fmt.Errorf("feature %q regresses stability from more stable level to %s in %s", name, spec.PreRelease, spec.Version)
	}
	return nil
}

// OverrideDefault changes the default of name's spec in force at the emulation version.
// It fails if name is not registered, its spec there is locked or pre-alpha, or the gate
// is closed. Explicitly set values still take precedence.
func (f *featureGate) OverrideDefault(name Feature, override bool) error {
	return f.OverrideDefaultWithLogger(klog.Background(), name, override)
}

// OverrideDefaultWithLogger is OverrideDefault, logging to logger.
func (f *featureGate) OverrideDefaultWithLogger(logger klog.Logger, name Feature, override bool) error {
	helper, logger := logger.WithCallStackHelper()
	helper()
	s := f.state.Load()
	return f.overrideDefault(logger, name, override, s.emulation, s.minCompat)
}

// OverrideDefaultAtVersion is OverrideDefault for the spec in force at ver (with the
// minimum compatibility version one minor below it).
func (f *featureGate) OverrideDefaultAtVersion(name Feature, override bool, ver *version.Version) error {
	return f.OverrideDefaultAtVersionWithLogger(klog.Background(), name, override, ver)
}

// OverrideDefaultAtVersionWithLogger is OverrideDefaultAtVersion, logging to logger.
func (f *featureGate) OverrideDefaultAtVersionWithLogger(logger klog.Logger, name Feature, override bool, ver *version.Version) error {
	helper, logger := logger.WithCallStackHelper()
	helper()
	return f.overrideDefault(logger, name, override, ver, nil)
}

func (f *featureGate) overrideDefault(logger klog.Logger, name Feature, override bool, emulation, minCompat *version.Version) error {
	f.mu.Lock()
	defer f.mu.Unlock()

	if f.closed {
		return fmt.Errorf("cannot override default for feature %q: gates already added to a flag set", name)
	}
	cur := f.state.Load()
	known := copyKnown(cur.known)
	specs, ok := known[name]
	if !ok {
		return fmt.Errorf("cannot override default: feature %q is not registered", name)
	}
	spec := specAt(specs, emulation, minCompat)
	switch {
	case spec.LockToDefault:
		return fmt.Errorf("cannot override default: feature %q default is locked to %t", name, spec.Default)
	case spec.PreRelease == PreAlpha:
		return fmt.Errorf("cannot override default: feature %q is not available before version %s", name, emulation)
	case spec.PreRelease == Deprecated:
		logger.Info("Warning: overriding default of deprecated feature gate. It will be removed in a future release.", "featureGate", name, "value", override)
	case spec.PreRelease == GA:
		logger.Info("Warning: overriding default of GA feature gate. It will be removed in a future release.", "featureGate", name, "value", override)
	}
	spec.Default = override // spec points into specs, the copy in known
	f.state.Store(cur.with(func(n *gateState) { n.known = known }))
	return nil
}

// AddDependencies records that each feature needs the listed ones enabled, merged with
// those already recorded; SetFromMap then fails when a feature is on and one it needs is
// off. At every version a feature has a spec for, a dependency must be at least as
// stable, on by default if the feature is, and locked if the feature is. Cycles fail. It
// fails once the gate is closed. Unlike component-base, it does not keep or change the
// caller's map.
func (f *featureGate) AddDependencies(features map[Feature][]Feature) error {
	f.mu.Lock()
	defer f.mu.Unlock()

	if f.closed {
		return fmt.Errorf("cannot add a feature gate dependency after adding it to the flag set")
	}
	cur := f.state.Load()
	deps := make(map[Feature][]Feature, len(features)+len(cur.deps))
	for k, v := range features {
		deps[k] = slices.Clone(v)
	}
	for k, v := range cur.deps {
		deps[k] = append(deps[k], v...)
	}
	for k, v := range deps {
		slices.Sort(v)
		deps[k] = slices.Compact(v)
	}
	for _, name := range sortedKeys(deps) {
		if err := checkDependencies(cur.known, name, deps[name]); err != nil {
			return err
		}
	}
	visited, finished := map[Feature]bool{}, map[Feature]bool{}
	var visit func(Feature) error
	visit = func(name Feature) error {
		if finished[name] {
			return nil
		}
		if visited[name] {
			return fmt.Errorf("cycle detected with feature %s", name)
		}
		visited[name] = true
		for _, dep := range deps[name] {
			if err := visit(dep); err != nil {
				return err
			}
		}
		finished[name] = true
		return nil
	}
	for _, name := range sortedKeys(deps) {
		if err := visit(name); err != nil {
			return err
		}
	}
	f.state.Store(cur.with(func(n *gateState) { n.deps = maps.Clone(deps) }))
	return nil
}

// checkDependencies checks name's dependencies at each of name's versions, newest first.
func checkDependencies(known map[Feature]VersionedSpecs, name Feature, deps []Feature) error {
	specs, ok := known[name]
	if !ok {
		return fmt.Errorf("cannot add dependency for unknown feature %s", name)
	}
	for _, dep := range deps {
		depSpecs, ok := known[dep]
		if !ok {
			return fmt.Errorf("cannot add dependency from %s to unknown feature %s", name, dep)
		}
		for _, spec := range slices.Backward(specs) {
			depSpec := specAt(depSpecs, spec.Version, spec.MinCompatibilityVersion)
			if stabilityOrder(spec.PreRelease) > stabilityOrder(depSpec.PreRelease) {
				return fmt.Errorf("%s feature %s cannot depend on %s feature %s at version %s", spec.PreRelease, name, depSpec.PreRelease, dep, spec.Version)
			}
			if spec.Default && !depSpec.Default {
				return fmt.Errorf("default-enabled feature %s cannot depend on default-disabled feature %s at version %s", name, dep, spec.Version)
			}
			if spec.LockToDefault && !depSpec.LockToDefault {
				return fmt.Errorf("locked-to-default feature %s cannot depend on unlocked feature %s at version %s", name, dep, spec.Version)
			}
		}
	}
	return nil
}

// stabilityOrder ranks stages for dependencies: a feature may only depend on features of
// the same or a higher rank. Unknown stages rank lowest.
func stabilityOrder(p prerelease) int {
	switch p {
	case Deprecated:
		return 0
	case PreAlpha, Alpha:
		return 1
	case Beta:
		return 2
	case GA:
		return 3
	default:
		return -1
	}
}
