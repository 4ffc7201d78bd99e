package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kubeletref"
)

// TestV137Defaults: the fields v1.37 added get v1.37's defaults (the gated ones from the
// final gate), and mergeDefaultEvictionSettings merges as the kubelet's loadConfigFile.
func TestV137Defaults(t *testing.T) {
	type want struct {
		restartPeriod   time.Duration
		restartSet      bool
		pullPolicy      kubeletv1beta1.ImagePullCredentialsVerificationPolicy
		singleProcess   bool
		idsPerPod       uint32
		evictionHard    map[string]string
		podPidsLimit    int64
		failCgroupV1    bool
		memoryPolicy    kubeletv1beta1.MemoryReservationPolicy
		mergeEvictions  bool
		unsimulatedKeys string
	}
	base := want{
		restartPeriod: 300 * time.Second, restartSet: true, pullPolicy: kubeletv1beta1.NeverVerifyPreloadedImages,
		idsPerPod: 65536, evictionHard: DefaultEvictionHard(), podPidsLimit: -1, failCgroupV1: true,
		memoryPolicy: kubeletv1beta1.NoneMemoryReservationPolicy,
	}
	with := func(change func(w *want)) want {
		w := base
		change(&w)
		return w
	}
	merged := DefaultEvictionHard()
	merged["memory.available"] = "1Gi"
	tests := []struct {
		name string
		file string // "" means no config file
		args []string
		want want
	}{
		{name: "no config file", want: base},
		{name: "empty config file", file: kubeletHead, want: base},
		{name: "gates off in the file leave the gated fields unset", file: kubeletHead + "featureGates:\n  KubeletCrashLoopBackOffMax: false\n  KubeletEnsureSecretPulledImages: false\n",
			want: with(func(w *want) { w.restartSet, w.pullPolicy = false, "" })},
		{name: "gate off by flag alone (upstream refuses its own default there)", args: []string{"--feature-gates=KubeletCrashLoopBackOffMax=false"},
			want: with(func(w *want) { w.restartSet = false })},
		{name: "values from the file", file: kubeletHead + "crashLoopBackOff:\n  maxContainerRestartPeriod: 30s\nsingleProcessOOMKill: true\nuserNamespaces:\n  idsPerPod: 131072\npodPidsLimit: -5\n",
			want: with(func(w *want) { w.restartPeriod, w.singleProcess, w.idsPerPod = 30*time.Second, true, 131072 })},
		{name: "idsPerPod unset in userNamespaces", file: kubeletHead + "userNamespaces: {}\n", want: base},
		{name: "a written evictionHard is used as is", file: kubeletHead + "evictionHard:\n  memory.available: 1Gi\n",
			want: with(func(w *want) { w.evictionHard = map[string]string{"memory.available": "1Gi"} })},
		{name: "mergeDefaultEvictionSettings fills the missing signals", file: kubeletHead + "mergeDefaultEvictionSettings: true\nevictionHard:\n  memory.available: 1Gi\n",
			want: with(func(w *want) { w.evictionHard, w.mergeEvictions = merged, true })},
		{name: "--eviction-hard replaces the merged map", file: kubeletHead + "mergeDefaultEvictionSettings: true\nevictionHard:\n  memory.available: 1Gi\n",
			args: []string{"--eviction-hard=pid.available<10%"},
			want: with(func(w *want) { w.evictionHard, w.mergeEvictions = map[string]string{"pid.available": "10%"}, true })},
		{name: "checked fields are listed as not simulated", file: kubeletHead + "failCgroupV1: false\nmemoryReservationPolicy: TieredReservation\ntlsCurvePreferences: [29]\nsingleProcessOOMKill: false\n",
			want: with(func(w *want) {
				w.failCgroupV1, w.memoryPolicy = false, kubeletv1beta1.TieredReservationMemoryReservationPolicy
				w.unsimulatedKeys = "failCgroupV1,memoryReservationPolicy,tlsCurvePreferences"
			})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--hostname-override=n1"}, tt.args...)
			if tt.file != "" {
				args = append(args, "--config="+writeConfig(t, tt.file))
			}
			cfg, err := Load(args, features.NewFeatureGate(), nil)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			kc := &cfg.Kubelet
			period, set := kc.MaxContainerRestartPeriod()
			got := want{
				restartPeriod: period, restartSet: set, pullPolicy: kc.ImagePullCredentialsVerificationPolicy,
				singleProcess: kc.SingleProcessOOMKillEnabled(), idsPerPod: kc.UserNamespacesIDsPerPod(),
				evictionHard: kc.EvictionHard, podPidsLimit: *kc.PodPidsLimit, failCgroupV1: *kc.FailCgroupV1,
				memoryPolicy: kc.MemoryReservationPolicy, mergeEvictions: *kc.MergeDefaultEvictionSettings,
				unsimulatedKeys: strings.Join(cfg.UnsimulatedFields, ","),
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestV137ValidationErrors: the v1.37 rules of the fields v1.37 added, each message whole.
func TestV137ValidationErrors(t *testing.T) {
	const gatesOn = "featureGates:\n  DefaultPodSysctls: true\n"
	tests := []struct {
		name string
		body string // after kubeletHead; "" in want means valid
		want string
	}{
		{"restart period above 300s", "crashLoopBackOff:\n  maxContainerRestartPeriod: 10m\n",
			`kubeletConfiguration.crashLoopBackOff.maxContainerRestartPeriod: invalid value "10m0s" (set in $CONFIG): must be set between 1s and 300s`},
		{"restart period below 1s", "crashLoopBackOff:\n  maxContainerRestartPeriod: 999ms\n",
			`kubeletConfiguration.crashLoopBackOff.maxContainerRestartPeriod: invalid value "999ms" (set in $CONFIG): must be set between 1s and 300s`},
		{"restart period bounds are inclusive", "crashLoopBackOff:\n  maxContainerRestartPeriod: 300s\n", ""},
		{"restart period without its gate", "featureGates:\n  KubeletCrashLoopBackOffMax: false\ncrashLoopBackOff:\n  maxContainerRestartPeriod: 30s\n",
			`kubeletConfiguration.crashLoopBackOff.maxContainerRestartPeriod: invalid value "30s" (set in $CONFIG): requires feature gate KubeletCrashLoopBackOffMax`},
		{"idsPerPod too small", "userNamespaces:\n  idsPerPod: 1000\n",
			`kubeletConfiguration.userNamespaces.idsPerPod: invalid value 1000 (set in $CONFIG): must not be less than 65536`},
		{"idsPerPod zero", "userNamespaces:\n  idsPerPod: 0\n",
			`kubeletConfiguration.userNamespaces.idsPerPod: invalid value 0 (set in $CONFIG): must not be less than 65536`},
		{"idsPerPod not a multiple", "userNamespaces:\n  idsPerPod: 100000\n",
			`kubeletConfiguration.userNamespaces.idsPerPod: invalid value 100000 (set in $CONFIG): must be a multiple of 65536`},
		{"idsPerPod over 32 bits", "userNamespaces:\n  idsPerPod: 4294967296\n",
			`kubeletConfiguration.userNamespaces.idsPerPod: invalid value 4294967296 (set in $CONFIG): must not be more than 4294967295`},
		{"configMapAndSecretChangeDetectionStrategy Cache", "configMapAndSecretChangeDetectionStrategy: Cache\n", ""},
		{"configMapAndSecretChangeDetectionStrategy unknown", "configMapAndSecretChangeDetectionStrategy: Poll\n",
			`kubeletConfiguration.configMapAndSecretChangeDetectionStrategy: invalid value "Poll" (set in $CONFIG): unknown configmap and secret manager mode: Poll (must be Watch, Cache or Get)`},
		{"singleProcessOOMKill false on cgroup v2", "singleProcessOOMKill: false\n", ""},
		{"failCgroupV1 either way on cgroup v2", "failCgroupV1: false\n", ""},
		{"defaultPodSysctls without its gate", "defaultPodSysctls:\n  net.ipv4.ip_forward: \"1\"\n",
			`kubeletConfiguration.defaultPodSysctls: invalid value {"net.ipv4.ip_forward": "1"} (set in $CONFIG): requires feature gate DefaultPodSysctls`},
		{"defaultPodSysctls v1.37 namespaces", gatesOn + "defaultPodSysctls:\n  kernel.domainname: sim\n  user.max_user_namespaces: \"0\"\n  net/ipv4/ip_forward: \"1\"\n  fs.mqueue.msg_max: \"20\"\n", ""},
		{"defaultPodSysctls not namespaced", gatesOn + "defaultPodSysctls:\n  kernel.panic: \"1\"\n",
			`kubeletConfiguration.defaultPodSysctls[kernel.panic]: invalid value "1" (set in $CONFIG): "kernel.panic" is not known to be namespaced`},
		{"defaultPodSysctls wildcard", gatesOn + "defaultPodSysctls:\n  net.*: \"1\"\n",
			`kubeletConfiguration.defaultPodSysctls[net.*]: invalid value "1" (set in $CONFIG): "net.*" is not a valid sysctl name`},
		{"defaultPodSysctls the same sysctl twice", gatesOn + "defaultPodSysctls:\n  net.ipv4.ip_forward: \"1\"\n  net/ipv4/ip_forward: \"0\"\n",
			`kubeletConfiguration.defaultPodSysctls[net/ipv4/ip_forward]: invalid value "0" (set in $CONFIG): duplicate sysctl "net.ipv4.ip_forward" (also set as "net.ipv4.ip_forward")`},
		{"unknown pull credentials policy", "imagePullCredentialsVerificationPolicy: Sometimes\n",
			`kubeletConfiguration.imagePullCredentialsVerificationPolicy: invalid value "Sometimes" (set in $CONFIG): must be one of NeverVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages, AlwaysVerify`},
		{"pull credentials policy without its gate", "featureGates:\n  KubeletEnsureSecretPulledImages: false\nimagePullCredentialsVerificationPolicy: AlwaysVerify\n",
			`kubeletConfiguration.imagePullCredentialsVerificationPolicy: invalid value "AlwaysVerify" (set in $CONFIG): requires feature gate KubeletEnsureSecretPulledImages`},
		{"allowlist without its gate", "featureGates:\n  KubeletEnsureSecretPulledImages: false\npreloadedImagesVerificationAllowlist: [registry.k8s.io/pause]\n",
			`kubeletConfiguration.preloadedImagesVerificationAllowlist: invalid value ["registry.k8s.io/pause"] (set in $CONFIG): requires feature gate KubeletEnsureSecretPulledImages`},
		{"allowlist with another policy", "preloadedImagesVerificationAllowlist: [registry.k8s.io/pause]\n",
			`kubeletConfiguration.preloadedImagesVerificationAllowlist: invalid value ["registry.k8s.io/pause"] (set in $CONFIG): must be empty unless imagePullCredentialsVerificationPolicy is NeverVerifyAllowlistedImages`},
		{"allowlist good patterns", "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [registry.k8s.io/pause, \"registry.k8s.io/*\", \"localhost:5000/team/*\"]\n", ""},
		{"allowlist image with a tag", "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [\"registry.k8s.io/pause:3.10\"]\n",
			`kubeletConfiguration.preloadedImagesVerificationAllowlist[0]: invalid value "registry.k8s.io/pause:3.10" (set in $CONFIG): neither tag nor digest is accepted in an image reference`},
		{"allowlist wildcard inside", "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [\"registry.k8s.io/*/pause\"]\n",
			`kubeletConfiguration.preloadedImagesVerificationAllowlist[0]: invalid value "registry.k8s.io/*/pause" (set in $CONFIG): not a valid wildcard pattern, only patterns ending with '/*' are allowed`},
		{"allowlist wildcard alone", "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [\"/*\"]\n",
			`kubeletConfiguration.preloadedImagesVerificationAllowlist[0]: invalid value "/*" (set in $CONFIG): at least registry hostname is required`},
		{"tiered memory reservation without MemoryQoS", "featureGates:\n  MemoryQoS: false\nmemoryReservationPolicy: TieredReservation\n",
			`kubeletConfiguration.memoryReservationPolicy: invalid value "TieredReservation" (set in $CONFIG): requires feature gate MemoryQoS`},
		{"unknown memory reservation policy", "memoryReservationPolicy: Max\n",
			`kubeletConfiguration.memoryReservationPolicy: invalid value "Max" (set in $CONFIG): must be None or TieredReservation`},
		{"curve out of range", "tlsCurvePreferences: [0]\n",
			`kubeletConfiguration.tlsCurvePreferences[0]: invalid value 0 (set in $CONFIG): curve preference is out of range (must be 1-65535)`},
		{"curve twice", "tlsCurvePreferences: [23, 23]\n",
			`kubeletConfiguration.tlsCurvePreferences[1]: invalid value 23 (set in $CONFIG): duplicate curve preference`},
		{"curve crypto/tls does not know", "tlsCurvePreferences: [1234]\n",
			`kubeletConfiguration.tlsCurvePreferences[0]: invalid value 1234 (set in $CONFIG): curve preference is not supported by crypto/tls`},
		{"known curves", "tlsCurvePreferences: [29, 23, 4588]\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, kubeletHead+tt.body)
			_, err := Load([]string{"--hostname-override=n1", "--config=" + path}, features.NewFeatureGate(), nil)
			want := strings.ReplaceAll(tt.want, "$CONFIG", path)
			switch {
			case want == "" && err != nil:
				t.Errorf("Load: %v, want no error", err)
			case want != "" && err == nil:
				t.Errorf("Load succeeded, want %s", want)
			case want != "" && err.Error() != want:
				t.Errorf("error\n%v\nwant\n%s", err, want)
			}
		})
	}
}

// TestValidateRequiresRestartPeriodWithItsGate: a Config built without Load (no gated
// defaults) lacks the period the gate requires.
func TestValidateRequiresRestartPeriodWithItsGate(t *testing.T) {
	c := validConfig()
	c.Kubelet.CrashLoopBackOff.MaxContainerRestartPeriod = nil
	err := Validate(c, features.NewFeatureGate())
	const want = "kubeletConfiguration.crashLoopBackOff.maxContainerRestartPeriod: required value: must be set when feature gate KubeletCrashLoopBackOffMax is enabled"
	if err == nil || err.Error() != want {
		t.Errorf("Validate = %v, want %s", err, want)
	}
}

// TestV137Accessors: what the kubelet reads, for set, unset and zero values.
func TestV137Accessors(t *testing.T) {
	on, off := true, false
	ids, zero := int64(196608), int64(0)
	tests := []struct {
		name          string
		kc            KubeletConfiguration
		period        time.Duration
		periodSet     bool
		singleProcess bool
		idsPerPod     uint32
	}{
		{name: "unset", period: DefaultMaxContainerRestartPeriod, idsPerPod: 65536},
		{name: "set", kc: KubeletConfiguration{
			CrashLoopBackOff:     kubeletv1beta1.CrashLoopBackOffConfig{MaxContainerRestartPeriod: &d45},
			SingleProcessOOMKill: &on, UserNamespaces: &kubeletv1beta1.UserNamespaces{IDsPerPod: &ids},
		}, period: 45 * time.Second, periodSet: true, singleProcess: true, idsPerPod: 196608},
		{name: "false and zero", kc: KubeletConfiguration{
			SingleProcessOOMKill: &off, UserNamespaces: &kubeletv1beta1.UserNamespaces{IDsPerPod: &zero},
		}, period: DefaultMaxContainerRestartPeriod, idsPerPod: 65536},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			period, set := tt.kc.MaxContainerRestartPeriod()
			if period != tt.period || set != tt.periodSet {
				t.Errorf("MaxContainerRestartPeriod = %v, %t; want %v, %t", period, set, tt.period, tt.periodSet)
			}
			if got := tt.kc.SingleProcessOOMKillEnabled(); got != tt.singleProcess {
				t.Errorf("SingleProcessOOMKillEnabled = %t, want %t", got, tt.singleProcess)
			}
			if got := tt.kc.UserNamespacesIDsPerPod(); got != tt.idsPerPod {
				t.Errorf("UserNamespacesIDsPerPod = %d, want %d", got, tt.idsPerPod)
			}
		})
	}
}

var d45 = d("45s")

// TestEveryAcceptedKubeletFlagParses: each v1.37 kubelet flag the simulator only accepts
// takes a value of its type (its default, or a sample) and is listed as not simulated.
func TestEveryAcceptedKubeletFlagParses(t *testing.T) {
	samples := map[string]string{"string": "x", "bool": "true", "int32": "1", "int64": "1", "duration": "1s",
		"mapStringString": "a=b", "stringSlice": "a", "ip": "127.0.0.1", "quantity": "1Mi",
		"colonSeparatedMultimapStringString": "a:b", "reserved-memory": "0:memory=1Gi"}
	fs := NewFlagSet("minikubelet", nil)
	for _, f := range kubeletrefFlagsAcceptedOnly(fs) {
		value := f.Default
		if value == "" || value == "[]" {
			value = samples[f.Type]
		}
		t.Run(f.Name, func(t *testing.T) {
			cfg, err := Load([]string{"--hostname-override=n1", "--" + f.Name + "=" + value}, features.NewFeatureGate(), nil)
			if err != nil {
				t.Fatalf("Load(--%s=%s): %v", f.Name, value, err)
			}
			if strings.Join(cfg.UnsimulatedFlags, ",") != "--"+f.Name {
				t.Errorf("unsimulated flags %v, want --%s", cfg.UnsimulatedFlags, f.Name)
			}
		})
	}
}

// kubeletrefFlagsAcceptedOnly returns the kubelet's flags fs only accepts, of the types
// the sample values cover.
func kubeletrefFlagsAcceptedOnly(fs *pflag.FlagSet) []kubeletref.Flag {
	var out []kubeletref.Flag
	for _, f := range kubeletref.Flags() {
		fl := fs.Lookup(f.Name)
		if fl == nil {
			continue
		}
		if _, ok := fl.Value.(*unsimulatedValue); ok {
			out = append(out, f)
		}
	}
	return out
}
