package featuregate

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
)

// Feature is the name of a feature gate.
type Feature string

// DefaultKubeBinaryVersion is the release NewFeatureGate emulates: the kubelet the simulator
// models (k8s.io/component-base/version.DefaultKubeBinaryVersion of the same release).
const DefaultKubeBinaryVersion = "1.37"

const (
	// flagName is the command-line flag registered by AddFlag.
	flagName = "feature-gates"

	// allAlphaGate toggles every gate that is Alpha at the emulation version and has no
	// explicit value. Explicit per-gate values always win: "AllAlpha=true,X=false" leaves X off.
	allAlphaGate Feature = "AllAlpha"
	// allBetaGate does the same for Beta gates.
	allBetaGate Feature = "AllBeta"
)

// builtinFeatures are registered in every new gate. Version 0.0 makes them exist at any
// emulation version.
func builtinFeatures() map[Feature]VersionedSpecs {
	return map[Feature]VersionedSpecs{
		allAlphaGate: {{Default: false, PreRelease: Alpha, Version: version.MajorMinor(0, 0)}},
		allBetaGate:  {{Default: false, PreRelease: Beta, Version: version.MajorMinor(0, 0)}},
	}
}

// FeatureSpec describes a feature from one version on. The field order matches
// component-base, so that specs print alike in errors ("%v").
type FeatureSpec struct {
	// Default is the enablement state used when the gate has not been set explicitly.
	Default bool
	// LockToDefault forbids setting the gate to any value other than Default.
	LockToDefault bool
	// PreRelease is the maturity level of the feature.
	PreRelease prerelease
	// Version is the first version (major.minor) this spec applies to. Of several specs of
	// a feature, the one with the highest Version not above the emulation version is used.
	// Add sets it to 0.0.
	Version *version.Version
	// MinCompatibilityVersion, if set, makes the spec apply only when the gate's minimum
	// compatibility version is at least this. It may only follow a spec at the same Version
	// without it (a different default once every peer is new enough); later specs that
	// leave it nil inherit it.
	MinCompatibilityVersion *version.Version
}

// HelpString describes the spec as KnownFeatures lists it, or "" for GA, deprecated and
// pre-alpha features, which the list hides. With includeCompatVer it names the minimum
// compatibility version the spec needs, if any.
func (spec *FeatureSpec) HelpString(featureName Feature, includeCompatVer bool) string {
	if spec.PreRelease == GA || spec.PreRelease == Deprecated || spec.PreRelease == PreAlpha {
		return ""
	}
	s := fmt.Sprintf("%s=true|false (%s - default=%t)", featureName, spec.PreRelease, spec.Default)
	if includeCompatVer && spec.MinCompatibilityVersion != nil {
		s += fmt.Sprintf(" if --min-compatibility-version>=%s", spec.MinCompatibilityVersion)
	}
	return s
}

// VersionedSpecs lists a feature's specs by increasing Version.
type VersionedSpecs []FeatureSpec

func (g VersionedSpecs) Len() int           { return len(g) }
func (g VersionedSpecs) Less(i, j int) bool { return g[i].Version.LessThan(g[j].Version) }
func (g VersionedSpecs) Swap(i, j int)      { g[i], g[j] = g[j], g[i] }

type prerelease string

// Maturity levels for FeatureSpec.PreRelease.
const (
	// PreAlpha is the stage of a feature at an emulation version before its first spec: the
	// feature is unknown there (hidden, off, and not settable).
	PreAlpha = prerelease("PRE-ALPHA")
	Alpha    = prerelease("ALPHA")
	Beta     = prerelease("BETA")
	GA       = prerelease("")

	// Deprecated marks a feature that is going away.
	Deprecated = prerelease("DEPRECATED")
)

// FeatureGate is the read-only view consumers use to ask whether a feature is on.
// All methods are safe for concurrent use and never block on writers.
type FeatureGate interface {
	// Enabled reports whether key is enabled at the emulation version. It panics if key was
	// never registered.
	Enabled(key Feature) bool
	// KnownFeatures describes the settable non-GA, non-deprecated features, sorted.
	KnownFeatures() []string
	// Dependencies returns a copy of the registered feature dependencies.
	Dependencies() map[Feature][]Feature
	// DeepCopy returns an independent mutable copy, so that a candidate configuration can be
	// validated without touching the original.
	DeepCopy() MutableVersionedFeatureGate
	// Validate re-checks the explicitly set values at the emulation version without
	// changing anything.
	Validate() []error
}

// MutableFeatureGate registers features and parses their settings. It is meant for cmd/
// wiring and tests; everything else should depend on FeatureGate.
type MutableFeatureGate interface {
	FeatureGate

	// AddFlag registers the --feature-gates flag on fs and closes the gate.
	AddFlag(fs *pflag.FlagSet)
	// Close makes later Add, AddVersioned, AddDependencies and OverrideDefault calls fail.
	Close()
	// Set parses "key1=bool1,key2=bool2,..." and applies it with SetFromMap.
	Set(value string) error
	// SetFromMap records m as explicitly set and re-applies every explicit value at the
	// emulation version. On an error the values stay recorded (and are reported again by
	// every later call) but none takes effect.
	SetFromMap(m map[string]bool) error
	// Add registers features that exist at every version. Re-adding an identical spec is a
	// no-op; on any error nothing is registered.
	Add(features map[Feature]FeatureSpec) error
	// GetAll returns the features known at the emulation version, with the spec in force there.
	GetAll() map[Feature]FeatureSpec
	// AddMetrics records kubernetes_feature_enabled{name,stage} for every feature known at the
	// emulation version into reg. Unlike component-base, which records into its global legacy
	// registry, the registry is supplied by the caller. Calling it again refreshes the values.
	AddMetrics(reg prometheus.Registerer) error
	// OverrideDefault changes the default of the spec in force at the emulation version. It
	// fails if the feature is unknown there, locked, or the gate is closed. Explicitly set
	// values still take precedence.
	OverrideDefault(name Feature, override bool) error
}

// MutableFeatureGateWithLogger has the variants of MutableFeatureGate methods that log
// to the caller's logger instead of klog's global one.
type MutableFeatureGateWithLogger interface {
	SetWithLogger(logger klog.Logger, value string) error
	SetFromMapWithLogger(logger klog.Logger, m map[string]bool) error
	OverrideDefaultWithLogger(logger klog.Logger, name Feature, override bool) error
}

// MutableVersionedFeatureGate is a MutableFeatureGate whose features have a spec per
// version, and which answers as the release it emulates would.
type MutableVersionedFeatureGate interface {
	MutableFeatureGate
	// EmulationVersion is the version whose specs are in force.
	EmulationVersion() *version.Version
	// MinCompatibilityVersion is the oldest version the component must stay compatible
	// with; specs with a higher MinCompatibilityVersion are skipped.
	MinCompatibilityVersion() *version.Version
	// SetEmulationVersion sets the emulation version, and the minimum compatibility version
	// to one minor below it, then re-applies every explicit value. On an error (an explicit
	// value unknown or locked at that version) nothing changes.
	SetEmulationVersion(emulationVersion *version.Version) error
	// SetEmulationVersionAndMinCompatibilityVersion is SetEmulationVersion with an explicit
	// minimum compatibility version.
	SetEmulationVersionAndMinCompatibilityVersion(emulationVersion, minCompatibilityVersion *version.Version) error
	// GetAllVersioned returns a copy of every registered feature's specs.
	GetAllVersioned() map[Feature]VersionedSpecs
	// AddVersioned registers features with their specs by version, which must be well
	// formed (see the errors). Re-adding identical specs is a no-op; on any error nothing
	// is registered.
	AddVersioned(features map[Feature]VersionedSpecs) error
	// AddDependencies records that features need others enabled. Every feature named must
	// be registered; cycles, and dependencies on less stable or default-off features, fail.
	AddDependencies(features map[Feature][]Feature) error
	// OverrideDefaultAtVersion is OverrideDefault for the spec in force at ver.
	OverrideDefaultAtVersion(name Feature, override bool, ver *version.Version) error
	// ExplicitlySet reports whether name was set (rather than defaulted or set by AllAlpha/AllBeta).
	ExplicitlySet(name Feature) bool
	// ResetFeatureValueToDefault forgets the explicit value of name.
	ResetFeatureValueToDefault(name Feature) error
	// DeepCopyAndReset returns an open gate with the same features, specs and versions but
	// nothing set and no dependencies.
	DeepCopyAndReset() MutableVersionedFeatureGate
}

// MutableVersionedFeatureGateWithLogger has the variants of MutableVersionedFeatureGate
// methods that log to the caller's logger.
type MutableVersionedFeatureGateWithLogger interface {
	SetEmulationVersionWithLogger(logger klog.Logger, emulationVersion *version.Version) error
	SetEmulationVersionAndMinCompatibilityVersionWithLogger(logger klog.Logger, emulationVersion, minCompatibilityVersion *version.Version) error
	OverrideDefaultAtVersionWithLogger(logger klog.Logger, name Feature, override bool, ver *version.Version) error
}
