package kubelet

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/eventually"
	"github.com/minikubelet/minikubelet/pkg/cluster"
)

// TestWatchStrategy: with the Watch strategy, a pod's arrival starts a watch of each object
// it refers to; reads are served by the watch (no GET reaches the API server) and follow
// changes; a missing object is NotFound; an immutable one's watch stops for good; one not
// read for five sync periods stops and starts again at the next read; one no pod refers to
// any more is forgotten.
func TestWatchStrategy(t *testing.T) {
	client := fake.NewSimpleClientset(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"k": "1"}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Immutable: ptr.To(true)},
	)
	caller := cluster.NewCaller(context.Background())
	t.Cleanup(caller.Stop)
	clk := testclock.NewFakeClock(time.Unix(1700000000, 0))
	o := newAPIObjects(client, caller, clk, watchStrategy, time.Minute)
	o.watchObjects()
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: types.UID("p")}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}},
		Containers: []v1.Container{{Name: "c", EnvFrom: []v1.EnvFromSource{
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "missing"}}},
		}}},
	}}
	o.fetchForPods(ctx, []*v1.Pod{pod})
	if n := len(o.watches); n != 3 {
		t.Fatalf("%d watches after the pod arrived, want 3", n)
	}

	cm, err := o.ConfigMap(ctx, "ns", "cm")
	if err != nil || cm.Data["k"] != "1" {
		t.Fatalf("ConfigMap = %v, %v", cm, err)
	}
	if _, err := o.ConfigMap(ctx, "ns", "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("a missing ConfigMap: %v, want NotFound", err)
	}
	if _, err := o.Secret(ctx, "ns", "s"); err != nil {
		t.Fatal(err)
	}
	running := func(resource, name string) bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		w := o.watches[watchKey{resource, "ns", name}]
		return w != nil && w.cancel != nil
	}
	if running("secrets", "s") {
		t.Error("the immutable Secret's watch still runs")
	}

	updated := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"k": "2"}}
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 10*time.Second, "the watch sees the change", func() (bool, string) {
		cm, err := o.ConfigMap(ctx, "ns", "cm")
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["k"] == "2", fmt.Sprint(cm.Data)
	})
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("a GET reached the API server: %v", a)
		}
	}

	// Five sync periods without a read of "missing" (only the volume's "cm" is read):
	// its watch stops, and a read starts it again.
	clk.Step(4 * time.Minute)
	if _, err := o.ConfigMap(ctx, "ns", "cm"); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Minute)
	o.prune([]*v1.Pod{pod})
	if running("configmaps", "missing") || !running("configmaps", "cm") {
		t.Errorf("after six idle minutes: missing's watch runs %v (want false), cm's %v (want true)", running("configmaps", "missing"), running("configmaps", "cm"))
	}
	if _, err := o.ConfigMap(ctx, "ns", "missing"); !apierrors.IsNotFound(err) || !running("configmaps", "missing") {
		t.Errorf("read again: %v, running %v; want NotFound from a running watch", err, running("configmaps", "missing"))
	}

	o.prune(nil)
	if n := len(o.watches); n != 0 {
		t.Errorf("%d watches after the pod left, want 0", n)
	}
}
