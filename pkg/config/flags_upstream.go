package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/pkg/kubeletref"
	"github.com/minikubelet/minikubelet/pkg/release"
)

// ErrVersion is returned by Load for --version: print the version and exit, as the kubelet.
// The error is a *VersionRequest.
var ErrVersion = errors.New("--version requested")

// VersionRequest is Load's answer to --version: the release the version is of
// (--emulated-version given with it, else the newest).
type VersionRequest struct{ Release release.Release }

func (*VersionRequest) Error() string        { return ErrVersion.Error() }
func (*VersionRequest) Is(target error) bool { return target == ErrVersion }

// notOnCommandLine are the kubelet's flags registered elsewhere: klog's (the caller's
// globals) and the help flag pflag handles.
var notOnCommandLine = map[string]bool{"v": true, "vmodule": true, "help": true}

// addUpstreamFlags registers every flag of the supported kubelets (v1.34 to v1.37) that
// addFlags does not: the daemon then starts with the command line a kubeadm or kind node
// runs its kubelet with. Such a flag's value is checked as the kubelet checks it (a bool, a
// duration, an IP, ...), and otherwise changes nothing; Load lists the ones given
// (Config.UnsimulatedFlags), and refuses those the emulated release does not have
// (releaseFlags). --version prints the version, as the kubelet's.
func addUpstreamFlags(fs *pflag.FlagSet) {
	all := release.All()
	for i := len(all) - 1; i >= 0; i-- { // the newest release's usage and default first
		for _, f := range kubeletref.For(all[i]).Flags() {
			if fs.Lookup(f.Name) != nil || notOnCommandLine[f.Name] {
				continue
			}
			if f.Name == "version" {
				fs.Var(&versionValue{}, f.Name, "Print version information and quit.")
				fs.Lookup(f.Name).NoOptDefVal = "true"
				continue
			}
			fs.Var(&unsimulatedValue{typ: f.Type}, f.Name, "Accepted as the kubelet accepts it, not simulated. Upstream: "+f.Usage)
			fl := fs.Lookup(f.Name)
			fl.NoOptDefVal, fl.DefValue, fl.Hidden = f.NoOptDefVal, f.Default, true
		}
	}
}

// releaseFlags refuses a flag given on fs that kubelet r does not have (one an older
// release removed, or a newer one added), as that kubelet refuses an unknown flag, saying
// which releases have it.
func releaseFlags(fs *pflag.FlagSet, r release.Release) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if _, ok := f.Value.(*unsimulatedValue); !ok || err != nil {
			return
		}
		if _, ok := kubeletref.For(r).LookupFlag(f.Name); ok {
			return
		}
		var has []string
		for _, other := range release.All() {
			if _, ok := kubeletref.For(other).LookupFlag(f.Name); ok {
				has = append(has, other.String())
			}
		}
		which := "kubelet " + has[0] + " has it"
		if len(has) > 1 {
			which = "kubelets " + strings.Join(has, ", ") + " have it"
		}
		err = fmt.Errorf("unknown flag: --%s (kubelet %s has no such flag; %s: --%s, simulatorConfiguration.emulatedVersion)",
			f.Name, r, which, flagEmulatedVersion)
	})
	return err
}

// unsimulatedFlags returns the flags fs was given that only addUpstreamFlags registered.
func unsimulatedFlags(fs *pflag.FlagSet) []string {
	var out []string
	fs.Visit(func(f *pflag.Flag) {
		if _, ok := f.Value.(*unsimulatedValue); ok {
			out = append(out, "--"+f.Name)
		}
	})
	return out
}

// unsimulatedValue holds a flag the simulator accepts and does not model, parsed as the
// kubelet parses its type.
type unsimulatedValue struct {
	typ string
	val string
}

func (v *unsimulatedValue) String() string { return v.val }
func (v *unsimulatedValue) Type() string   { return v.typ }

func (v *unsimulatedValue) Set(s string) error {
	if err := checkValue(v.typ, s); err != nil {
		return err
	}
	if v.val != "" && strings.HasSuffix(v.typ, "Slice") {
		s = v.val + "," + s // repeated slice flags accumulate, as pflag's
	}
	v.val = s
	return nil
}

// checkValue parses s as a value of the kubelet flag type typ (pflag's type names).
func checkValue(typ, s string) error {
	var err error
	switch typ {
	case "bool":
		_, err = strconv.ParseBool(s)
	case "duration":
		_, err = time.ParseDuration(s)
	case "int":
		_, err = strconv.ParseInt(s, 0, strconv.IntSize)
	case "int32":
		_, err = strconv.ParseInt(s, 0, 32)
	case "int64":
		_, err = strconv.ParseInt(s, 0, 64)
	case "float32", "float64":
		var f float64
		f, err = strconv.ParseFloat(s, 64)
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			err = fmt.Errorf("%q is not a number", s)
		}
	case "ip":
		if net.ParseIP(strings.TrimSpace(s)) == nil {
			err = fmt.Errorf("failed to parse IP: %q", s)
		}
	case "quantity":
		_, err = resource.ParseQuantity(s)
	case "mapStringString":
		for _, kv := range strings.Split(s, ",") {
			if kv = strings.TrimSpace(kv); kv != "" && !strings.ContainsAny(kv, "=<") {
				err = fmt.Errorf("malformed pair, expect string=string")
			}
		}
	}
	return err
}

// versionValue is --version: Load returns ErrVersion when it is true.
type versionValue struct{ set bool }

func (v *versionValue) String() string { return strconv.FormatBool(v.set) }
func (v *versionValue) Type() string   { return "version" }

// Set takes what component-base's verflag takes: a bool, "raw" (the version printed
// here as by `minikubelet version`), or vX.Y.Z, which upstream reports as the version and
// goes on; the simulator reports its own and goes on.
func (v *versionValue) Set(s string) error {
	switch {
	case s == "raw":
		v.set = true
		return nil
	case strings.HasPrefix(s, "v"):
		v.set = false
		return nil
	}
	b, err := strconv.ParseBool(s)
	v.set = b
	return err
}
