package kubeletref

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
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

// Gate is one feature gate the kubelet's --feature-gates accepts.
type Gate struct {
	Name          string `json:"name"`
	Default       bool   `json:"default"`
	PreRelease    string `json:"preRelease"` // ALPHA, BETA, DEPRECATED, or "" for GA
	LockToDefault bool   `json:"lockToDefault,omitempty"`
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
func Gates() []Gate { return append([]Gate(nil), parsed().Gates...) }
