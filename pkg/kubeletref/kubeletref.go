package kubeletref

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/util/version"
)

// table is written by tools/kubeletref (`make kubelet-table`), which builds the kubelet's
// own flag set and feature gate from k8s.io/kubernetes and dumps them: the simulator's
// command line and gates are checked against it and accept what it lists.
//
//go:embed kubelet-v1.37.json
var table []byte

// Flag is one flag of the kubelet's command line.
type Flag struct {
	Name        string `json:"name"`
	Shorthand   string `json:"shorthand,omitempty"`
	Type        string `json:"type"` // pflag's Value.Type(): bool, duration, mapStringString, ...
	Default     string `json:"default"`
	NoOptDefVal string `json:"noOptDefVal,omitempty"`
	Deprecated  string `json:"deprecated,omitempty"`
	Hidden      bool   `json:"hidden,omitempty"`
	Usage       string `json:"usage"`
	// Field is the top-level KubeletConfiguration field the flag sets ("" for the flags
	// only the command line has).
	Field string `json:"field,omitempty"`
}

// Gate is one feature gate the kubelet's --feature-gates accepts. Default, PreRelease and
// LockToDefault are its spec at the table's release (with that release's default minimum
// compatibility version, one minor below); Versions is its whole life.
type Gate struct {
	Name          string `json:"name"`
	Default       bool   `json:"default"`
	PreRelease    string `json:"preRelease"` // ALPHA, BETA, DEPRECATED, or "" for GA
	LockToDefault bool   `json:"lockToDefault,omitempty"`
	// Versions lists the gate's specs by increasing version, as the kubelet registers them
	// (component-base's VersionedSpecs), so that an older release can be emulated.
	Versions []GateVersion `json:"versions"`
}

// GateVersion is a gate's spec from one version on.
type GateVersion struct {
	Version       string `json:"version"` // major.minor
	Default       bool   `json:"default"`
	PreRelease    string `json:"preRelease"` // ALPHA, BETA, DEPRECATED, or "" for GA
	LockToDefault bool   `json:"lockToDefault,omitempty"`
	// MinCompatibilityVersion, if set, makes this spec apply only where the minimum
	// compatibility version is at least this; it follows a spec of the same Version
	// that gives the default for older peers.
	MinCompatibilityVersion string `json:"minCompatibilityVersion,omitempty"`
}

type file struct {
	Source string `json:"source"`
	Flags  []Flag `json:"flags"`
	Gates  []Gate `json:"gates"`
}

// parsed is read at the first use, not at every process start.
var parsed = sync.OnceValue(func() file {
	var f file
	if err := json.Unmarshal(table, &f); err != nil {
		panic(fmt.Sprintf("kubeletref: the embedded table: %v", err)) // a build with a broken table
	}
	sort.Slice(f.Flags, func(i, j int) bool { return f.Flags[i].Name < f.Flags[j].Name })
	sort.Slice(f.Gates, func(i, j int) bool { return f.Gates[i].Name < f.Gates[j].Name })
	return f
})

// Source names the release and package the table was taken from.
func Source() string { return parsed().Source }

// Flags returns every flag of the kubelet, by name.
func Flags() []Flag { return append([]Flag(nil), parsed().Flags...) }

// Gates returns every feature gate of the kubelet (AllAlpha and AllBeta aside), by name.
// The Versions slices are copies too.
func Gates() []Gate {
	out := append([]Gate(nil), parsed().Gates...)
	for i := range out {
		out[i].Versions = append([]GateVersion(nil), out[i].Versions...)
	}
	return out
}

// LookupGate returns the gate called name, and false if the kubelet has none.
func LookupGate(name string) (Gate, bool) {
	gates := parsed().Gates
	i := sort.Search(len(gates), func(i int) bool { return gates[i].Name >= name })
	if i == len(gates) || gates[i].Name != name {
		return Gate{}, false
	}
	g := gates[i]
	g.Versions = append([]GateVersion(nil), g.Versions...)
	return g, true
}

// At returns the spec in force when the kubelet emulates release emulation with the
// minimum compatibility version minCompat ("" for one minor below emulation): the last
// entry not newer than emulation whose MinCompatibilityVersion, if any, minCompat reaches.
// It returns false where the gate does not exist yet, and an error for a malformed version.
func (g Gate) At(emulation, minCompat string) (GateVersion, bool, error) {
	emu, err := version.ParseMajorMinor(emulation)
	if err != nil {
		return GateVersion{}, false, fmt.Errorf("emulation version %q: %w", emulation, err)
	}
	mc := emu.SubtractMinor(1)
	if minCompat != "" {
		if mc, err = version.ParseMajorMinor(minCompat); err != nil {
			return GateVersion{}, false, fmt.Errorf("minimum compatibility version %q: %w", minCompat, err)
		}
	}
	for i := len(g.Versions) - 1; i >= 0; i-- {
		v := g.Versions[i]
		at, err := version.ParseMajorMinor(v.Version)
		if err != nil {
			return GateVersion{}, false, fmt.Errorf("gate %s: version %q: %w", g.Name, v.Version, err)
		}
		if at.GreaterThan(emu) {
			continue
		}
		if v.MinCompatibilityVersion != "" {
			need, err := version.ParseMajorMinor(v.MinCompatibilityVersion)
			if err != nil {
				return GateVersion{}, false, fmt.Errorf("gate %s: min compatibility version %q: %w", g.Name, v.MinCompatibilityVersion, err)
			}
			if !mc.AtLeast(need) {
				continue
			}
		}
		return v, true, nil
	}
	return GateVersion{}, false, nil
}
