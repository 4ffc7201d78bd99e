package config

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
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
		flagSeed:                      "int",
		flagAllowRemoteDebugging:      "", // a switch
		flagPort:                      "int32",
		flagTLSCertFile:               "string",
		flagTLSPrivateKeyFile:         "string",
		flagCertDir:                   "string",
		flagNodeIP:                    "string",
		flagNodeCount:                 "int",
		flagRecord:                    "string",
		flagRecordMaxBytes:            "int",
		flagAnonymousAuth:             "", // a switch
		flagAuthnWebhook:              "", // a switch
		flagAuthnWebhookCacheTTL:      "duration",
		flagClientCAFile:              "string",
		flagAuthorizationMode:         "string",
		flagAuthzCacheAuthorizedTTL:   "duration",
		flagAuthzCacheUnauthorizedTTL: "duration",
	}
	seen := 0
	fs.VisitAll(func(f *pflag.Flag) {
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
