package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

const testFile = "/etc/minikubelet/config.yaml"

func TestParseFileErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		// want are substrings the error must contain, in any order.
		want []string
	}{
		{
			name: "typo in a kubelet field",
			data: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsyncFrequncy: 1m\n",
			want: []string{testFile, "document 1 (line 1)", `unknown field "kubeletConfiguration.syncFrequncy"`},
		},
		{
			name: "field in the wrong case",
			data: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nMaxPods: 10\n",
			want: []string{`unknown field "kubeletConfiguration.MaxPods"`},
		},
		{
			name: "typo in a nested simulator field",
			data: "apiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\npleg:\n  relistPerod: 2s\n",
			want: []string{`unknown field "simulatorConfiguration.pleg.relistPerod"`},
		},
		{
			name: "typo inside a fault",
			data: "apiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\nruntime:\n  faults:\n  - method: Status\n    typ: error\n",
			want: []string{`unknown field "simulatorConfiguration.runtime.faults[0].typ"`},
		},
		{
			name: "every unknown field is reported",
			data: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfoo: 1\nbar: 2\n",
			want: []string{`"kubeletConfiguration.bar"`, `"kubeletConfiguration.foo"`, "2 errors"},
		},
		{
			name: "bad duration",
			data: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsyncFrequency: often\n",
			want: []string{`kubeletConfiguration.syncFrequency: invalid value "often"`},
		},
		{
			name: "string for an integer",
			data: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: many\n",
			want: []string{`kubeletConfiguration.maxPods: invalid value "many": expected an integer (int32)`},
		},
		{
			name: "bad quantity",
			data: "apiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\nmachine:\n  memory: lots\n",
			want: []string{`simulatorConfiguration.machine.memory: invalid value "lots"`},
		},
		{
			name: "duplicate key",
			data: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 1\nmaxPods: 2\n",
			want: []string{"invalid YAML", "maxPods"},
		},
		{
			name: "unknown kind names the document",
			data: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n---\napiVersion: v1\nkind: Pod\n",
			want: []string{"document 2 (line 4)", "unknown apiVersion/kind v1/Pod"},
		},
		{
			name: "unknown version of a known kind",
			data: "apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n",
			want: []string{"document 1", "unknown apiVersion/kind kubelet.config.k8s.io/v1alpha1/KubeletConfiguration"},
		},
		{
			name: "missing kind",
			data: "# comment\nmaxPods: 3\n",
			want: []string{"document 1 (line 2)", "apiVersion and kind are required"},
		},
		{
			name: "two documents of the same kind",
			data: "apiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\n---\napiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\n",
			want: []string{"document 2", "a second SimulatorConfiguration document"},
		},
		{
			name: "a list is not a document",
			data: "- a\n- b\n",
			want: []string{"document 1", "not a YAML mapping"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFile(testFile, []byte(tt.data))
			if err == nil {
				t.Fatalf("ParseFile succeeded (%+v), want an error containing %q", f, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestParseFileDocuments(t *testing.T) {
	tests := []struct {
		name          string
		data          string
		wantKubelet   bool
		wantSimulator bool
	}{
		{"empty file", "", false, false},
		{"comments only", "# nothing here\n---\n# nor here\n", false, false},
		{"kubelet only", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n", true, false},
		{"simulator only", "---\napiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\n", false, true},
		{"both, simulator first, separator comment", "apiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\n--- # kubelet\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n", true, true},
		{"empty documents between", "---\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n---\n", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFile(testFile, []byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if (f.Kubelet != nil) != tt.wantKubelet || (f.Simulator != nil) != tt.wantSimulator {
				t.Errorf("kubelet document found=%t, simulator found=%t; want %t, %t", f.Kubelet != nil, f.Simulator != nil, tt.wantKubelet, tt.wantSimulator)
			}
		})
	}
}

func TestKubeletFileDefaulting(t *testing.T) {
	const head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, kc *KubeletConfiguration)
	}{
		{"zero durations mean default", "syncFrequency: 0s\nfileCheckFrequency: 0s\nnodeStatusUpdateFrequency: 0s\nnodeStatusReportFrequency: 0s\nmaxPods: 0\n",
			func(t *testing.T, kc *KubeletConfiguration) {
				want := []time.Duration{DefaultSyncFrequency, DefaultFileCheckFrequency, DefaultNodeStatusUpdateFrequency, DefaultNodeStatusReportFrequency}
				got := []time.Duration{kc.SyncFrequency.Duration, kc.FileCheckFrequency.Duration, kc.NodeStatusUpdateFrequency.Duration, kc.NodeStatusReportFrequency.Duration}
				if !reflect.DeepEqual(got, want) || kc.MaxPods != DefaultMaxPods {
					t.Errorf("got %v maxPods %d, want %v maxPods %d", got, kc.MaxPods, want, DefaultMaxPods)
				}
			}},
		{"report frequency follows an explicit update frequency", "nodeStatusUpdateFrequency: 20s\n",
			func(t *testing.T, kc *KubeletConfiguration) {
				if kc.NodeStatusReportFrequency.Duration != 20*time.Second {
					t.Errorf("nodeStatusReportFrequency = %v, want 20s", kc.NodeStatusReportFrequency.Duration)
				}
			}},
		{"explicit report frequency kept", "nodeStatusUpdateFrequency: 20s\nnodeStatusReportFrequency: 1m\n",
			func(t *testing.T, kc *KubeletConfiguration) {
				if kc.NodeStatusReportFrequency.Duration != time.Minute {
					t.Errorf("nodeStatusReportFrequency = %v, want 1m", kc.NodeStatusReportFrequency.Duration)
				}
			}},
		{"read-only port defaults to 10255 in a file", "",
			func(t *testing.T, kc *KubeletConfiguration) {
				if kc.ReadOnlyPort != DefaultReadOnlyPort {
					t.Errorf("readOnlyPort = %d, want %d", kc.ReadOnlyPort, DefaultReadOnlyPort)
				}
			}},
		{"eviction defaults when unset", "",
			func(t *testing.T, kc *KubeletConfiguration) {
				if !reflect.DeepEqual(kc.EvictionHard, DefaultEvictionHard()) {
					t.Errorf("evictionHard = %v, want %v", kc.EvictionHard, DefaultEvictionHard())
				}
			}},
		{"partial evictionHard is not merged with defaults", "evictionHard:\n  memory.available: 1Gi\n",
			func(t *testing.T, kc *KubeletConfiguration) {
				if !reflect.DeepEqual(kc.EvictionHard, map[string]string{"memory.available": "1Gi"}) {
					t.Errorf("evictionHard = %v, want only memory.available", kc.EvictionHard)
				}
			}},
		{"debugging handlers unset unless set (fault handlers off, secure port's on)", "",
			func(t *testing.T, kc *KubeletConfiguration) {
				if kc.EnableDebuggingHandlers != nil {
					t.Errorf("enableDebuggingHandlers = %v, want unset", *kc.EnableDebuggingHandlers)
				}
			}},
		{"relative staticPodPath is relative to the file", "staticPodPath: pods\n",
			func(t *testing.T, kc *KubeletConfiguration) {
				if kc.StaticPodPath != "/etc/minikubelet/pods" {
					t.Errorf("staticPodPath = %q, want /etc/minikubelet/pods", kc.StaticPodPath)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFile(testFile, []byte(head+tt.body))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, f.Kubelet)
		})
	}
}

func TestSimulatorDecodedOverDefaults(t *testing.T) {
	f, err := ParseFile(testFile, []byte("apiVersion: minikubelet.io/v1alpha1\nkind: SimulatorConfiguration\nmachine:\n  cpu: 16\npleg:\n  relistPeriod: 2s\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := NewSimulatorConfiguration()
	want.Machine.CPU = resource.MustParse("16")
	want.PLEG.RelistPeriod.Duration = 2 * time.Second
	if f.Simulator.Machine.CPU.Cmp(want.Machine.CPU) != 0 || f.Simulator.Machine.Memory.Cmp(want.Machine.Memory) != 0 {
		t.Errorf("machine = %+v, want cpu 16 and default memory", f.Simulator.Machine)
	}
	if f.Simulator.PLEG != want.PLEG || f.Simulator.EventedPLEG != want.EventedPLEG {
		t.Errorf("pleg = %+v / %+v, want %+v / %+v", f.Simulator.PLEG, f.Simulator.EventedPLEG, want.PLEG, want.EventedPLEG)
	}
}

func TestRealNodeConfigsLoad(t *testing.T) {
	tests := []struct {
		file            string
		wantUnsimulated []string // a sample that must be listed
		notUnsimulated  []string // modelled fields that must not be
	}{
		{"kubeadm-node.yaml", []string{"cgroupDriver", "logging"}, []string{"rotateCertificates", "clusterDNS", "clusterDomain", "syncFrequency", "staticPodPath", "shutdownGracePeriod", "authentication", "authorization"}},
		{"production-node.yaml", []string{"tlsCipherSuites", "cgroupDriver"}, []string{"serverTLSBootstrap", "registerWithTaints", "evictionHard", "evictionSoft", "kubeReserved", "featureGates", "maxPods"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := LoadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if f.Kubelet == nil {
				t.Fatal("no KubeletConfiguration loaded")
			}
			listed := map[string]int{}
			for _, u := range f.UnsimulatedFields {
				listed[u]++
			}
			for _, w := range tt.wantUnsimulated {
				if listed[w] != 1 {
					t.Errorf("%s listed %d times as not simulated, want once; list: %v", w, listed[w], f.UnsimulatedFields)
				}
			}
			for _, w := range tt.notUnsimulated {
				if listed[w] != 0 {
					t.Errorf("modelled field %s listed as not simulated", w)
				}
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: err = %v, want one naming the file", err)
	}
	if _, err := LoadFile(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: err = %v, want 'is a directory'", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, maxConfigFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(big); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized file: err = %v, want a size error", err)
	}
}
