package fake

import (
	"context"
	"fmt"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/minikubelet/minikubelet/internal/simtest"
	"github.com/minikubelet/minikubelet/pkg/cri"
	"github.com/minikubelet/minikubelet/pkg/runner"
	"github.com/minikubelet/minikubelet/pkg/runtime/behavior"
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

// testImage is an image nobody catalogued: its entrypoint is not simulated, so its
// containers do what these tests of the runtime's mechanics expect of an unscripted
// container (an app runs until stopped, an init container completes after
// InitContainerDuration) unless a behaviour annotation scripts them.
const testImage = "ghcr.io/minikubelet/test-app:1.0"

// createContainer pulls the image and creates (not starts) a container.
func createContainer(t testing.TB, r *Runtime, sbID string, sbCfg *cri.PodSandboxConfig, name, role string) string {
	t.Helper()
	ctx := context.Background()
	const image = testImage
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

// loop is the runtime's entry of a loop table.
func loop(r *Runtime) runner.Loop {
	return runner.Loop{Name: "runtime", Due: r.Due, Step: r.Step, Wake: r.Wake()}
}

// run runs the runtime's loop for d of virtual time: transitions and pending operations
// complete at their instants.
func run(t testing.TB, r *Runtime, clk *testclock.FakeClock, d time.Duration) {
	t.Helper()
	if err := runner.NewSim(clk, []runner.Loop{loop(r)}).RunUntil(context.Background(), clk.Now().Add(d), nil); err != nil {
		t.Fatal(err)
	}
}

// start runs fn as a task until it first waits for a pending operation (or returns); the
// test then moves the clock with run and resumes it with Poll.
func start(fn func(ctx context.Context) error) *simtest.Call {
	return simtest.Go(context.Background(), fn)
}

// await runs fn as a task beside the runtime's loop until it returns, moving the clock as
// far as needed (at most max), and returns its error.
func await(t testing.TB, r *Runtime, clk *testclock.FakeClock, max time.Duration, fn func(ctx context.Context) error) error {
	t.Helper()
	return simtest.Await(t, clk, []runner.Loop{loop(r)}, max, fn)
}

func ns(d time.Duration) int64 { return epoch.Add(d).UnixNano() }

func uidN(i int) string { return fmt.Sprintf("uid-%05d", i) }
