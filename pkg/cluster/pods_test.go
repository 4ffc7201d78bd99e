package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minikubelet/minikubelet/internal/eventually"
)

func apiPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "nginx"}}},
		Status:     v1.PodStatus{Phase: v1.PodPending},
	}
}

// TestWatchPods: the source hands over the whole set of the node's pods after each change.
func TestWatchPods(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}}
	a := apiPod("a")
	a.ManagedFields = managed
	client := fake.NewSimpleClientset(a)
	var watching atomic.Bool
	client.PrependWatchReactor("pods", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		watching.Store(err == nil)
		return true, w, err
	})
	var mu sync.Mutex
	var last []string
	var prepared []string // each pod prepare was given, and whether with the version before
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		prepare := func(pod, old *v1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			what := pod.Name
			if old != nil {
				what += " after " + old.Annotations["prepared"]
			}
			prepared = append(prepared, what)
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations["prepared"] = pod.Name + "@" + pod.ResourceVersion
		}
		WatchPods(ctx, client, "n1", prepare, func(pods []*v1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			last = nil
			for _, p := range pods {
				name := p.Name
				if p.ManagedFields != nil {
					name += "(with managed fields)"
				}
				if p.Annotations["prepared"] == "" {
					name += "(not prepared)"
				}
				last = append(last, name)
			}
		})
	}()
	defer func() { cancel(); <-done }()
	snapshot := func() string { mu.Lock(); defer mu.Unlock(); return fmt.Sprint(last) }
	eventually.True(t, "the listed pod", func() bool { return snapshot() == "[a]" })
	// The fake clientset does not replay what happened between the list and the watch (a
	// real apiserver does, from the list's resourceVersion): create once the watch is there.
	eventually.True(t, "the watch", func() bool { return watching.Load() })
	// Both the listed pod and the watched one come without their managed fields, which
	// the kubelet never reads (podStore).
	b := apiPod("b")
	b.ManagedFields = managed
	if _, err := client.CoreV1().Pods("default").Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the watched addition", func() bool { s := snapshot(); return s == "[a b]" || s == "[b a]" })
	if err := client.CoreV1().Pods("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the watched deletion", func() bool { return snapshot() == "[b]" })
	// A changed pod is prepared again, given the version the watch held.
	b.Status.Phase = v1.PodRunning
	b.ResourceVersion = "7"
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the watched update", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(prepared) == 3
	})
	mu.Lock()
	got := fmt.Sprint(prepared)
	mu.Unlock()
	if want := "[a b b after b@]"; got != want {
		t.Errorf("prepare was given %s, want %s", got, want)
	}
}

// TestPodStatusSync: a changed status is patched to pods/status once, and Sync says the API
// server has it only once it does (a failed patch is for the next sync to retry); a pod
// being deleted whose containers are gone is deleted with grace 0 and its UID as
// precondition.
func TestPodStatusSync(t *testing.T) {
	pod := apiPod("web")
	client := fake.NewSimpleClientset(pod)
	s := NewPodStatusSync(client, Inline())
	ctx := context.Background()
	running := v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.88.0.5", Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	failing := true
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failing {
			return true, nil, apierrors.NewServiceUnavailable("etcd is busy")
		}
		return false, nil, nil
	})
	if s.Sync(ctx, pod, running, false) {
		t.Error("Sync with a failed patch says the API server has the status")
	}
	client.ClearActions()
	failing = false
	if !s.Sync(ctx, pod, running, false) {
		t.Error("Sync with a patch that succeeded says the API server lacks the status")
	}
	if !s.Sync(ctx, pod, running, false) { // unchanged: no second patch
		t.Error("an unchanged status is not settled")
	}
	patches := 0
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && p.GetSubresource() == "status" {
			patches++
		}
	}
	if patches != 1 {
		t.Fatalf("%d status patches, want 1", patches)
	}
	got, _ := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if got.Status.Phase != v1.PodRunning || got.Status.PodIP != "10.88.0.5" {
		t.Fatalf("API status %+v, want the patched one", got.Status)
	}
	deleting := pod.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	if !s.Sync(ctx, deleting, v1.PodStatus{Phase: v1.PodSucceeded}, true) {
		t.Error("Sync that deleted the pod says something is left")
	}
	var del k8stesting.DeleteActionImpl
	for _, a := range client.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok {
			del = d
		}
	}
	if o := del.DeleteOptions; o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 || o.Preconditions == nil || *o.Preconditions.UID != pod.UID {
		t.Fatalf("delete options %+v, want grace 0 and the pod's UID as precondition", del.DeleteOptions)
	}
	if _, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod still in the API after the final delete: %v", err)
	}
}
