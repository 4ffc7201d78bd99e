package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// fieldNames lists the sorted top-level JSON field names of a configuration type (for
// upstream's k8s.io/kubelet v0.30 KubeletConfiguration: including the inline apiVersion/kind).
func fieldNames(t reflect.Type) []string {
	var names []string
	for name := range jsonFields(t) {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TestKubeletFieldsMatchUpstream fails when our KubeletConfiguration misses an upstream
// field (a real node's file would be rejected) or has one upstream lacks (we would accept
// a field the kubelet rejects).
func TestKubeletFieldsMatchUpstream(t *testing.T) {
	ours := fieldNames(reflect.TypeOf(KubeletConfiguration{}))
	theirs := fieldNames(reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{}))
	oursSet, theirsSet := map[string]bool{}, map[string]bool{}
	for _, n := range ours {
		oursSet[n] = true
	}
	for _, n := range theirs {
		theirsSet[n] = true
		if !oursSet[n] {
			t.Errorf("upstream field %q is missing from config.KubeletConfiguration", n)
		}
	}
	for _, n := range ours {
		if !theirsSet[n] {
			t.Errorf("config.KubeletConfiguration has %q, which upstream v1beta1 does not", n)
		}
	}
	if len(theirs) < 100 {
		t.Fatalf("found only %d upstream fields; the reflection is broken", len(theirs))
	}
}

// TestModelledFieldsDecodeUpstreamValues marshals an upstream configuration with every
// typed field (modelled or checkedNotSimulated) set to a value defaulting keeps, and checks
// that ours decodes it strictly to the same values, and that our encoding decodes strictly
// into upstream's type: the field types agree.
func TestModelledFieldsDecodeUpstreamValues(t *testing.T) {
	on, off := true, false
	logFiles, qps := int32(3), int32(20)
	podPids, idsPerPod := int64(4096), int64(131072)
	up := kubeletv1beta1.KubeletConfiguration{
		TypeMeta:                               metav1.TypeMeta{APIVersion: KubeletAPIVersion, Kind: KubeletKind},
		StaticPodPath:                          "/etc/kubernetes/manifests",
		SyncFrequency:                          metav1.Duration{Duration: 30 * time.Second},
		FileCheckFrequency:                     metav1.Duration{Duration: 7 * time.Second},
		Address:                                "10.0.0.1",
		ReadOnlyPort:                           10255,
		EnableDebuggingHandlers:                &on,
		NodeStatusUpdateFrequency:              metav1.Duration{Duration: 20 * time.Second},
		NodeStatusReportFrequency:              metav1.Duration{Duration: 2 * time.Minute},
		NodeLeaseDurationSeconds:               60,
		RuntimeRequestTimeout:                  metav1.Duration{Duration: 10 * time.Minute},
		MaxPods:                                58,
		ContainerLogMaxSize:                    "50Mi",
		ContainerLogMaxFiles:                   &logFiles,
		PodPidsLimit:                           &podPids,
		ContentType:                            "application/json",
		KubeAPIQPS:                             &qps,
		KubeAPIBurst:                           40,
		EventRecordQPS:                         &qps,
		EventBurst:                             30,
		EvictionHard:                           map[string]string{"memory.available": "1Gi"},
		FeatureGates:                           map[string]bool{"EventedPLEG": true},
		SystemReserved:                         map[string]string{"cpu": "100m"},
		KubeReserved:                           map[string]string{"memory": "512Mi"},
		ShutdownGracePeriod:                    metav1.Duration{Duration: 30 * time.Second},
		ShutdownGracePeriodCriticalPods:        metav1.Duration{Duration: 10 * time.Second},
		Port:                                   10251,
		EvictionSoft:                           map[string]string{"memory.available": "500Mi"},
		EvictionSoftGracePeriod:                map[string]string{"memory.available": "1m30s"},
		EvictionPressureTransitionPeriod:       metav1.Duration{Duration: time.Minute},
		EvictionMaxPodGracePeriod:              60,
		EvictionMinimumReclaim:                 map[string]string{"memory.available": "0.5Gi"},
		CrashLoopBackOff:                       kubeletv1beta1.CrashLoopBackOffConfig{MaxContainerRestartPeriod: &metav1.Duration{Duration: 2 * time.Minute}},
		SingleProcessOOMKill:                   &on,
		UserNamespaces:                         &kubeletv1beta1.UserNamespaces{IDsPerPod: &idsPerPod},
		MergeDefaultEvictionSettings:           &off,
		FailCgroupV1:                           &off,
		ImagePullCredentialsVerificationPolicy: kubeletv1beta1.NeverVerifyAllowlistedImages,
		PreloadedImagesVerificationAllowlist:   []string{"registry.k8s.io/*"},
		DefaultPodSysctls:                      map[string]string{"net.ipv4.ip_forward": "1"},
		MemoryReservationPolicy:                kubeletv1beta1.TieredReservationMemoryReservationPolicy,
		ConfigMapAndSecretChangeDetectionStrategy: kubeletv1beta1.TTLCacheChangeDetectionStrategy,
		TLSCurvePreferences:                       []int32{29, 23},
		TLSCertFile:                               "/etc/kubelet/tls.crt",
		TLSPrivateKeyFile:                         "/etc/kubelet/tls.key",
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: "/etc/kubernetes/pki/ca.crt"},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: &on, CacheTTL: metav1.Duration{Duration: time.Minute}},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: &off},
		},
		Authorization: kubeletv1beta1.KubeletAuthorization{
			Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook,
			Webhook: kubeletv1beta1.KubeletWebhookAuthorization{
				CacheAuthorizedTTL:   metav1.Duration{Duration: time.Minute},
				CacheUnauthorizedTTL: metav1.Duration{Duration: 10 * time.Second},
			},
		},
	}
	data, err := json.Marshal(up)
	if err != nil {
		t.Fatal(err)
	}
	// Upstream's encoding carries every non-omitempty field too (e.g.
	// containerRuntimeEndpoint, authentication): they must be accepted.
	kc, _, errs := decodeKubelet(data)
	if len(errs) > 0 {
		t.Fatalf("decoding upstream's JSON: %v", errs)
	}

	// Every modelled field must have come through: compare by JSON name.
	ourVal, upVal := reflect.ValueOf(*kc), reflect.ValueOf(up)
	upFields := jsonFields(upVal.Type())
	for name, f := range jsonFields(ourVal.Type()) {
		if !modelledKubeletFields[name] && !checkedNotSimulated[name] {
			continue
		}
		got := ourVal.FieldByIndex(f.Index).Interface()
		want := upVal.FieldByIndex(upFields[name].Index).Interface()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %#v, upstream had %#v", name, got, want)
		}
	}

	back, err := json.Marshal(kc)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(back))
	dec.DisallowUnknownFields()
	var roundTrip kubeletv1beta1.KubeletConfiguration
	if err := dec.Decode(&roundTrip); err != nil {
		t.Fatalf("upstream cannot decode our encoding: %v\n%s", err, back)
	}
	if !reflect.DeepEqual(roundTrip.FeatureGates, up.FeatureGates) || roundTrip.MaxPods != up.MaxPods {
		t.Errorf("round trip through upstream changed values: %+v", roundTrip)
	}
}

// TestTestdataIsValidUpstream keeps the "real node" fixtures honest: each KubeletConfiguration
// document must decode strictly into the upstream type.
func TestTestdataIsValidUpstream(t *testing.T) {
	for _, name := range []string{"kubeadm-node.yaml", "production-node.yaml"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			docs, err := splitDocuments(data)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, d := range docs {
				if !bytes.Contains(d.data, []byte(`"kind":"KubeletConfiguration"`)) {
					continue
				}
				found = true
				var up kubeletv1beta1.KubeletConfiguration
				if err := yaml.UnmarshalStrict(d.data, &up); err != nil {
					t.Errorf("upstream rejects document %d: %v", d.index, err)
				}
			}
			if !found {
				t.Fatal("no KubeletConfiguration document")
			}
		})
	}
}

func TestModelledKubeletFieldsListed(t *testing.T) {
	got := strings.Join(ModelledKubeletFields(), ",")
	for _, want := range []string{"featureGates", "staticPodPath", "syncFrequency", "fileCheckFrequency",
		"nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "nodeLeaseDurationSeconds", "maxPods",
		"address", "readOnlyPort", "shutdownGracePeriod", "shutdownGracePeriodCriticalPods", "evictionHard",
		"enableDebuggingHandlers", "systemReserved", "kubeReserved", "runtimeRequestTimeout",
		"port", "tlsCertFile", "tlsPrivateKeyFile", "authentication", "authorization",
		"crashLoopBackOff", "singleProcessOOMKill", "userNamespaces", "mergeDefaultEvictionSettings"} {
		if !strings.Contains(","+got+",", ","+want+",") {
			t.Errorf("%s is not modelled; modelled: %s", want, got)
		}
	}
	if strings.Contains(got, "tlsCipherSuites") || strings.Contains(got, "apiVersion") {
		t.Errorf("modelled list has unmodelled or meta fields: %s", got)
	}
	ours := jsonFields(reflect.TypeOf(KubeletConfiguration{}))
	for name := range checkedNotSimulated {
		if _, ok := ours[name]; !ok {
			t.Errorf("checkedNotSimulated names %s, which is no field", name)
		}
		if strings.Contains(","+got+",", ","+name+",") {
			t.Errorf("%s is checked, not simulated, yet listed as modelled", name)
		}
	}
}
