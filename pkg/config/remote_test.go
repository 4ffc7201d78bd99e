package config

import (
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/features"
)

// TestRemoteDebuggingRefused: fault injection and pprof are served only on loopback
// unless --allow-remote-debugging (or simulatorConfiguration.allowRemoteDebugging) says
// otherwise; the error names the address, where it was set, the handlers and the flag.
// Only validation runs here: nothing binds the addresses.
func TestRemoteDebuggingRefused(t *testing.T) {
	const profiling = kubeletHead + "enableProfilingHandler: true\n"
	tests := []struct {
		name string
		file string // config file content; "" means no file
		args []string
		want []string // substrings of the error; nil: valid
	}{
		{"loopback with fault injection", "", []string{"--enable-debugging-handlers"}, nil},
		{"127.0.0.2 is loopback too", "", []string{"--address=127.0.0.2", "--enable-debugging-handlers"}, nil},
		{"::1 with fault injection", "", []string{"--address=::1", "--enable-debugging-handlers"}, nil},
		{"0.0.0.0 with fault injection", "", []string{"--address=0.0.0.0", "--enable-debugging-handlers"},
			[]string{`kubeletConfiguration.address: invalid value "0.0.0.0" (set by --address)`, "fault-injection handlers (enableDebuggingHandlers: true)", "--allow-remote-debugging"}},
		{":: with fault injection", "", []string{"--address=::", "--enable-debugging-handlers"}, []string{`invalid value "::"`, "--allow-remote-debugging"}},
		{"0.0.0.0 with fault injection and the flag", "", []string{"--address=0.0.0.0", "--enable-debugging-handlers", "--allow-remote-debugging"}, nil},
		{"0.0.0.0, debugging handlers unset (exec and logs on the secure port, as upstream)", "", []string{"--address=0.0.0.0"}, nil},
		{"0.0.0.0, debugging handlers off", "", []string{"--address=0.0.0.0", "--enable-debugging-handlers=false"}, nil},
		{"a node IP with pprof from the file", profiling, []string{"--config=$CONFIG", "--address=10.1.2.3"},
			[]string{`invalid value "10.1.2.3"`, "the profiling handler (enableProfilingHandler: true)", "--allow-remote-debugging"}},
		{"loopback with pprof", profiling, []string{"--config=$CONFIG"}, nil},
		{"both named", profiling + "address: 0.0.0.0\nenableDebuggingHandlers: true\n", []string{"--config=$CONFIG"},
			[]string{"(set in ", "fault-injection handlers (enableDebuggingHandlers: true) and the profiling handler"}},
		{"allowed in the simulator document", profiling + "address: 0.0.0.0\nenableDebuggingHandlers: true\n---\n" + simulatorHead + "allowRemoteDebugging: true\n",
			[]string{"--config=$CONFIG"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeConfig(t, tt.file)
			}
			_, err := Load(expandArgs(tt.args, path), features.NewFeatureGate(), nil)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Load(%v): %v, want it accepted", tt.args, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load(%v) accepted, want an error with %q", tt.args, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true, "LOCALHOST": true,
		"0.0.0.0": false, "::": false, "10.0.0.1": false, "::ffff:10.0.0.1": false, "": false, "my-host": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %t, want %t", addr, got, want)
		}
	}
}
