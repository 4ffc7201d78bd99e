package kubelet

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/eventually"
	"github.com/minikubelet/minikubelet/pkg/cluster"
)

// TestRuntimeClass: a pod's RuntimeClass names the handler its sandbox runs with, as the
// kubelet's RuntimeClass manager looks it up. A RuntimeClass the API server does not have
// fails the sandbox with the lister's NotFound, and a handler the runtime has no
// configuration for fails it with containerd's error; both are FailedCreatePodSandBox
// events, and the pod stays Pending.
func TestRuntimeClass(t *testing.T) {
	rc := func(name, handler string) *nodev1.RuntimeClass {
		return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
	}
	tests := []struct {
		name      string
		className string // "": none
		wantEvent string // "": the pod runs
		handler   string // the sandbox's, when it runs
	}{
		{name: "none", handler: ""},
		{name: "runc", className: "runc-class", handler: "runc"},
		{name: "missing", className: "gone", wantEvent: `Failed to create pod sandbox: runtimeclass.node.k8s.io "gone" not found`},
		{name: "handler unknown to the runtime", className: "kata-class",
			wantEvent: `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "kata" is configured`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newClusterHarness(t, fake.NewSimpleClientset(rc("runc-class", "runc"), rc("kata-class", "kata")))
			extra := sleeper
			if tt.className != "" {
				extra += "  runtimeClassName: " + tt.className + "\n"
			}
			h.write("web.yaml", podManifest("web", "busybox", extra))
			name := "web-" + testNode
			if tt.wantEvent == "" {
				h.until(10, "web Running", func() bool { return h.phase(name) == v1.PodRunning }, h.describe)
				if sb := h.runtimeSandboxes(); len(sb) != 1 || sb[0].RuntimeHandler != tt.handler {
					t.Errorf("sandboxes %+v, want one with handler %q", sb, tt.handler)
				}
				return
			}
			h.until(10, "FailedCreatePodSandBox", func() bool { return findEvent(h, "FailedCreatePodSandBox", name) != nil }, h.describe)
			if e := findEvent(h, "FailedCreatePodSandBox", name); e.Message != tt.wantEvent {
				t.Errorf("event %q, want %q", e.Message, tt.wantEvent)
			}
			if p := h.phase(name); p != v1.PodPending {
				t.Errorf("phase %v, want Pending", p)
			}
			if n := len(h.runtimeSandboxes()); n != 0 {
				t.Errorf("%d sandboxes, want none", n)
			}
		})
	}
}

// TestRuntimeClassWatched: in the daemon the RuntimeClasses come from the RuntimeClass
// manager's informer: a lookup reads its store (no GET), NotFound before the class exists,
// and a class created later is found.
func TestRuntimeClassWatched(t *testing.T) {
	client := fake.NewSimpleClientset(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"})
	o := newAPIObjects(client, cluster.Inline(), testclock.NewFakeClock(epoch), watchStrategy, time.Minute)
	o.watchObjects()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); o.runRuntimeClassWatch(ctx) }()
	defer func() { cancel(); <-done }()
	eventually.Within(t, 30*time.Second, "the RuntimeClass watch lists", func() (bool, string) {
		return o.runtimeClassWatch.hasSynced(), "not synced"
	})
	lookup := func(name string) (string, error) { return o.RuntimeHandler(ctx, &name) }
	if h, err := lookup("gvisor"); err != nil || h != "runsc" {
		t.Errorf("gvisor: %q, %v; want runsc", h, err)
	}
	if h, err := o.RuntimeHandler(ctx, nil); err != nil || h != "" {
		t.Errorf("no RuntimeClass: %q, %v; want the default handler", h, err)
	}
	if _, err := lookup("kata"); !apierrors.IsNotFound(err) || err.Error() != `runtimeclass.node.k8s.io "kata" not found` {
		t.Errorf("kata before it exists: %v, want the lister's NotFound", err)
	}
	if _, err := client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, 30*time.Second, "kata is found", func() (bool, string) {
		h, err := lookup("kata")
		return err == nil && h == "kata", fmt.Sprint(h, err)
	})
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("a GET reached the API server: %v", a)
		}
	}
}
