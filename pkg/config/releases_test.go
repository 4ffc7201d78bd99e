package config

import (
	"strings"
	"testing"

	"github.com/minikubelet/minikubelet/pkg/featuregate"
	"github.com/minikubelet/minikubelet/pkg/features"
)

// TestLoadEmulatedVersion loads the same configuration as each release and checks what
// the release decides: the gates there are and their stages, the fields there are, the
// version reported, and where the value came from.
func TestLoadEmulatedVersion(t *testing.T) {
	type gateWant struct {
		name    featuregate.Feature
		known   bool // exists at the release (not pre-alpha there)
		enabled bool
	}
	tests := []struct {
		name    string
		file    string
		args    []string
		release string // the release loaded; "" for an error
		kubelet string // its reported version
		gates   []gateWant
		policy  string // memoryReservationPolicy after defaulting
		cgroup1 bool   // failCgroupV1 after defaulting
		err     []string
	}{
		{name: "default is the newest", release: "1.37", kubelet: "v1.37.2", policy: "None", cgroup1: true,
			gates: []gateWant{{features.NodeDeclaredFeatures, true, true}, {features.PLEGOnDemandRelist, true, true}}},
		{name: "1.36 by flag", args: []string{"--emulated-version=1.36"}, release: "1.36", kubelet: "v1.36.3", policy: "None", cgroup1: true,
			gates: []gateWant{{features.NodeDeclaredFeatures, true, true}, {features.PLEGOnDemandRelist, true, true}}},
		{name: "1.35 by flag", args: []string{"--emulated-version=v1.35"}, release: "1.35", kubelet: "v1.35.4", policy: "", cgroup1: true,
			gates: []gateWant{{features.NodeDeclaredFeatures, true, false}, {features.PLEGOnDemandRelist, false, false}}},
		{name: "1.34 in the file", file: simulatorHead + "emulatedVersion: \"1.34\"\n", release: "1.34", kubelet: "v1.34.4", policy: "",
			gates: []gateWant{{features.NodeDeclaredFeatures, false, false}, {features.ChangeContainerStatusOnKubeletRestart, false, true}}},
		// 1.34's own table: a gate 1.37 removed is there, and the flag 1.35 removed.
		{name: "a gate and a flag of 1.34's own", args: []string{"--emulated-version=1.34", "--feature-gates=SidecarContainers=true,InPlacePodVerticalScalingAllocatedStatus=false",
			"--pod-infra-container-image=registry.k8s.io/pause:3.10"}, release: "1.34", kubelet: "v1.34.4",
			gates: []gateWant{{"SidecarContainers", true, true}, {"InPlacePodVerticalScalingAllocatedStatus", true, false}}},
		{name: "a gate 1.37 removed, at 1.36", args: []string{"--emulated-version=1.36", "--feature-gates=SidecarContainers=true"},
			release: "1.36", kubelet: "v1.36.3", policy: "None", cgroup1: true, gates: []gateWant{{"SidecarContainers", true, true}}},
		{name: "1.34's default kept where the file sets it", file: kubeletHead + "failCgroupV1: true\n---\n" + simulatorHead + "emulatedVersion: \"1.34\"\n",
			release: "1.34", kubelet: "v1.34.4", cgroup1: true},
		{name: "the flag wins over the file", file: simulatorHead + "emulatedVersion: \"1.34\"\n", args: []string{"--emulated-version=1.36"},
			release: "1.36", kubelet: "v1.36.3", policy: "None", cgroup1: true, gates: []gateWant{{features.ChangeContainerStatusOnKubeletRestart, true, false}}},
		{name: "a gate beta at the release can be turned off", args: []string{"--emulated-version=1.36", "--feature-gates=PLEGOnDemandRelist=false"},
			release: "1.36", kubelet: "v1.36.3", policy: "None", cgroup1: true, gates: []gateWant{{features.PLEGOnDemandRelist, true, false}}},
		{name: "the file's gates are judged at the file's release", file: kubeletHead + "featureGates:\n  NodeDeclaredFeatures: true\n---\n" + simulatorHead + "emulatedVersion: \"1.35\"\n",
			release: "1.35", kubelet: "v1.35.4", cgroup1: true, gates: []gateWant{{features.NodeDeclaredFeatures, true, true}}},
		{name: "the file's release judges the flags' gates", file: simulatorHead + "emulatedVersion: \"1.35\"\n", args: []string{"--feature-gates=NodeDeclaredFeatures=false"},
			release: "1.35", kubelet: "v1.35.4", cgroup1: true, gates: []gateWant{{features.NodeDeclaredFeatures, true, false}}},
		{name: "a field of the release is accepted", file: kubeletHead + "tlsCurvePreferences: [29]\n---\n" + simulatorHead + "emulatedVersion: \"1.36\"\n",
			release: "1.36", kubelet: "v1.36.3", policy: "None", cgroup1: true},

		{name: "locked at 1.37", args: []string{"--feature-gates=PLEGOnDemandRelist=false"},
			err: []string{"cannot set feature gate PLEGOnDemandRelist to false, feature is locked to true"}},
		{name: "a gate younger than the release", args: []string{"--emulated-version=1.35", "--feature-gates=PLEGOnDemandRelist=true"},
			err: []string{"invalid --feature-gates: unrecognized feature gate: PLEGOnDemandRelist"}},
		{name: "a younger gate by flag, at the file's release", file: simulatorHead + "emulatedVersion: \"1.35\"\n", args: []string{"--feature-gates=PLEGOnDemandRelist=true"},
			err: []string{"invalid --feature-gates: unrecognized feature gate: PLEGOnDemandRelist"}},
		{name: "a gate the newest removed", args: []string{"--feature-gates=SidecarContainers=true"},
			err: []string{"invalid --feature-gates: unrecognized feature gate: SidecarContainers"}},
		{name: "a flag the release removed", args: []string{"--emulated-version=1.35", "--pod-infra-container-image=registry.k8s.io/pause:3.10"},
			err: []string{"parse flags: unknown flag: --pod-infra-container-image (kubelet 1.35 has no such flag; kubelet 1.34 has it: --emulated-version, simulatorConfiguration.emulatedVersion)"}},
		{name: "a flag the newest removed, at the file's release", file: simulatorHead + "emulatedVersion: \"1.36\"\n", args: []string{"--containerd=/run/c.sock"},
			release: "1.36", kubelet: "v1.36.3", policy: "None", cgroup1: true},
		{name: "a flag the newest removed", args: []string{"--containerd=/run/c.sock"},
			err: []string{"parse flags: unknown flag: --containerd (kubelet 1.37 has no such flag; kubelets 1.34, 1.35, 1.36 have it:"}},
		{name: "a younger gate in the file", file: kubeletHead + "featureGates:\n  NodeDeclaredFeatures: true\n---\n" + simulatorHead + "emulatedVersion: \"1.34\"\n",
			err: []string{"kubeletConfiguration.featureGates (set in $CONFIG): unrecognized feature gate: NodeDeclaredFeatures"}},
		{name: "a field the release does not have", file: kubeletHead + "tlsCurvePreferences: [29]\n---\n" + simulatorHead + "emulatedVersion: \"1.35\"\n",
			err: []string{"kubeletConfiguration.tlsCurvePreferences (set in $CONFIG): unknown field in kubelet 1.35: added in 1.36"}},
		{name: "a 1.37 field at 1.36", file: kubeletHead + "defaultPodSysctls: {net.ipv4.ip_unprivileged_port_start: \"0\"}\n", args: []string{"--emulated-version=1.36"},
			err: []string{"kubeletConfiguration.defaultPodSysctls (set in $CONFIG): unknown field in kubelet 1.36: added in 1.37"}},
		{name: "memoryReservationPolicy at 1.35", file: kubeletHead + "memoryReservationPolicy: None\n", args: []string{"--emulated-version=1.35"},
			err: []string{"kubeletConfiguration.memoryReservationPolicy (set in $CONFIG): unknown field in kubelet 1.35: added in 1.36"}},
		{name: "a release outside the four", args: []string{"--emulated-version=1.33"},
			err: []string{`invalid --emulated-version: "1.33": the simulator emulates the kubelet releases 1.34, 1.35, 1.36 and 1.37`}},
		{name: "a patch", args: []string{"--emulated-version=1.35.4"}, err: []string{`invalid --emulated-version: "1.35.4": give the minor release only (1.35)`}},
		{name: "a bad value in the file", file: simulatorHead + "emulatedVersion: latest\n",
			err: []string{`invalid simulatorConfiguration.emulatedVersion in $CONFIG: "latest": want a kubelet release as 1.MINOR`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			args := tt.args
			if tt.file != "" {
				path = writeConfig(t, tt.file)
				args = append([]string{"--config=" + path}, args...)
			}
			gate := features.NewFeatureGate()
			cfg, err := Load(append(args, "--hostname-override=n1"), gate, nil)
			if tt.release == "" {
				if err == nil {
					t.Fatalf("Load succeeded at %s, want an error", cfg.Simulator.Release())
				}
				for _, w := range tt.err {
					if w = strings.ReplaceAll(w, "$CONFIG", path); !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := cfg.Simulator.Release()
			if r.String() != tt.release || r.KubeletVersion() != tt.kubelet || gate.EmulationVersion().String() != r.Version().String() {
				t.Errorf("release %s (%s), gate emulating %s; want %s (%s)", r, r.KubeletVersion(), gate.EmulationVersion(), tt.release, tt.kubelet)
			}
			all := gate.GetAll() // the gates that exist at the release, with their spec there
			for _, g := range tt.gates {
				_, known := all[g.name]
				if known != g.known || gate.Enabled(g.name) != g.enabled {
					t.Errorf("%s: exists %t, enabled %t; want %t, %t", g.name, known, gate.Enabled(g.name), g.known, g.enabled)
				}
			}
			if got := string(cfg.Kubelet.MemoryReservationPolicy); got != tt.policy {
				t.Errorf("memoryReservationPolicy = %q, want %q", got, tt.policy)
			}
			if got := cfg.Kubelet.FailCgroupV1 != nil && *cfg.Kubelet.FailCgroupV1; got != tt.cgroup1 {
				t.Errorf("failCgroupV1 = %t, want %t", got, tt.cgroup1)
			}
		})
	}
}
