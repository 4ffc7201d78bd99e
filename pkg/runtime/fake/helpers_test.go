package fake

import (
	"context"
	"fmt"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
	"github.com/minikubelet/minikubelet/pkg/runtime/cri"
)

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func newRuntime(t testing.TB, cfg Config) (*Runtime, *testclock.FakeClock) {
	t.Helper()
	clk := testclock.NewFakeClock(epoch)
	if cfg.Clock == nil {
		cfg.Clock = clk
	} else {
		clk = cfg.Clock.(*testclock.FakeClock)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New() error: %v", err)
	}
	return r, clk
}

func sandboxConfig(uid string, annotations map[string]string) *cri.PodSandboxConfig {
	return &cri.PodSandboxConfig{
		Metadata:    cri.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "default", UID: uid},
		Annotations: annotations,
	}
}

// runPod runs a sandbox for pod uid with the given behaviour annotations.
func runPod(t testing.TB, r *Runtime, uid string, annotations map[string]string) (string, *cri.PodSandboxConfig) {
	t.Helper()
	cfg := sandboxConfig(uid, annotations)
	id, err := r.RunPodSandbox(context.Background(), cfg)
	if err != nil {
		t.Fatalf("RunPodSandbox(%s) error: %v", uid, err)
	}
	return id, cfg
}

func containerConfig(name, role, image string) *cri.ContainerConfig {
	cc := &cri.ContainerConfig{Metadata: cri.ContainerMetadata{Name: name}, Image: cri.ImageSpec{Image: image}}
	if role != "" {
		cc.Labels = map[string]string{ContainerTypeAnnotation: role}
	}
	return cc
}

// createContainer pulls the image and creates (not starts) a container.
func createContainer(t testing.TB, r *Runtime, sbID string, sbCfg *cri.PodSandboxConfig, name, role string) string {
	t.Helper()
	ctx := context.Background()
	const image = "busybox:1.36"
	if _, err := r.PullImage(ctx, cri.ImageSpec{Image: image}, nil); err != nil {
		t.Fatalf("PullImage error: %v", err)
	}
	id, err := r.CreateContainer(ctx, sbID, containerConfig(name, role, image), sbCfg)
	if err != nil {
		t.Fatalf("CreateContainer(%s) error: %v", name, err)
	}
	return id
}

func startContainer(t testing.TB, r *Runtime, sbID string, sbCfg *cri.PodSandboxConfig, name, role string) string {
	t.Helper()
	id := createContainer(t, r, sbID, sbCfg, name, role)
	if err := r.StartContainer(context.Background(), id); err != nil {
		t.Fatalf("StartContainer(%s) error: %v", name, err)
	}
	return id
}

func status(t testing.TB, r *Runtime, id string) *cri.ContainerStatus {
	t.Helper()
	st, err := r.ContainerStatus(context.Background(), id)
	if err != nil {
		t.Fatalf("ContainerStatus error: %v", err)
	}
	return st
}

func annotate(container, value string) map[string]string {
	return map[string]string{behavior.AnnotationKey(container): value}
}

// waitForWaiters polls until something blocks on the fake clock (a goroutine parked in a
// timer), so that a Step reaches it.
func waitForWaiters(t testing.TB, clk *testclock.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("nothing started waiting on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

// result runs fn in a goroutine and returns a channel with its error.
func async(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

func recv(t testing.TB, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("call did not return")
		return nil
	}
}

func notDone(t testing.TB, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("call returned early with %v", err)
	case <-time.After(20 * time.Millisecond):
	}
}

func ns(d time.Duration) int64 { return epoch.Add(d).UnixNano() }

func uidN(i int) string { return fmt.Sprintf("uid-%05d", i) }
