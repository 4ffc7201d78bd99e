package featuregate

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
)

// Set parses a string of the form "key1=value1,key2=value2,..." and applies it with
// SetFromMap. Empty segments are skipped, keys and values are trimmed, and a repeated key
// takes its last value. A parse error applies nothing.
func (f *featureGate) Set(value string) error {
	return f.SetWithLogger(klog.Background(), value)
}

// SetWithLogger is Set, logging to logger.
func (f *featureGate) SetWithLogger(logger klog.Logger, value string) error {
	helper, logger := logger.WithCallStackHelper()
	helper()

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
	return f.SetFromMapWithLogger(logger, m)
}

// SetFromMap records m as explicitly set and re-applies every explicit value at the
// emulation version. Setting AllAlpha (AllBeta) also sets every gate that is Alpha (Beta)
// there and has no value yet. On an error no value takes effect, but m stays recorded, so
// a bad name keeps failing every later call (as in component-base, which records before it
// validates, because the emulation version may not be final yet).
//
// Keys are applied in sorted order, so when several are bad the error lists them in that
// order; component-base walks its map in Go's random order instead.
func (f *featureGate) SetFromMap(m map[string]bool) error {
	return f.SetFromMapWithLogger(klog.Background(), m)
}

// SetFromMapWithLogger is SetFromMap, logging to logger.
func (f *featureGate) SetFromMapWithLogger(logger klog.Logger, m map[string]bool) error {
	helper, logger := logger.WithCallStackHelper()
	helper()

	f.mu.Lock()
	defer f.mu.Unlock()

	cur := f.state.Load()
	raw := maps.Clone(cur.raw)
	maps.Copy(raw, m)
	enabled := maps.Clone(cur.enabled)
	errs := apply(logger, cur, enabled, raw, cur.emulation, cur.minCompat)
	if len(errs) > 0 {
		f.state.Store(cur.with(func(n *gateState) { n.raw = raw }))
		return utilerrors.NewAggregate(errs)
	}
	f.state.Store(cur.with(func(n *gateState) { n.raw, n.enabled = raw, enabled }))
	logger.V(1).Info("Updated", "featureGates", enabled)
	return nil
}

// apply resolves raw into enabled at the given versions, with s's features and
// dependencies. It stops at the first unknown name; other bad values are all reported.
func apply(logger klog.Logger, s *gateState, enabled map[Feature]bool, raw map[string]bool, emulation, minCompat *version.Version) []error {
	var errs []error
	for _, k := range sortedKeys(raw) {
		v, name := raw[k], Feature(k)
		specs, ok := s.known[name]
		if !ok {
			return append(errs, fmt.Errorf("unrecognized feature gate: %s", k))
		}
		spec := specAt(specs, emulation, minCompat)
		if spec.LockToDefault && spec.Default != v {
			errs = append(errs, fmt.Errorf("cannot set feature gate %v to %v, feature is locked to %v", k, v, spec.Default))
			continue
		}
		switch name {
		case allAlphaGate:
			fillUnset(s.known, enabled, Alpha, v, emulation, minCompat)
			enabled[name] = v
			continue
		case allBetaGate:
			fillUnset(s.known, enabled, Beta, v, emulation, minCompat)
			enabled[name] = v
			continue
		}
		if spec.PreRelease == PreAlpha {
			errs = append(errs, fmt.Errorf("cannot set feature gate %v to %v, feature is PreAlpha at emulated version %s, min compatibility version %s", k, v, emulation, minCompat))
			continue
		}
		enabled[name] = v
		switch spec.PreRelease {
		case Deprecated:
			logger.Info("Warning: setting deprecated feature gate. It will be removed in a future release.", "featureGate", k, "value", v)
		case GA:
			logger.Info("Warning: setting GA feature gate. It will be removed in a future release.", "featureGate", k, "value", v)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	for _, name := range sortedKeys(s.deps) {
		if !enabledIn(name, enabled, s.known, emulation, minCompat) {
			continue
		}
		var disabled []Feature
		for _, dep := range s.deps[name] {
			if !enabledIn(dep, enabled, s.known, emulation, minCompat) {
				disabled = append(disabled, dep)
			}
		}
		if len(disabled) > 0 {
			errs = append(errs, fmt.Errorf("%s is enabled, but depends on features that are disabled: %v", name, disabled))
		}
	}
	return errs
}

// fillUnset gives every feature that is at stage at the given versions and has no entry in
// enabled the value val. AllAlpha and AllBeta never fill each other.
func fillUnset(known map[Feature]VersionedSpecs, enabled map[Feature]bool, stage prerelease, val bool, emulation, minCompat *version.Version) {
	for name, specs := range known {
		if name == allAlphaGate || name == allBetaGate {
			continue
		}
		if specAt(specs, emulation, minCompat).PreRelease != stage {
			continue
		}
		if _, set := enabled[name]; !set {
			enabled[name] = val
		}
	}
}

// Validate re-applies the explicit values at the emulation version, logging and changing
// nothing, and returns what is wrong with them.
func (f *featureGate) Validate() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.state.Load()
	return apply(klog.Logger{}, s, map[Feature]bool{}, s.raw, s.emulation, s.minCompat)
}

// ResetFeatureValueToDefault forgets the explicit value of name, so that its default
// applies again. A name set only through AllAlpha/AllBeta is forgotten too; a name that
// was recorded but never took effect (SetFromMap failed) cannot be, and is an error.
func (f *featureGate) ResetFeatureValueToDefault(name Feature) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.state.Load()
	_, inEnabled := cur.enabled[name]
	_, inRaw := cur.raw[string(name)]
	if inRaw && !inEnabled {
		return fmt.Errorf("feature:%s was explicitly set, but not in enabled map", name)
	}
	enabled, raw := maps.Clone(cur.enabled), maps.Clone(cur.raw)
	delete(enabled, name)
	delete(raw, string(name))
	f.state.Store(cur.with(func(n *gateState) { n.enabled, n.raw = enabled, raw }))
	return nil
}

// SetEmulationVersion emulates emulationVersion, with the minimum compatibility version
// one minor below it; see SetEmulationVersionAndMinCompatibilityVersion.
func (f *featureGate) SetEmulationVersion(emulationVersion *version.Version) error {
	return f.SetEmulationVersionWithLogger(klog.Background(), emulationVersion)
}

// SetEmulationVersionWithLogger is SetEmulationVersion, logging to logger.
func (f *featureGate) SetEmulationVersionWithLogger(logger klog.Logger, emulationVersion *version.Version) error {
	helper, logger := logger.WithCallStackHelper()
	helper()
	return f.SetEmulationVersionAndMinCompatibilityVersionWithLogger(logger, emulationVersion, emulationVersion.SubtractMinor(1))
}

// SetEmulationVersionAndMinCompatibilityVersion switches to the specs in force at the given
// versions and re-applies every explicit value from scratch (so AllAlpha/AllBeta cover the
// gates at their new stages). It warns about each feature Enabled has answered whose value
// changes. On an error (an explicit value unknown, locked or pre-alpha there) nothing
// changes. Setting the current versions again does nothing.
func (f *featureGate) SetEmulationVersionAndMinCompatibilityVersion(emulationVersion, minCompatibilityVersion *version.Version) error {
	return f.SetEmulationVersionAndMinCompatibilityVersionWithLogger(klog.Background(), emulationVersion, minCompatibilityVersion)
}

// SetEmulationVersionAndMinCompatibilityVersionWithLogger is
// SetEmulationVersionAndMinCompatibilityVersion, logging to logger.
func (f *featureGate) SetEmulationVersionAndMinCompatibilityVersionWithLogger(logger klog.Logger, emulationVersion, minCompatibilityVersion *version.Version) error {
	helper, logger := logger.WithCallStackHelper()
	helper()

	if cur := f.state.Load(); emulationVersion.EqualTo(cur.emulation) && minCompatibilityVersion.EqualTo(cur.minCompat) {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	logger.V(1).Info("Set feature gate emulation", "emulationVersion", emulationVersion, "minCompatibilityVersion", minCompatibilityVersion)

	cur := f.state.Load()
	enabled := map[Feature]bool{}
	errs := apply(logger, cur, enabled, cur.raw, emulationVersion, minCompatibilityVersion)

	queried := *f.queried.Load()
	for _, name := range sortedKeys(queried) {
		newVal := enabledIn(name, enabled, cur.known, emulationVersion, minCompatibilityVersion)
		oldVal := enabledIn(name, cur.enabled, cur.known, cur.emulation, cur.minCompat)
		if newVal != oldVal {
			logger.Info("Warning: SetEmulationVersionAndMinCompatibilityVersion will change already queried feature", "featureGate", name, "oldValue", oldVal, "newValue", newVal)
		}
	}
	if len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	f.state.Store(cur.with(func(n *gateState) {
		n.enabled, n.emulation, n.minCompat = enabled, emulationVersion, minCompatibilityVersion
	}))
	f.queried.Store(&map[Feature]struct{}{})
	return nil
}
