package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/release"
)

// Load builds the effective configuration from the command-line arguments (without the
// program name) exactly as the kubelet orders its sources (cmd/kubelet/app/server.go):
//
//  1. parse the flags over the built-in defaults and apply --feature-gates to gate;
//  2. if --config is given, load the file (its KubeletConfiguration with v1beta1
//     defaulting, its SimulatorConfiguration over the defaults);
//  3. parse the same arguments again over the loaded configuration, so every flag given
//     wins over the file (kubeletConfigFlagPrecedence);
//  4. put back every featureGates key of the file that no --feature-gates flag set (the
//     flag wins on a key both set; repeated --feature-gates flags accumulate), and apply
//     the merged map to gate with SetFromMap;
//     (the release, --emulated-version else the file's simulatorConfiguration.emulatedVersion,
//     is applied to gate before the gates of step 1 and step 4, the file being read first
//     for it: which gates exist and at which stage is the emulated release's);
//  5. default the fields whose default depends on a gate (crashLoopBackOff,
//     imagePullCredentialsVerificationPolicy) from the final gate, and validate
//     everything, returning every problem at once.
//
// gate is changed (steps 1 and 4) even when a later step fails, as in the kubelet; pass
// a fresh gate (features.NewFeatureGate) where that matters. globals, if not nil, holds
// global flags (klog's -v) parsed in step 1 and ignored in step 3. A -h/--help argument
// returns an error wrapping pflag.ErrHelp.
func Load(args []string, gate featuregate.MutableFeatureGate, globals *pflag.FlagSet) (*Config, error) {
	known := gate.KnownFeatures()
	kc, sc := NewKubeletConfiguration(), NewSimulatorConfiguration()
	var cl commandLine

	fs := pflag.NewFlagSet("minikubelet", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	addFlags(fs, &cl, kc, sc, known)
	if globals != nil {
		fs.AddFlagSet(globals)
	}
	addUpstreamFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("parse flags: %w", err)
	}
	if v, ok := fs.Lookup("version").Value.(*versionValue); ok && v.set {
		// As the kubelet, after its flags parse and before the config file is read: the
		// release is the flag's, and a flag it does not have fails first.
		r := release.Newest()
		if fs.Changed(flagEmulatedVersion) {
			var err error
			if r, err = release.Parse(sc.EmulatedVersion); err != nil {
				return nil, fmt.Errorf("invalid --%s: %w", flagEmulatedVersion, err)
			}
		}
		if err := releaseFlags(fs, r); err != nil {
			return nil, fmt.Errorf("parse flags: %w", err)
		}
		return nil, &VersionRequest{Release: r}
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unknown command %q", fs.Arg(0))
	}
	flagGates := copyGates(kc.FeatureGates)
	var file *File
	if cl.configFile != "" {
		var err error
		if file, err = LoadFile(cl.configFile); err != nil {
			return nil, err
		}
	}
	// The release first, the flag's else the file's: which gates exist, and at which stage,
	// is that release's, for the flags' gates as for the file's.
	r := release.Newest()
	var err error
	switch {
	case fs.Changed(flagEmulatedVersion):
		if r, err = emulate(gate, sc.EmulatedVersion, "--"+flagEmulatedVersion); err != nil {
			return nil, err
		}
	case file != nil && file.Simulator != nil && file.setPaths["simulatorConfiguration.emulatedVersion"]:
		if r, err = emulate(gate, file.Simulator.EmulatedVersion, "simulatorConfiguration.emulatedVersion in "+file.Path); err != nil {
			return nil, err
		}
	}
	if err := releaseFlags(fs, r); err != nil {
		return nil, fmt.Errorf("parse flags: %w", err)
	}
	if err := gate.SetFromMap(kc.FeatureGates); err != nil {
		return nil, fmt.Errorf("invalid --%s: %w", flagFeatureGates, err)
	}

	cfg := &Config{}
	prov := &provenance{}
	final := fs
	if file != nil {
		var err error
		cfg.ConfigFile, prov.file, prov.filePaths = file.Path, file.Path, file.setPaths
		if file.Kubelet != nil {
			kc = file.Kubelet
			if err := checkFileGates(kc, gate, file.Path); err != nil {
				return nil, err
			}
			cfg.UnsimulatedFields = file.UnsimulatedFields
		}
		if file.Simulator != nil {
			sc = file.Simulator
		}
		if final, err = flagPrecedence(args, kc, sc, known, globals); err != nil {
			return nil, fmt.Errorf("parse flags over config file %s: %w", file.Path, err)
		}
		if err := gate.SetFromMap(kc.FeatureGates); err != nil {
			return nil, featureGatesError(err, gate, kc.FeatureGates, flagGates, file.Path)
		}
	}

	sc.NodeName = resolveNodeName(cl.hostnameOverride, sc.NodeName)
	cfg.Kubeconfig = cl.kubeconfig
	cfg.CertDir = cl.certDir
	cfg.BootstrapKubeconfig = cl.bootstrapKubeconfig
	if cl.bootstrapKubeconfig != "" && cl.kubeconfig == "" {
		return nil, fmt.Errorf("--%s %s needs --%s: where the kubeconfig it bootstraps is written",
			flagBootstrapKubeconfig, cl.bootstrapKubeconfig, flagKubeconfig)
	}
	// Certificates from the API server (a bootstrap, a rotated client certificate, the
	// serving one) are kept in the cert dir.
	fromAPI := cl.bootstrapKubeconfig != "" || (cl.kubeconfig != "" && (kc.RotateCertificates || kc.ServerTLSBootstrap))
	if fromAPI && cl.certDir == "" {
		// The kubelet's default is /var/lib/kubelet/pki; a simulated node keeps its
		// certificate in the user's cache, one directory per node name.
		dir, err := userCacheDir()
		if err != nil {
			return nil, fmt.Errorf("certificates from the API server without --%s: %w", flagCertDir, err)
		}
		cfg.CertDir = filepath.Join(dir, "minikubelet", sc.NodeName, "pki")
	}
	if cl.nodeIP != "" {
		if ip := net.ParseIP(cl.nodeIP); ip == nil || ip.IsUnspecified() {
			return nil, fmt.Errorf("invalid --%s %q: must be a specific IP address (10.0.0.5, fd00::5)", flagNodeIP, cl.nodeIP)
		}
	}
	cfg.NodeIP = cl.nodeIP
	if cl.nodeCount < 1 || cl.nodeCount > MaxNodeCount {
		return nil, fmt.Errorf("invalid --%s %d: must be from 1 to %d", flagNodeCount, cl.nodeCount, MaxNodeCount)
	}
	cfg.NodeCount = cl.nodeCount
	if cl.record != "" && cl.nodeCount > 1 {
		return nil, fmt.Errorf("invalid --%s %q: it records one node, and --%s is %d", flagRecord, cl.record, flagNodeCount, cl.nodeCount)
	}
	if cl.recordMaxBytes < MinRecordMaxBytes {
		return nil, fmt.Errorf("invalid --%s %d: must be at least %d", flagRecordMaxBytes, cl.recordMaxBytes, MinRecordMaxBytes)
	}
	cfg.Record, cfg.RecordMaxBytes = cl.record, cl.recordMaxBytes
	cfg.Args = slices.Clone(args)
	if err := validateNodeLabels(cl.nodeLabels); err != nil {
		return nil, err
	}
	cfg.NodeLabels = cl.nodeLabels
	prov.changedFlags = map[string]bool{}
	final.Visit(func(f *pflag.Flag) { prov.changedFlags[f.Name] = true })

	setGatedDefaults(kc, gate)
	forRelease(kc, sc.Release(), prov)
	if err := validate(kc, sc, gate, prov); err != nil {
		return nil, err
	}
	if err := validateNodePorts(kc, cfg.NodeCount); err != nil {
		return nil, err
	}
	cfg.Kubelet, cfg.Simulator = *kc, *sc
	cfg.FeatureGates = copyGates(kc.FeatureGates)
	if cfg.FeatureGates == nil {
		cfg.FeatureGates = map[string]bool{}
	}
	cfg.UnsimulatedFlags = unsimulatedFlags(fs)
	for _, name := range sortedKeys(cfg.FeatureGates) {
		// AllAlpha and AllBeta switch every alpha or beta gate, simulated ones included.
		if name != "AllAlpha" && name != "AllBeta" && !features.Simulated(featuregate.Feature(name)) {
			cfg.UnsimulatedGates = append(cfg.UnsimulatedGates, fmt.Sprintf("%s=%t", name, cfg.FeatureGates[name]))
		}
	}
	return cfg, nil
}

// userCacheDir is os.UserCacheDir; tests replace it.
var userCacheDir = os.UserCacheDir

// flagPrecedence re-parses args over the loaded kc and sc and merges the feature gates
// (upstream kubeletConfigFlagPrecedence). A fresh flag set is used because some values
// (--feature-gates) accumulate across Set calls; global flags are accepted but not
// applied again. It returns the flag set, to tell which flags were given.
func flagPrecedence(args []string, kc *KubeletConfiguration, sc *SimulatorConfiguration, known []string, globals *pflag.FlagSet) (*pflag.FlagSet, error) {
	fs := pflag.NewFlagSet("minikubelet", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	addFlags(fs, &commandLine{}, kc, sc, known)
	if globals != nil {
		globals.VisitAll(func(f *pflag.Flag) {
			fs.VarP(noOpValue{typ: f.Value.Type()}, f.Name, f.Shorthand, f.Usage)
			fs.Lookup(f.Name).NoOptDefVal = f.NoOptDefVal
		})
	}
	addUpstreamFlags(fs)
	original := kc.FeatureGates
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	// A --feature-gates flag replaced the map; put back the file's keys it did not set.
	if kc.FeatureGates == nil && len(original) > 0 {
		kc.FeatureGates = map[string]bool{}
	}
	for k, v := range original {
		if _, ok := kc.FeatureGates[k]; !ok {
			kc.FeatureGates[k] = v
		}
	}
	return fs, nil
}

func copyGates(m map[string]bool) map[string]bool {
	if m == nil {
		return nil
	}
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// featureGatesError explains a failed SetFromMap of the merged gates. The flag keys were
// accepted in step 1, so the culprit is normally a key only the file sets; the error then
// names the file's field.
func featureGatesError(err error, gate featuregate.MutableFeatureGate, merged, flagGates map[string]bool, file string) error {
	fileOnly := map[string]bool{}
	for k, v := range merged {
		if _, byFlag := flagGates[k]; !byFlag {
			fileOnly[k] = v
		}
	}
	if ferr := gate.DeepCopy().SetFromMap(fileOnly); ferr != nil {
		return fmt.Errorf("kubeletConfiguration.featureGates (set in %s): %w", file, ferr)
	}
	return fmt.Errorf("set feature gates from config file %s and --%s: %w", file, flagFeatureGates, err)
}

// checkFileGates refuses the file's featureGates names the v1.37 kubelet does not have, as
// the kubelet does, naming the file, and the registered gate a misspelt name is near.
// (A name v1.37 has is accepted, simulated or not; Load lists the ones not simulated.)
func checkFileGates(kc *KubeletConfiguration, gate featuregate.MutableFeatureGate, file string) error {
	known := gate.GetAll()
	var errs []error
	for _, name := range sortedKeys(kc.FeatureGates) {
		if _, ok := known[featuregate.Feature(name)]; ok {
			continue
		}
		msg := fmt.Sprintf("kubeletConfiguration.featureGates (set in %s): unrecognized feature gate: %s", file, name)
		if near := nearestGate(name, known); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		errs = append(errs, errors.New(msg))
	}
	if len(errs) > 0 {
		return &AggregateError{Errs: errs}
	}
	return nil
}

// nearestGate returns a registered gate name that name is probably a misspelling of, or "".
func nearestGate(name string, known map[featuregate.Feature]featuregate.FeatureSpec) string {
	best, bestDist := "", 3
	for k := range known {
		cand := string(k)
		if strings.EqualFold(cand, name) {
			return cand
		}
		if d := editDistance(strings.ToLower(cand), strings.ToLower(name)); d < bestDist || (d == bestDist && cand < best) {
			best, bestDist = cand, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
