package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/minikubelet/minikubelet/pkg/kubeletref"
)

// TestFlagHelpShowsValueTypes guards the --help text: pflag takes a `back-quoted` word of
// a usage string as the value's name, so a stray back quote turns "--read-only-port int32"
// into "--read-only-port Serving HTTP ...".
func TestFlagHelpShowsValueTypes(t *testing.T) {
	fs := NewFlagSet("minikubelet", []string{"EventedPLEG=true|false (ALPHA - default=false)"})
	want := map[string]string{
		flagConfig:                    "string",
		flagFeatureGates:              "mapStringBool",
		flagPodManifestPath:           "string",
		flagHostnameOverride:          "string",
		flagKubeconfig:                "string",
		flagNodeLabels:                "mapStringString",
		flagSyncFrequency:             "duration",
		flagFileCheckFrequency:        "duration",
		flagNodeStatusUpdateFrequency: "duration",
		flagMaxPods:                   "int32",
		flagClusterDNS:                "strings",
		flagClusterDomain:             "string",
		flagAllowedUnsafeSysctls:      "strings",
		flagAddress:                   "string",
		flagReadOnlyPort:              "int32",
		flagEnableDebuggingHandlers:   "", // a switch: no value name
		flagRelistPeriod:              "duration",
		flagRelistThreshold:           "duration",
		flagMetricsPrefix:             "string",
		flagEmulatedVersion:           "string",
		flagSeed:                      "int",
		flagAllowRemoteDebugging:      "", // a switch
		flagPort:                      "int32",
		flagTLSCertFile:               "string",
		flagTLSPrivateKeyFile:         "string",
		flagCertDir:                   "string",
		flagNodeIP:                    "string",
		flagNodeCount:                 "int",
		flagProgramCPU:                "quantity",
		flagRuntimeHandlers:           "strings",
		flagRecord:                    "string",
		flagRecordMaxBytes:            "int",
		flagAnonymousAuth:             "", // a switch
		flagAuthnWebhook:              "", // a switch
		flagAuthnWebhookCacheTTL:      "duration",
		flagClientCAFile:              "string",
		flagAuthorizationMode:         "string",
		flagAuthzCacheAuthorizedTTL:   "duration",
		flagAuthzCacheUnauthorizedTTL: "duration",

		"runtime-request-timeout":             "duration",
		"bootstrap-kubeconfig":                "string",
		"rotate-certificates":                 "",
		"rotate-server-certificates":          "",
		"resolv-conf":                         "string",
		"container-log-max-size":              "string",
		"container-log-max-files":             "int32",
		"pod-max-pids":                        "int",
		"kube-api-content-type":               "string",
		"kube-api-qps":                        "int32",
		"kube-api-burst":                      "int32",
		"register-with-taints":                "[]v1.Taint",
		"event-qps":                           "int32",
		"event-burst":                         "int32",
		"eviction-hard":                       "mapStringString",
		"eviction-soft":                       "mapStringString",
		"eviction-soft-grace-period":          "mapStringString",
		"eviction-minimum-reclaim":            "mapStringString",
		"kube-reserved":                       "mapStringString",
		"system-reserved":                     "mapStringString",
		"eviction-pressure-transition-period": "duration",
		"eviction-max-pod-grace-period":       "int32",
	}
	seen := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "version" {
			return // the kubelet's flags the simulator only accepts (TestEveryKubeletFlag)
		}
		seen++
		wantName, ok := want[f.Name]
		if !ok {
			t.Errorf("flag --%s is not in this test: add it", f.Name)
			return
		}
		if name, _ := pflag.UnquoteUsage(f); name != wantName {
			t.Errorf("--%s shows value name %q in --help, want %q", f.Name, name, wantName)
		}
	})
	if seen != len(want) {
		t.Errorf("flag set has %d flags, the test knows %d", seen, len(want))
	}
	if usage := fs.Lookup(flagFeatureGates).Usage; !strings.HasSuffix(usage, "Options are:\nEventedPLEG=true|false (ALPHA - default=false)") {
		t.Errorf("--feature-gates usage does not end with the known features:\n%s", usage)
	}
}

// TestEveryKubeletFlag: every flag of the v1.37 kubelet is on the command line (klog's -v
// and --vmodule come from the caller). A flag that sets a KubeletConfiguration field the
// simulator models is the simulator's own, so it acts: none is merely accepted.
func TestEveryKubeletFlag(t *testing.T) {
	fs := NewFlagSet("minikubelet", nil)
	for _, f := range kubeletref.Flags() {
		if notOnCommandLine[f.Name] {
			continue
		}
		got := fs.Lookup(f.Name)
		if got == nil {
			t.Errorf("--%s (a v1.37 kubelet flag) is unknown", f.Name)
			continue
		}
		if _, accepted := got.Value.(*unsimulatedValue); accepted && modelledKubeletFields[f.Field] {
			t.Errorf("--%s sets kubeletConfiguration.%s, which the simulator models, but is only accepted", f.Name, f.Field)
		}
		if f.NoOptDefVal != "" && got.NoOptDefVal != f.NoOptDefVal {
			t.Errorf("--%s: a bare flag means %q, the kubelet's %q", f.Name, got.NoOptDefVal, f.NoOptDefVal)
		}
	}
}
