package config

import (
	"fmt"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/release"
)

// kubeletFieldsSince are the KubeletConfiguration fields younger than the oldest release a
// node emulates, with the minor release that added them: the struct fields of
// k8s.io/kubelet's config/v1beta1 compared release by release (v0.34.13, v0.35.10, v0.36.6,
// v0.37.2; v1.35 added none). An older kubelet does not know them, and a file that sets one
// is refused as every unknown field is.
var kubeletFieldsSince = []struct {
	field string
	minor int
}{
	{"memoryReservationPolicy", 36},
	{"tlsCurvePreferences", 36},
	{"defaultPodSysctls", 37},
}

// emulate makes gate the gate of the release that version names: a kubelet's gate
// (features.Gate) becomes that release's table, another versioned gate emulates it. from
// says where the value came from, for the error.
func emulate(gate featuregate.MutableFeatureGate, version, from string) (release.Release, error) {
	r, err := release.Parse(version)
	if err != nil {
		return release.Release{}, fmt.Errorf("invalid %s: %w", from, err)
	}
	if kg, ok := gate.(*features.Gate); ok {
		// A kubelet's gate: the release's own table.
		if err := kg.SetRelease(r); err != nil {
			return release.Release{}, fmt.Errorf("%s %q: %w", from, version, err)
		}
		return r, nil
	}
	vg, ok := gate.(featuregate.MutableVersionedFeatureGate)
	if !ok {
		if r == release.Newest() {
			return r, nil
		}
		return release.Release{}, fmt.Errorf("invalid %s %q: this feature gate has no versions", from, version)
	}
	if err := vg.SetEmulationVersion(r.Version()); err != nil {
		return release.Release{}, fmt.Errorf("%s %q: %w", from, version, err)
	}
	return r, nil
}

// forRelease makes a loaded configuration the emulated release's: the defaults that release
// had where they changed since (k8s.io/kubernetes pkg/kubelet/apis/config/v1beta1/defaults.go
// compared release by release), and no defaults for the fields it does not know (a file
// setting one is refused), so that the effective configuration is the one it would print.
func forRelease(kc *KubeletConfiguration, r release.Release, prov *provenance) {
	if r.Before(35) && !prov.filePaths["kubeletConfiguration.failCgroupV1"] {
		off := false // true by default since v1.35
		kc.FailCgroupV1 = &off
	}
	if r.Before(36) {
		kc.MemoryReservationPolicy = ""
		kc.TLSCurvePreferences = nil
	}
	if r.Before(37) {
		kc.DefaultPodSysctls = nil
	}
}

// validateRelease refuses the KubeletConfiguration fields the emulated release does not
// have, naming the release that added each.
func validateRelease(v *validator, r release.Release) {
	for _, f := range kubeletFieldsSince {
		path := "kubeletConfiguration." + f.field
		if r.Before(f.minor) && v.prov.filePaths[path] {
			v.errs = append(v.errs, fmt.Errorf("%s (%s): unknown field in kubelet %s: added in 1.%d (simulatorConfiguration.emulatedVersion, --emulated-version)",
				path, v.prov.source(path), r, f.minor))
		}
	}
}
