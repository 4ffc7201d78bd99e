package kubelet

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/cluster"
)

// TestObjectReadsWhereUpstreamReads: the first read of a ConfigMap or Secret is a quorum read
// (no resourceVersion); a refresh after the TTL asks for the API server's cached copy
// (resourceVersion "0"), as upstream's cache-based manager does; an object found missing is
// read again from etcd; the Services of a namespace come from the cache, as from the
// kubelet's informer. The API server is a loopback HTTP server that records what it is asked.
func TestObjectReadsWhereUpstreamReads(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+" rv="+r.URL.Query().Get("resourceVersion"))
		mu.Unlock()
		var obj any
		switch {
		case strings.HasSuffix(r.URL.Path, "/configmaps/cm"):
			obj = &v1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
		case strings.HasSuffix(r.URL.Path, "/secrets/s"):
			obj = &v1.Secret{TypeMeta: metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}
		case strings.HasSuffix(r.URL.Path, "/services"):
			obj = &v1.ServiceList{TypeMeta: metav1.TypeMeta{Kind: "ServiceList", APIVersion: "v1"}}
		default:
			st := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "missing").Status()
			st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(st)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(obj)
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&restclient.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	clk := testclock.NewFakeClock(time.Unix(1700000000, 0))
	o := newAPIObjects(client, cluster.Inline(), clk, cacheStrategy, time.Minute)
	ctx := context.Background()
	read := func() {
		t.Helper()
		if _, err := o.ConfigMap(ctx, "ns", "cm"); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Secret(ctx, "ns", "s"); err != nil {
			t.Fatal(err)
		}
		if _, err := o.ConfigMap(ctx, "ns", "missing"); !apierrors.IsNotFound(err) {
			t.Fatalf("missing ConfigMap: %v, want NotFound", err)
		}
	}
	read()
	clk.Step(10 * time.Second) // within the TTL: only the missing one is read again
	read()
	clk.Step(30 * time.Second)
	read()
	if _, err := o.Services(ctx, "ns", false); err != nil {
		t.Fatal(err)
	}

	const cm, s, missing, svc = "/api/v1/namespaces/ns/configmaps/cm", "/api/v1/namespaces/ns/secrets/s", "/api/v1/namespaces/ns/configmaps/missing", "/api/v1/namespaces/ns/services"
	want := []string{
		cm + " rv=", s + " rv=", missing + " rv=",
		missing + " rv=",
		cm + " rv=0", s + " rv=0", missing + " rv=",
		svc + " rv=0",
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reads:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPruneForgetsWhatNoPodRefersTo: housekeeping's prune drops the ConfigMaps and tokens of
// pods gone, and skips the work when the pods are the very objects of the last prune.
func TestPruneForgetsWhatNoPodRefersTo(t *testing.T) {
	podWith := func(uid, cm string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid)},
			Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: cm}}}}}}}
	}
	a, b := podWith("a", "cm-a"), podWith("b", "cm-b")
	o := newAPIObjects(nil, cluster.Inline(), testclock.NewFakeClock(time.Unix(0, 0)), cacheStrategy, 2*time.Minute)
	fill := func() {
		o.configMaps["ns/cm-a"] = cached[v1.ConfigMap]{obj: &v1.ConfigMap{}}
		o.configMaps["ns/cm-b"] = cached[v1.ConfigMap]{obj: &v1.ConfigMap{}}
		o.tokens["b"] = cachedToken{pod: "b"}
	}
	fill()
	o.prune([]*v1.Pod{a, b})
	if len(o.configMaps) != 2 || len(o.tokens) != 1 {
		t.Fatalf("both pods there: %d ConfigMaps, %d tokens left, want 2 and 1", len(o.configMaps), len(o.tokens))
	}
	o.prune([]*v1.Pod{a})
	if _, ok := o.configMaps["ns/cm-b"]; ok || len(o.configMaps) != 1 || len(o.tokens) != 0 {
		t.Fatalf("pod b gone: ConfigMaps %v, tokens %v; want cm-a only", o.configMaps, o.tokens)
	}
	// The same pod objects: nothing can have changed, nothing is pruned.
	fill()
	o.prune([]*v1.Pod{a})
	if len(o.configMaps) != 2 {
		t.Errorf("a prune of the same pods did the work again: %d ConfigMaps left", len(o.configMaps))
	}
	// A new object of pod a (an update) is looked at again.
	o.prune([]*v1.Pod{podWith("a", "cm-a")})
	if len(o.configMaps) != 1 || len(o.tokens) != 0 {
		t.Errorf("after pod a changed: %d ConfigMaps, %d tokens, want 1 and 0", len(o.configMaps), len(o.tokens))
	}
}
