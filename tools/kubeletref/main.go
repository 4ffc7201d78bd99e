// Command kubeletref writes the command line and the feature-gate table of the kubelet of
// the k8s.io/kubernetes release this module pins, as JSON: every flag the kubelet registers
// (its KubeletFlags, its KubeletConfiguration flags and its global flags), with type, default,
// deprecation and whether it is hidden, and every gate its --feature-gates accepts, with
// default, stage and lock. It builds the kubelet's own flag set and feature gate, so the table
// is the kubelet's, not a reading of its source. `make kubelet-table` runs it into
// pkg/kubeletref, which the simulator's flags and gates are built from.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
)

// samples are values to set a flag to, by type, to see which field it writes; the first
// that parses and changes the configuration names the field.
var samples = map[string][]string{
	"bool":                               {"true", "false"},
	"duration":                           {"17s"},
	"int":                                {"17"},
	"int32":                              {"17"},
	"int64":                              {"17"},
	"float32":                            {"0.5"},
	"float64":                            {"0.5"},
	"string":                             {"sample"},
	"stringSlice":                        {"a,b"},
	"ip":                                 {"10.1.2.3"},
	"mapStringString":                    {"memory.available<1Mi", "cpu=1", "a=b"},
	"mapStringBool":                      {"AllAlpha=true"},
	"quantity":                           {"1Mi"},
	"[]v1.Taint":                         {"k=v:NoSchedule"},
	"reserved-memory":                    {"0:memory=1Gi"},
	"colonSeparatedMultimapStringString": {"a:b"},
}

// fieldOf returns the v1beta1 JSON name of the top-level KubeletConfiguration field that
// setting the flag changes, or "".
func fieldOf(f *pflag.Flag) string {
	build := func() (*pflag.FlagSet, *kubeletconfig.KubeletConfiguration) {
		fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
		fs.SetOutput(io.Discard) // the deprecation notices of every Set
		kc, err := options.NewKubeletConfiguration()
		if err != nil {
			panic(err)
		}
		options.AddKubeletConfigFlags(fs, kc)
		return fs, kc
	}
	v1 := reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{})
	for _, sample := range samples[f.Value.Type()] {
		fs, kc := build()
		if fs.Lookup(f.Name) == nil {
			return ""
		}
		before := reflect.ValueOf(*kc.DeepCopy())
		if err := fs.Set(f.Name, sample); err != nil {
			continue
		}
		after := reflect.ValueOf(*kc)
		for i := 0; i < after.NumField(); i++ {
			if reflect.DeepEqual(before.Field(i).Interface(), after.Field(i).Interface()) {
				continue
			}
			name := after.Type().Field(i).Name
			if sf, ok := v1.FieldByName(name); ok {
				tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
				return tag
			}
			return "?" + name
		}
	}
	return ""
}

// Flag is one flag of the kubelet's command line.
type Flag struct {
	Name        string `json:"name"`
	Shorthand   string `json:"shorthand,omitempty"`
	Type        string `json:"type"`
	Default     string `json:"default"`
	NoOptDefVal string `json:"noOptDefVal,omitempty"`
	Deprecated  string `json:"deprecated,omitempty"`
	Hidden      bool   `json:"hidden,omitempty"`
	Usage       string `json:"usage"`
	// Field is the top-level KubeletConfiguration (v1beta1) field the flag sets, when it
	// sets one.
	Field string `json:"field,omitempty"`
}

// Gate is one feature gate: its spec at the release the table is taken from, and every
// spec it has had (component-base's versioned gate: a spec holds from its version on).
type Gate struct {
	Name          string        `json:"name"`
	Default       bool          `json:"default"`
	PreRelease    string        `json:"preRelease"`
	LockToDefault bool          `json:"lockToDefault,omitempty"`
	Versions      []GateVersion `json:"versions,omitempty"`
}

// GateVersion is one of a gate's versioned specs.
type GateVersion struct {
	Version                 string `json:"version"`
	Default                 bool   `json:"default"`
	PreRelease              string `json:"preRelease"`
	LockToDefault           bool   `json:"lockToDefault,omitempty"`
	MinCompatibilityVersion string `json:"minCompatibilityVersion,omitempty"`
}

// preRelease is the table's spelling of a stage: "" for GA.
func preRelease(p featuregate.FeatureSpec) string {
	if p.PreRelease == featuregate.GA {
		return ""
	}
	return string(p.PreRelease)
}

// minCompatibility returns a spec's MinCompatibilityVersion, or "" where it has none or
// the release's component-base has no such field yet (v1.34): the same source
// builds against every release's (-modfile, docs/versions.md).
func minCompatibility(spec featuregate.FeatureSpec) string {
	f := reflect.ValueOf(spec).FieldByName("MinCompatibilityVersion")
	if !f.IsValid() || f.IsNil() {
		return ""
	}
	return f.Interface().(fmt.Stringer).String()
}

// Table is the file written.
type Table struct {
	Source string `json:"source"`
	Flags  []Flag `json:"flags"`
	Gates  []Gate `json:"gates"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kubeletref OUTPUT")
		os.Exit(2)
	}
	version := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "k8s.io/kubernetes" {
				version = d.Version // the release go.mod pins: the table's
			}
		}
	}
	// As cmd/kubelet/app's init does.
	if err := logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// As NewKubeletCommand builds its cleanFlagSet.
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetNormalizeFunc(nil)
	kf := options.NewKubeletFlags()
	kc, err := options.NewKubeletConfiguration()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kf.AddFlags(fs)
	options.AddKubeletConfigFlags(fs, kc)
	options.AddGlobalFlags(fs)
	fs.BoolP("help", "h", false, "help for kubelet")

	t := Table{Source: "k8s.io/kubernetes@" + version + " cmd/kubelet"}
	fs.VisitAll(func(f *pflag.Flag) {
		t.Flags = append(t.Flags, Flag{Name: f.Name, Shorthand: f.Shorthand, Type: f.Value.Type(), Default: f.DefValue,
			NoOptDefVal: f.NoOptDefVal, Deprecated: f.Deprecated, Hidden: f.Hidden, Usage: f.Usage, Field: fieldOf(f)})
	})
	versioned := utilfeature.DefaultMutableFeatureGate.GetAllVersioned()
	for name, spec := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		if name == "AllAlpha" || name == "AllBeta" {
			continue
		}
		g := Gate{Name: string(name), Default: spec.Default, PreRelease: preRelease(spec), LockToDefault: spec.LockToDefault}
		for _, v := range versioned[name] {
			gv := GateVersion{Default: v.Default, PreRelease: preRelease(v), LockToDefault: v.LockToDefault}
			if v.Version != nil {
				gv.Version = v.Version.String()
			}
			gv.MinCompatibilityVersion = minCompatibility(v)
			g.Versions = append(g.Versions, gv)
		}
		t.Gates = append(t.Gates, g)
	}
	sort.Slice(t.Flags, func(i, j int) bool { return t.Flags[i].Name < t.Flags[j].Name })
	sort.Slice(t.Gates, func(i, j int) bool { return t.Gates[i].Name < t.Gates[j].Name })
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[1], append(data, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
