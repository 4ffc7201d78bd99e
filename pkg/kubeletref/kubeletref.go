package kubeletref

import (
	"embed"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/minikubelet/minikubelet/pkg/release"
)

// The tables are written by tools/kubeletref (`make kubelet-table`, once per release), which
// builds each release's own kubelet flag set and feature gate from k8s.io/kubernetes and
// dumps them: the simulator's command line and gates are checked against them and accept
// what they list.
//
//go:embed kubelet-v*.json
var tables embed.FS

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
	// that gives the default for older peers. v1.34's component-base has no such field,
	// and no table sets it before v1.37.
	MinCompatibilityVersion string `json:"minCompatibilityVersion,omitempty"`
}

// Table is one release's kubelet: its flags and its gates, by name.
type Table struct{ f file }

// file is a table as tools/kubeletref writes it.
type file struct {
	Source string `json:"source"`
	Flags  []Flag `json:"flags"`
	Gates  []Gate `json:"gates"`
}

// parsed holds each release's table, read at its first use, not at every process start.
var parsed = func() map[release.Release]func() *Table {
	out := map[release.Release]func() *Table{}
	for _, r := range release.All() {
		out[r] = sync.OnceValue(func() *Table {
			name := "kubelet-v" + r.String() + ".json"
			data, err := tables.ReadFile(name)
			if err != nil {
				panic(fmt.Sprintf("kubeletref: no table for kubelet %s: %v", r, err)) // a build without it
			}
			t := new(Table)
			if err := json.Unmarshal(data, &t.f); err != nil {
				panic(fmt.Sprintf("kubeletref: %s: %v", name, err)) // a build with a broken table
			}
			sort.Slice(t.f.Flags, func(i, j int) bool { return t.f.Flags[i].Name < t.f.Flags[j].Name })
			sort.Slice(t.f.Gates, func(i, j int) bool { return t.f.Gates[i].Name < t.f.Gates[j].Name })
			return t
		})
	}
	return out
}()

// For returns the table of the kubelet of release r (one of release.All).
func For(r release.Release) *Table {
	get, ok := parsed[r]
	if !ok {
		panic(fmt.Sprintf("kubeletref: kubelet %s is not a supported release", r)) // release.Parse lets no other through
	}
	return get()
}

func newest() *Table { return For(release.Newest()) }

// Source names the release and package the newest table was taken from.
func Source() string { return newest().Source() }

// Flags returns every flag of the newest kubelet, by name.
func Flags() []Flag { return newest().Flags() }

// Gates returns every feature gate of the newest kubelet (AllAlpha and AllBeta aside), by
// name.
func Gates() []Gate { return newest().Gates() }

// LookupGate returns the newest kubelet's gate called name, and false if it has none.
func LookupGate(name string) (Gate, bool) { return newest().LookupGate(name) }

// Source names the release and package the table was taken from.
func (t *Table) Source() string { return t.f.Source }

// Flags returns every flag of the table's kubelet, by name.
func (t *Table) Flags() []Flag { return append([]Flag(nil), t.f.Flags...) }

// Gates returns every feature gate of the table's kubelet (AllAlpha and AllBeta aside), by
// name. The Versions slices are copies too.
func (t *Table) Gates() []Gate {
	out := append([]Gate(nil), t.f.Gates...)
	for i := range out {
		out[i].Versions = append([]GateVersion(nil), out[i].Versions...)
	}
	return out
}

// LookupFlag returns the flag called name, and false if the table's kubelet has none.
func (t *Table) LookupFlag(name string) (Flag, bool) {
	flags := t.f.Flags
	i := sort.Search(len(flags), func(i int) bool { return flags[i].Name >= name })
	if i == len(flags) || flags[i].Name != name {
		return Flag{}, false
	}
	return flags[i], true
}

// LookupGate returns the gate called name, and false if the table's kubelet has none.
func (t *Table) LookupGate(name string) (Gate, bool) {
	gates := t.f.Gates
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
