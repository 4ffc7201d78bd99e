package kubelet

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/eventually"
	"github.com/minikubelet/minikubelet/pkg/admission"
	"github.com/minikubelet/minikubelet/pkg/cluster"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/features"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// unitKubelet is a Kubelet with just what pod files, volumes and environments need, over a
// fake API server holding objs (nil objs and standalone: no API server).
type unitKubelet struct {
	*Kubelet
	clk    *clocktesting.FakeClock
	client *fake.Clientset
}

func newUnitKubelet(t *testing.T, standalone bool, objs ...runtime.Object) *unitKubelet {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	nodeFS := vfs.New(clk.Now)
	if err := seedNodeFiles(nodeFS, testNode, "10.0.0.1"); err != nil {
		t.Fatal(err)
	}
	k := &Kubelet{
		clock:    clk,
		nodeName: testNode,
		hostIP:   "10.0.0.1",
		nodeFS:   nodeFS,
		gate:     features.NewFeatureGate(),
		events:   events.NewStore(clk, testNode, 0),
		dns:      &dnsConfigurer{clusterDNS: []string{"10.96.0.10"}, clusterDomain: "cluster.local", resolvConf: nodeResolvPath, nodeName: testNode, nodeIP: "10.0.0.1"},
		nodeInfo: admission.NodeInfo{Allocatable: v1.ResourceList{
			v1.ResourceCPU:              resource.MustParse("4"),
			v1.ResourceMemory:           resource.MustParse("8Gi"),
			v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		}},
	}
	u := &unitKubelet{Kubelet: k, clk: clk}
	if !standalone {
		u.client = fake.NewSimpleClientset(objs...)
		k.kubeClient = u.client
	}
	k.objects = newAPIObjects(k.kubeClient, cluster.Inline(), clk, cacheStrategy, time.Minute)
	return u
}

// eventMessages lists the messages of the recorded events with the reason.
func (u *unitKubelet) eventMessages(reason string) []string {
	var out []string
	for _, e := range u.events.List() {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

func configMap(ns, name string, data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func secret(ns, name string, data map[string]string) *v1.Secret {
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func cmKeyRef(name, key string, optional bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
}

func secretKeyRef(name, key string, optional bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
}

func fieldRef(path string) *v1.EnvVarSource {
	return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}
}

// TestMakeEnvironmentVariables: a container's environment as the kubelet builds it:
// envFrom (sorted keys, prefix), env in order with $(VAR) expansion, the downward API,
// ConfigMap and Secret keys (PATH, HOSTNAME and HOME are the runtime's); and upstream's
// errors for what is missing and not optional.
func TestMakeEnvironmentVariables(t *testing.T) {
	objs := []runtime.Object{
		configMap("shop", "settings", map[string]string{"mode": "blue", "level": "3", "1st": "x"}),
		secret("shop", "creds", map[string]string{"user": "admin", "password": "s3cr3t", "2nd": "y"}),
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "u-1", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"team": "a"}},
		Spec:       v1.PodSpec{NodeName: testNode, Hostname: "web", ServiceAccountName: "builder"},
	}
	base := func(middle ...cri.KeyValue) []cri.KeyValue {
		return middle
	}
	limits := v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	requests := v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}
	tests := []struct {
		name       string
		standalone bool
		c          v1.Container
		want       []cri.KeyValue
		wantErr    string
	}{{
		name: "literal values and $(VAR) expansion against earlier variables",
		c: v1.Container{Env: []v1.EnvVar{
			{Name: "A", Value: "one"},
			{Name: "B", Value: "$(A)-two $$(A) $(MISSING)"},
			{Name: "A", Value: "again"}, // redefined: keeps its place
		}},
		want: base(cri.KeyValue{Key: "A", Value: "again"}, cri.KeyValue{Key: "B", Value: "one-two $(A) $(MISSING)"}),
	}, {
		name: "downward API fields",
		c: v1.Container{Env: []v1.EnvVar{
			{Name: "POD", ValueFrom: fieldRef("metadata.name")},
			{Name: "NS", ValueFrom: fieldRef("metadata.namespace")},
			{Name: "UID", ValueFrom: fieldRef("metadata.uid")},
			{Name: "NODE", ValueFrom: fieldRef("spec.nodeName")},
			{Name: "SA", ValueFrom: fieldRef("spec.serviceAccountName")},
			{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")},
			{Name: "HOST_IP", ValueFrom: fieldRef("status.hostIP")},
			{Name: "APP", ValueFrom: fieldRef("metadata.labels['app']")},
			{Name: "NONE", ValueFrom: fieldRef("metadata.labels['none']")},
			{Name: "TEAM", ValueFrom: fieldRef("metadata.annotations['team']")},
		}},
		want: base(
			cri.KeyValue{Key: "POD", Value: "web-0"}, cri.KeyValue{Key: "NS", Value: "shop"}, cri.KeyValue{Key: "UID", Value: "u-1"},
			cri.KeyValue{Key: "NODE", Value: testNode}, cri.KeyValue{Key: "SA", Value: "builder"},
			cri.KeyValue{Key: "POD_IP", Value: "10.88.0.7"}, cri.KeyValue{Key: "HOST_IP", Value: "10.0.0.1"},
			cri.KeyValue{Key: "APP", Value: "web"}, cri.KeyValue{Key: "NONE", Value: ""}, cri.KeyValue{Key: "TEAM", Value: "a"},
		),
	}, {
		name: "resource fields: divisor, rounding up, missing limits are the node's allocatable",
		c: v1.Container{Name: "app", Resources: v1.ResourceRequirements{Limits: limits, Requests: requests}, Env: []v1.EnvVar{
			{Name: "MEM_MI", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPU_REQ", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.cpu"}}},
			{Name: "CPU_REQ_M", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
			{Name: "CPU_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		}},
		want: base(cri.KeyValue{Key: "MEM_MI", Value: "64"}, cri.KeyValue{Key: "CPU_REQ", Value: "1"}, cri.KeyValue{Key: "CPU_REQ_M", Value: "250"}, cri.KeyValue{Key: "CPU_LIMIT", Value: "4"}),
	}, {
		name: "ConfigMap and Secret keys; optional missing ones are left out",
		c: v1.Container{Env: []v1.EnvVar{
			{Name: "MODE", ValueFrom: cmKeyRef("settings", "mode", false)},
			{Name: "USER", ValueFrom: secretKeyRef("creds", "user", false)},
			{Name: "NOKEY", ValueFrom: cmKeyRef("settings", "nope", true)},
			{Name: "NOMAP", ValueFrom: cmKeyRef("absent", "x", true)},
			{Name: "NOSECRET", ValueFrom: secretKeyRef("absent", "x", true)},
		}},
		want: base(cri.KeyValue{Key: "MODE", Value: "blue"}, cri.KeyValue{Key: "USER", Value: "admin"}),
	}, {
		name: "envFrom: sorted keys with the prefix, names a shell would refuse too (v1.30), env overrides",
		c: v1.Container{
			EnvFrom: []v1.EnvFromSource{
				{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}},
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
			},
			Env: []v1.EnvVar{{Name: "CFG_mode", Value: "red"}},
		},
		want: base(
			cri.KeyValue{Key: "CFG_1st", Value: "x"}, cri.KeyValue{Key: "CFG_level", Value: "3"}, cri.KeyValue{Key: "CFG_mode", Value: "red"},
			cri.KeyValue{Key: "2nd", Value: "y"}, cri.KeyValue{Key: "password", Value: "s3cr3t"}, cri.KeyValue{Key: "user", Value: "admin"},
		),
	}, {
		name:    "missing ConfigMap",
		c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: cmKeyRef("absent", "x", false)}}},
		wantErr: `configmap "absent" not found`,
	}, {
		name:    "missing key of a ConfigMap",
		c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: cmKeyRef("settings", "nope", false)}}},
		wantErr: "couldn't find key nope in ConfigMap shop/settings",
	}, {
		name:    "missing key of a Secret",
		c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: secretKeyRef("creds", "nope", false)}}},
		wantErr: "couldn't find key nope in Secret shop/creds",
	}, {
		name:    "missing Secret in envFrom",
		c:       v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}}}}},
		wantErr: `secret "absent" not found`,
	}, {
		name:    "unsupported field",
		c:       v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: fieldRef("spec.schedulerName")}}},
		wantErr: "unsupported fieldPath: spec.schedulerName",
	}, {
		name:       "standalone: no API server to read a ConfigMap from",
		standalone: true,
		c:          v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: cmKeyRef("settings", "mode", false)}}},
		wantErr:    "couldn't get configMap shop/settings, no kubeClient defined",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUnitKubelet(t, tt.standalone, objs...)
			got, err := u.makeEnvironmentVariables(context.Background(), pod, &tt.c, []string{"10.88.0.7"})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("makeEnvironmentVariables: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFieldPathValue: the downward API's formats, labels and annotations as sorted
// key="value" lines with Go quoting, and its errors.
func TestFieldPathValue(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Namespace: "ns", UID: "u",
		Labels:      map[string]string{"b": "2", "a": "1"},
		Annotations: map[string]string{"note": "say \"hi\"\n"},
	}}
	tests := []struct {
		path, want, wantErr string
	}{
		{path: "metadata.labels", want: "a=\"1\"\nb=\"2\""},
		{path: "metadata.annotations", want: `note="say \"hi\"\n"`},
		{path: "metadata.labels['b']", want: "2"},
		{path: "metadata.name", want: "p"},
		{path: "metadata.uid", want: "u"},
		{path: "metadata.labels['bad key']", wantErr: "invalid key subscript in metadata.labels['bad key']"},
		{path: "metadata.name['x']", wantErr: `fieldPath "metadata.name['x']" does not support subscript`},
		{path: "spec.nodeName", wantErr: "unsupported fieldPath: spec.nodeName"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := fieldPathValue(pod, tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("fieldPathValue(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}

// TestServiceLinks: a container gets the links of its namespace's Services (unless
// enableServiceLinks is false) and of the kubernetes Service, after its own variables,
// which win; $(VAR) can refer to them. The same whether the Services are listed (simulate)
// or watched (the daemon's Service informer).
func TestServiceLinks(t *testing.T) {
	svc := func(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
	}
	objs := []runtime.Object{
		svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}),
		svc("shop", "fooservice", "10.96.5.5", v1.ServicePort{Port: 8765, Protocol: v1.ProtocolTCP}),
		svc("shop", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
		svc("other", "elsewhere", "10.96.9.9", v1.ServicePort{Port: 80}),
	}
	want := []cri.KeyValue{
		{Key: "FOOSERVICE_SERVICE_PORT", Value: "mine"},
		{Key: "URL", Value: "tcp://10.96.5.5:8765/x"},
		{Key: "FOOSERVICE_PORT", Value: "tcp://10.96.5.5:8765"},
		{Key: "FOOSERVICE_PORT_8765_TCP", Value: "tcp://10.96.5.5:8765"},
		{Key: "FOOSERVICE_PORT_8765_TCP_ADDR", Value: "10.96.5.5"},
		{Key: "FOOSERVICE_PORT_8765_TCP_PORT", Value: "8765"},
		{Key: "FOOSERVICE_PORT_8765_TCP_PROTO", Value: "tcp"},
		{Key: "FOOSERVICE_SERVICE_HOST", Value: "10.96.5.5"},
		{Key: "KUBERNETES_PORT", Value: "tcp://10.96.0.1:443"},
		{Key: "KUBERNETES_PORT_443_TCP", Value: "tcp://10.96.0.1:443"},
		{Key: "KUBERNETES_PORT_443_TCP_ADDR", Value: "10.96.0.1"},
		{Key: "KUBERNETES_PORT_443_TCP_PORT", Value: "443"},
		{Key: "KUBERNETES_PORT_443_TCP_PROTO", Value: "tcp"},
		{Key: "KUBERNETES_SERVICE_HOST", Value: "10.96.0.1"},
		{Key: "KUBERNETES_SERVICE_PORT", Value: "443"},
		{Key: "KUBERNETES_SERVICE_PORT_HTTPS", Value: "443"},
	}
	for _, watched := range []bool{false, true} {
		t.Run(map[bool]string{false: "listed", true: "watched"}[watched], func(t *testing.T) {
			k := newUnitKubelet(t, false, objs...)
			if watched {
				k.objects.watchObjects()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); k.objects.runServiceWatch(ctx) }()
				defer func() { cancel(); <-done }()
				waitServicesSynced(t, k.objects)
			}
			links := func(enable *bool) []cri.KeyValue {
				pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop"}, Spec: v1.PodSpec{EnableServiceLinks: enable}}
				c := &v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "FOOSERVICE_SERVICE_PORT", Value: "mine"}, {Name: "URL", Value: "$(FOOSERVICE_PORT)/x"}}}
				env, err := k.makeEnvironmentVariables(context.Background(), pod, c, nil)
				if err != nil {
					t.Fatal(err)
				}
				return env
			}
			if diff := cmp.Diff(want, links(nil)); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			off := false
			for _, kv := range links(&off) {
				if strings.HasPrefix(kv.Key, "FOOSERVICE_SERVICE_HOST") {
					t.Errorf("enableServiceLinks: false still links the namespace's services: %v", kv)
				}
			}
		})
	}
}

// waitServicesSynced waits for the Service watch's first list (a goroutine's, not a
// clock's: the fake client answers at once).
func waitServicesSynced(t *testing.T, o *apiObjects) {
	t.Helper()
	eventually.Within(t, 30*time.Second, "the Service watch lists", func() (bool, string) {
		return o.serviceWatch.hasSynced(), "not synced"
	})
}

// TestServiceLinksBeforeTheWatchListed: before the Service informer's first list, a
// container's environment is upstream's error (CreateContainerConfigError), but a static
// pod's, which goes on without links; the watch asks for the Services with a cluster IP
// of every namespace, and a Service created later is linked from the next container on.
func TestServiceLinksBeforeTheWatchListed(t *testing.T) {
	kubernetesSvc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Port: 443}}}}
	k := newUnitKubelet(t, false, kubernetesSvc)
	var mu sync.Mutex
	var lists []string
	k.client.PrependReactor("list", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.ListAction).GetListRestrictions()
		mu.Lock()
		defer mu.Unlock()
		lists = append(lists, a.GetNamespace()+" "+r.Fields.String())
		return false, nil, nil
	})
	k.objects.watchObjects()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop"}}
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "shop", Annotations: map[string]string{kubetypes.ConfigSourceAnnotationKey: kubetypes.FileSource}}}
	c := &v1.Container{Name: "c"}
	ctx := context.Background()
	if _, err := k.makeEnvironmentVariables(ctx, pod, c, nil); err == nil || err.Error() != "services have not yet been read at least once, cannot construct envvars" {
		t.Fatalf("before the first list: err %v, want upstream's", err)
	}
	if env, err := k.makeEnvironmentVariables(ctx, static, c, nil); err != nil || len(env) != 0 {
		t.Fatalf("static pod before the first list: %v, %v; want no links and no error", env, err)
	}

	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); k.objects.runServiceWatch(wctx) }()
	defer func() { cancel(); <-done }()
	waitServicesSynced(t, k.objects)
	mu.Lock()
	if want := []string{" spec.clusterIP!=None"}; !reflect.DeepEqual(lists, want) {
		t.Errorf("lists %q, want %q", lists, want)
	}
	mu.Unlock()
	if _, err := k.client.CoreV1().Services("shop").Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "late"},
		Spec: v1.ServiceSpec{ClusterIP: "10.96.7.7", Ports: []v1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 30*time.Second, "a Service created after the first list is linked", func() (bool, string) {
		env, err := k.makeEnvironmentVariables(ctx, pod, c, nil)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(env, cri.KeyValue{Key: "LATE_SERVICE_HOST", Value: "10.96.7.7"}), fmt.Sprint(env)
	})
}

// TestResourceFieldValuePodLevel: a container without a limit of its own is bounded by its
// pod's limit before the node's allocatable (upstream's defaultPodLimitsForDownwardAPI);
// its own limit wins, and a resource the pod does not limit is still the node's.
func TestResourceFieldValuePodLevel(t *testing.T) {
	q := resource.MustParse
	allocatable := v1.ResourceList{v1.ResourceCPU: q("4"), v1.ResourceMemory: q("8Gi"), v1.ResourceEphemeralStorage: q("90Gi")}
	tests := []struct {
		name     string
		pod      *v1.ResourceRequirements
		own      v1.ResourceList
		resource string
		divisor  string
		want     string
	}{
		{"no pod-level limits: the node's", nil, nil, "limits.cpu", "1m", "4000"},
		{"the pod's cpu", &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("1500m")}}, nil, "limits.cpu", "1m", "1500"},
		{"the pod's memory", &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: q("512Mi")}}, nil, "limits.memory", "1Mi", "512"},
		{"its own limit wins", &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("2")}}, v1.ResourceList{v1.ResourceCPU: q("500m")}, "limits.cpu", "1m", "500"},
		{"not limited by the pod: the node's", &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("2")}}, nil, "limits.memory", "1Gi", "8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := v1.Container{Name: "app", Resources: v1.ResourceRequirements{Limits: tt.own}}
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}, Resources: tt.pod}}
			got, err := resourceFieldValue(&v1.ResourceFieldSelector{Resource: tt.resource, Divisor: q(tt.divisor)}, pod, &c, allocatable)
			if err != nil || got != tt.want {
				t.Errorf("%s = %q, %v; want %q", tt.resource, got, err, tt.want)
			}
			if cpu := allocatable[v1.ResourceCPU]; cpu.String() != "4" {
				t.Errorf("the node's allocatable was changed: cpu %s", cpu.String())
			}
		})
	}
}
