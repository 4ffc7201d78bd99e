package config

import (
	"strings"
)

// notReplayed are the flags a recorded scenario leaves out: what names files of this machine
// (the scenario carries the config file's content, and simulate has its own manifest
// directory), the cluster to join (a recording replays against simulate's in-process API),
// and the recorder's own.
var notReplayed = map[string]bool{
	flagConfig: true, flagKubeconfig: true, flagPodManifestPath: true, flagCertDir: true,
	flagTLSCertFile: true, flagTLSPrivateKeyFile: true, flagClientCAFile: true,
	flagRecord: true, flagRecordMaxBytes: true, flagNodeCount: true,
	// The recorder writes the node's name itself, whatever set it (a flag, the file, the
	// host name).
	flagHostnameOverride: true,
}

// ReplayArgs returns the daemon flags of args that a scenario replaying this run keeps, each
// as one --name=value argument: the flags that shape the node, without the ones that name
// this machine's files (notReplayed) and without the logging flags (-v), which are not the
// daemon's.
func ReplayArgs(args []string) []string {
	fs := NewFlagSet("replay", nil)
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if f == nil {
			// A global flag (-v 4, --vmodule x): its value may follow; it is not the daemon's.
			if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		if !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			value, hasValue = args[i+1], true
			i++
		}
		if notReplayed[name] {
			continue
		}
		if !hasValue {
			out = append(out, "--"+name)
			continue
		}
		out = append(out, "--"+name+"="+value)
	}
	return out
}
